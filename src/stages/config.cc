// Typed config reads with located errors. yaml-cpp throws on conversions; every call is wrapped.
#include "dfw/stages/config.h"

#include <cctype>

#include <fmt/format.h>

#include "dfw/common/strings.h"

namespace dfw {
namespace {

const YAML::Node Lookup(const StageConfig& c, const std::string& key) {
  if (!c.config.IsMap()) return YAML::Node();
  return c.config[key];
}

std::string Describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "null";
}

}  // namespace

std::string NodeLocation(const StageConfig& c, const YAML::Node& node) {
  if (node.IsDefined() && !node.Mark().is_null()) {
    return fmt::format("{}:{}:{}", c.file, node.Mark().line + 1, node.Mark().column + 1);
  }
  return fmt::format("{}:{}:{}", c.file, c.line, c.column);
}

bool ConfigHas(const StageConfig& c, const std::string& key) {
  return c.config.IsMap() && Lookup(c, key).IsDefined();
}

Status ConfigKeyError(const StageConfig& c, const std::string& key, const std::string& message) {
  return InvalidArgument(fmt::format("{}: transform '{}' ({}): config '{}': {}", NodeLocation(c, Lookup(c, key)),
                                     c.name, c.type, key, message));
}

Result<std::string> ConfigString(const StageConfig& c, const std::string& key, std::optional<std::string> fallback) {
  YAML::Node n = Lookup(c, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    return c.ConfigError("config '" + key + "' is required");
  }
  if (!n.IsScalar()) return ConfigKeyError(c, key, "expected a string, got " + Describe(n));
  return n.Scalar();
}

Result<bool> ConfigBool(const StageConfig& c, const std::string& key, std::optional<bool> fallback) {
  YAML::Node n = Lookup(c, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    return c.ConfigError("config '" + key + "' is required");
  }
  Value v = YamlToValue(n);
  if (!v.is_bool()) return ConfigKeyError(c, key, "expected true or false, got " + Describe(n));
  return v.as_bool();
}

Result<int64_t> ConfigInt(const StageConfig& c, const std::string& key, std::optional<int64_t> fallback) {
  YAML::Node n = Lookup(c, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    return c.ConfigError("config '" + key + "' is required");
  }
  std::optional<int64_t> v = n.IsScalar() ? ParseInt64(n.Scalar()) : std::nullopt;
  if (!v) return ConfigKeyError(c, key, "expected an integer, got " + Describe(n));
  return *v;
}

Result<double> ConfigDouble(const StageConfig& c, const std::string& key, std::optional<double> fallback) {
  YAML::Node n = Lookup(c, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    return c.ConfigError("config '" + key + "' is required");
  }
  std::optional<double> v = n.IsScalar() ? ParseDouble(n.Scalar()) : std::nullopt;
  if (!v) return ConfigKeyError(c, key, "expected a number, got " + Describe(n));
  return *v;
}

Result<std::vector<std::string>> ConfigStringList(const StageConfig& c, const std::string& key) {
  YAML::Node n = Lookup(c, key);
  std::vector<std::string> out;
  if (!n.IsDefined() || n.IsNull()) return out;
  if (n.IsScalar()) {
    out.push_back(n.Scalar());
    return out;
  }
  if (!n.IsSequence()) return ConfigKeyError(c, key, "expected a string or a list of strings, got " + Describe(n));
  for (const YAML::Node& item : n) {
    if (!item.IsScalar()) return ConfigKeyError(c, key, "expected a list of strings, found " + Describe(item));
    out.push_back(item.Scalar());
  }
  return out;
}

Value YamlToValue(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return Value();
  if (node.IsSequence()) {
    List items;
    for (const YAML::Node& item : node) items.push_back(YamlToValue(item));
    return Value::FromList(std::move(items));
  }
  if (node.IsMap()) {
    Row row;
    for (const auto& kv : node) {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      row.Set(key, YamlToValue(kv.second));
    }
    return Value::FromRow(std::move(row));
  }
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return Value::String(s);  // quoted scalar: always a string
  if (s == "true" || s == "True" || s == "TRUE") return Value::Bool(true);
  if (s == "false" || s == "False" || s == "FALSE") return Value::Bool(false);
  if (s == "~" || s == "null" || s == "Null" || s == "NULL") return Value();
  if (auto i = ParseInt64(s)) return Value::Int(*i);
  if (auto d = ParseDouble(s)) return Value::Float(*d);
  return Value::String(s);
}

}  // namespace dfw

namespace dfw {

Status CheckLocalPath(const StageConfig& c, const std::string& key, const std::string& path) {
  const std::size_t colon = path.find("://");
  if (colon == std::string::npos || colon == 0) return Status::OK();
  const std::string scheme = path.substr(0, colon);
  for (char ch : scheme) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '+' && ch != '-' && ch != '.') return Status::OK();
  }
  return Status(StatusCode::kUnimplemented,
                c.Where() + ": " + key + " '" + path + "' is on a remote filesystem (" + scheme +
                    "://); Beam reads it through a filesystem plugin, dfworker reads local files only: copy it here "
                    "(e.g. gcloud storage cp) and give the local path");
}

}  // namespace dfw
