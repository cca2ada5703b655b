// Typed config reads with located errors, and the one conversion from yaml-cpp's nodes.
#include "dfw/stages/config.h"

#include <cctype>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "dfw/stages/config_yaml.h"

namespace dfw {
namespace {

std::string Describe(const ConfigNode& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "null";
}

}  // namespace

std::string NodeLocation(const StageConfig& c, const ConfigNode& node) {
  if (node.IsDefined() && node.line() > 0) return fmt::format("{}:{}:{}", c.file, node.line(), node.column());
  return fmt::format("{}:{}:{}", c.file, c.line, c.column);
}

bool ConfigHas(const StageConfig& c, const std::string& key) {
  return c.config[key].IsDefined();
}

Status ConfigKeyError(const StageConfig& c, const std::string& key, const std::string& message) {
  return InvalidArgument(fmt::format("{}: transform '{}' ({}): config '{}': {}", NodeLocation(c, c.config[key]),
                                     c.name, c.type, key, message));
}

Result<std::string> ConfigString(const StageConfig& c, const std::string& key, std::optional<std::string> fallback) {
  const ConfigNode& n = c.config[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    return c.ConfigError("config '" + key + "' is required");
  }
  if (!n.IsScalar()) return ConfigKeyError(c, key, "expected a string, got " + Describe(n));
  return n.Scalar();
}

Result<bool> ConfigBool(const StageConfig& c, const std::string& key, std::optional<bool> fallback) {
  const ConfigNode& n = c.config[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    return c.ConfigError("config '" + key + "' is required");
  }
  Value v = ConfigToValue(n);
  if (!v.is_bool()) return ConfigKeyError(c, key, "expected true or false, got " + Describe(n));
  return v.as_bool();
}

Result<int64_t> ConfigInt(const StageConfig& c, const std::string& key, std::optional<int64_t> fallback) {
  const ConfigNode& n = c.config[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    return c.ConfigError("config '" + key + "' is required");
  }
  std::optional<int64_t> v = n.IsScalar() ? ParseInt64(n.Scalar()) : std::nullopt;
  if (!v) return ConfigKeyError(c, key, "expected an integer, got " + Describe(n));
  return *v;
}

Result<double> ConfigDouble(const StageConfig& c, const std::string& key, std::optional<double> fallback) {
  const ConfigNode& n = c.config[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (fallback) return *fallback;
    return c.ConfigError("config '" + key + "' is required");
  }
  std::optional<double> v = n.IsScalar() ? ParseDouble(n.Scalar()) : std::nullopt;
  if (!v) return ConfigKeyError(c, key, "expected a number, got " + Describe(n));
  return *v;
}

Result<std::vector<std::string>> ConfigStringList(const StageConfig& c, const std::string& key) {
  const ConfigNode& n = c.config[key];
  std::vector<std::string> out;
  if (!n.IsDefined() || n.IsNull()) return out;
  if (n.IsScalar()) {
    out.push_back(n.Scalar());
    return out;
  }
  if (!n.IsSequence()) return ConfigKeyError(c, key, "expected a string or a list of strings, got " + Describe(n));
  for (const ConfigNode& item : n.items()) {
    if (!item.IsScalar()) return ConfigKeyError(c, key, "expected a list of strings, found " + Describe(item));
    out.push_back(item.Scalar());
  }
  return out;
}

Value ConfigToValue(const ConfigNode& node) {
  if (!node.IsDefined() || node.IsNull()) return Value();
  if (node.IsSequence()) {
    List items;
    for (const ConfigNode& item : node.items()) items.push_back(ConfigToValue(item));
    return Value::FromList(std::move(items));
  }
  if (node.IsMap()) {
    Row row;
    for (const ConfigEntry& e : node.entries()) {
      std::string key = e.key.IsScalar() ? e.key.Scalar() : std::string("?");
      row.Set(key, ConfigToValue(e.value));
    }
    return Value::FromRow(std::move(row));
  }
  const std::string& s = node.Scalar();
  if (node.quoted()) return Value::String(s);  // quoted scalar: always a string
  if (s == "true" || s == "True" || s == "TRUE") return Value::Bool(true);
  if (s == "false" || s == "False" || s == "FALSE") return Value::Bool(false);
  if (s == "~" || s == "null" || s == "Null" || s == "NULL") return Value();
  if (auto i = ParseInt64(s)) return Value::Int(*i);
  if (auto d = ParseDouble(s)) return Value::Float(*d);
  return Value::String(s);
}

std::optional<bool> ConfigScalarBool(const ConfigNode& node) {
  if (!node.IsScalar() || node.Scalar().empty()) return std::nullopt;
  const std::string& s = node.Scalar();
  bool all_lower = true, all_upper = true, capitalised = std::isupper(static_cast<unsigned char>(s[0])) != 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto ch = static_cast<unsigned char>(s[i]);
    all_lower = all_lower && std::islower(ch);
    all_upper = all_upper && std::isupper(ch);
    if (i > 0) capitalised = capitalised && std::islower(ch);
  }
  if (!all_lower && !all_upper && !capitalised) return std::nullopt;
  std::string lower;
  for (char ch : s) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  if (lower == "y" || lower == "yes" || lower == "true" || lower == "on") return true;
  if (lower == "n" || lower == "no" || lower == "false" || lower == "off") return false;
  return std::nullopt;
}

ConfigNode ConfigNodeFromYaml(const YAML::Node& node) {
  ConfigNode out;
  if (!node.IsDefined()) return out;  // also a const lookup's missing key, whose Type() would throw
  switch (node.Type()) {
    case YAML::NodeType::Undefined: return out;
    case YAML::NodeType::Null: out = ConfigNode::Null(); break;
    case YAML::NodeType::Scalar: out = ConfigNode::Scalar(node.Scalar(), node.Tag() == "!"); break;
    case YAML::NodeType::Sequence:
      out = ConfigNode::Sequence();
      for (const YAML::Node& item : node) out.Append(ConfigNodeFromYaml(item));
      break;
    case YAML::NodeType::Map:
      out = ConfigNode::Map();
      for (const auto& kv : node) out.AddEntry(ConfigNodeFromYaml(kv.first), ConfigNodeFromYaml(kv.second));
      break;
  }
  if (!node.Mark().is_null()) out.SetMark(node.Mark().line + 1, node.Mark().column + 1);
  return out;
}

}  // namespace dfw

namespace dfw {

std::string ResolveAgainst(const std::string& base_dir, const std::string& path) {
  if (base_dir.empty() || path.empty() || path.front() == '/') return path;
  return base_dir + "/" + path;
}

std::string ResolveConfigPath(const StageConfig& c, const std::string& path) { return ResolveAgainst(c.base_dir, path); }

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
