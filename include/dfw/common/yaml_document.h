// The checks every YAML document dfworker reads gets after yaml-cpp has parsed it, whatever the file
// (pipelines, tenants files): yaml-cpp keeps every entry of a mapping and lookups return the first,
// so a repeated key would silently win or lose; aliases can make a small file a huge tree.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>

namespace dfw {

struct YamlLimits {
  // Nodes visited, aliases expanded. A 4 MiB file (the CLI's limit for pipeline and tenants files)
  // has at most about 2.1M nodes without aliases ("1," is one node in 2 bytes), so this refuses
  // only alias expansion.
  int64_t max_nodes = int64_t{1} << 22;
};

// What is wrong with a parsed document, and where (0-based, as YAML::Mark).
struct YamlProblem {
  int line = -1;  // -1: not one place (the node cap)
  int column = -1;
  std::string message;  // "duplicate key 'k' (first at line L, column C); ..." or the node cap
};

// The first repeated key of any mapping (iterative: no recursion on a deep document), or the node
// cap exceeded; nullopt when the document is fine. yaml-cpp exceptions are not thrown by the walk.
std::optional<YamlProblem> FindYamlProblem(const YAML::Node& root, const YamlLimits& limits = {});

}  // namespace dfw
