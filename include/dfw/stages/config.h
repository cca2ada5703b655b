// Typed reads of a transform's `config:` mapping. Every error names the file:line:column of the key,
// the transform, the value and what is allowed. Keys were already checked against the registry's
// allowed list by the loader; these only check values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"
#include "dfw/stages/stage.h"

namespace dfw {

// True when the config has `key`.
bool ConfigHas(const StageConfig& c, const std::string& key);

// kInvalidArgument "<file>:<line>:<col>: transform 'N' (Type): config 'key': message".
Status ConfigKeyError(const StageConfig& c, const std::string& key, const std::string& message);

// `fallback` is used when the key is absent; without a fallback an absent key is an error.
Result<std::string> ConfigString(const StageConfig& c, const std::string& key,
                                 std::optional<std::string> fallback = std::nullopt);
Result<bool> ConfigBool(const StageConfig& c, const std::string& key, std::optional<bool> fallback = std::nullopt);
Result<int64_t> ConfigInt(const StageConfig& c, const std::string& key, std::optional<int64_t> fallback = std::nullopt);
Result<double> ConfigDouble(const StageConfig& c, const std::string& key, std::optional<double> fallback = std::nullopt);
// A string or a list of strings (Beam accepts both for e.g. Explode.fields); absent = empty list.
Result<std::vector<std::string>> ConfigStringList(const StageConfig& c, const std::string& key);

// `path` (config key `key`) must be a local path: a URL such as gs://bucket/x (Beam reads it
// through a filesystem plugin) is kUnimplemented naming the scheme and what to do instead.
Status CheckLocalPath(const StageConfig& c, const std::string& key, const std::string& path);

// A path from the config as this process opens it: `path` itself when it is absolute or empty or
// the stage has no base_dir, else base_dir/path. Messages keep naming the path as written where
// they can; with no base_dir the two are the same.
std::string ResolveConfigPath(const StageConfig& c, const std::string& path);
// The rule itself: `path` against `base_dir` ("" = as written; absolute and empty paths as written).
std::string ResolveAgainst(const std::string& base_dir, const std::string& path);

// A config value as a row Value: plain scalars become null/bool/int/float/str by their look
// (YAML 1.2 core schema), quoted scalars stay strings, sequences lists, mappings rows.
Value ConfigToValue(const ConfigNode& node);

// A plain scalar read as a YAML boolean the way yaml-cpp reads one (true/yes/on/y and false/no/off/n,
// lower case, Capitalised or UPPER CASE); nullopt for anything else.
std::optional<bool> ConfigScalarBool(const ConfigNode& node);

// "file:line:col" of a node (1-based), or the transform's location when the node has no position.
std::string NodeLocation(const StageConfig& c, const ConfigNode& node);

}  // namespace dfw
