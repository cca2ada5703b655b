// ConfigNode: a transform's `config:` (and `windowing:`) as a plain value tree, made from the YAML
// once by the pipeline loader (stages/config_yaml.h). Stages read it; nothing in it throws.
//
// Why not the YAML node itself: yaml-cpp's nodes throw on conversions and on assigning a missing
// node, a non-const operator[] inserts the key it looks up, and `a = b` writes through into the
// node `a` refers to. A stage reading its config met each of these; this type has none of them.
// It is a value: copies are deep and independent.
//
// Lookups never fail: a missing key or index gives an undefined node (IsDefined() false), so
// `node["a"]["b"].IsScalar()` is safe at any depth. Every node made from YAML keeps its 1-based
// line and column (0 when it has none) for error messages (NodeLocation in stages/config.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dfw {

struct ConfigEntry;

class ConfigNode {
 public:
  enum class Kind { kUndefined, kNull, kScalar, kSequence, kMap };

  ConfigNode() = default;  // undefined
  static ConfigNode Null();
  // `quoted`: written in quotes in the YAML ('x' or "x"), so always a string (ConfigToValue).
  static ConfigNode Scalar(std::string text, bool quoted = false);
  static ConfigNode Sequence();
  static ConfigNode Map();

  Kind kind() const { return kind_; }
  bool IsDefined() const { return kind_ != Kind::kUndefined; }
  bool IsNull() const { return kind_ == Kind::kNull; }
  bool IsScalar() const { return kind_ == Kind::kScalar; }
  bool IsSequence() const { return kind_ == Kind::kSequence; }
  bool IsMap() const { return kind_ == Kind::kMap; }

  const std::string& Scalar() const { return text_; }  // "" unless IsScalar()
  bool quoted() const { return quoted_; }

  // Items of a sequence or entries of a map; 0 for any other kind.
  std::size_t size() const;
  const std::vector<ConfigNode>& items() const { return items_; }      // a sequence's items, else empty
  const std::vector<ConfigEntry>& entries() const { return entries_; }  // a map's entries in file order, else empty

  // The map's value for `key` (the first, should a key repeat), or an undefined node.
  const ConfigNode& operator[](std::string_view key) const;
  // The sequence's item `i`, or an undefined node.
  const ConfigNode& operator[](std::size_t i) const;

  // Building (the loader, and stages that derive a config from another): Set replaces the value
  // of `key` or appends it, making an undefined or null node a map; AddEntry appends an entry as
  // given (a key may repeat, as it may in the YAML); Append adds to a sequence, making an undefined
  // or null node one. On a node of another kind they do nothing and return false.
  bool Set(std::string key, ConfigNode value);
  bool AddEntry(ConfigNode key, ConfigNode value);
  bool Append(ConfigNode item);

  int line() const { return line_; }      // 1-based, 0 = unknown
  int column() const { return column_; }  // 1-based, 0 = unknown
  ConfigNode& SetMark(int line, int column) {
    line_ = line;
    column_ = column;
    return *this;
  }

 private:
  Kind kind_ = Kind::kUndefined;
  std::string text_;
  bool quoted_ = false;
  std::vector<ConfigNode> items_;
  std::vector<ConfigEntry> entries_;
  int line_ = 0;
  int column_ = 0;
};

struct ConfigEntry {
  ConfigNode key;  // a scalar (its Scalar() is the key), with the key's own position
  ConfigNode value;
};

}  // namespace dfw
