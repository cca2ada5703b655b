// Rows and values: the data every stage passes around.
//
// A Value is null, bool, int (int64), float (double), str (UTF-8 std::string), list or row.
// Lists and nested rows are immutable and shared (copying a Value never deep-copies them), so rows
// can fan out to several outputs cheaply. A Row is an ordered list of named fields (Beam Rows are
// schema'd; ours are schema-less like JSON objects, narrow, and looked up by linear scan).
//
// Thread safety: a Value/Row is a plain value type; distinct objects may be used concurrently,
// and shared nested lists/rows are never mutated after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dfw {

class Value;
class Row;
using List = std::vector<Value>;

class Value {
 public:
  enum class Kind : uint8_t { kNull, kBool, kInt, kFloat, kString, kList, kRow };

  Value() = default;  // null
  static Value Bool(bool b) { return Value(Storage(std::in_place_index<1>, b)); }
  static Value Int(int64_t i) { return Value(Storage(std::in_place_index<2>, i)); }
  static Value Float(double d) { return Value(Storage(std::in_place_index<3>, d)); }
  static Value String(std::string s) { return Value(Storage(std::in_place_index<4>, std::move(s))); }
  static Value FromList(List items);
  static Value FromRow(Row row);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }  // bool is not a number here
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_row() const { return kind() == Kind::kRow; }

  // Accessors: precondition is the matching kind (checked by assert in debug builds).
  bool as_bool() const { return std::get<1>(v_); }
  int64_t as_int() const { return std::get<2>(v_); }
  double as_float() const { return std::get<3>(v_); }
  const std::string& as_string() const { return std::get<4>(v_); }
  const List& as_list() const { return *std::get<5>(v_); }
  const Row& as_row() const { return *std::get<6>(v_); }

  // In-place assignment of a scalar or string (hot paths: a reader filling a row it just appended,
  // with no temporary Value and, for strings, one copy of the bytes).
  void AssignBool(bool b) { v_.emplace<1>(b); }
  void AssignInt(int64_t i) { v_.emplace<2>(i); }
  void AssignFloat(double d) { v_.emplace<3>(d); }
  void AssignString(std::string_view s) { v_.emplace<4>(s); }

  // int or float as double; nullopt for anything else (bool included).
  std::optional<double> AsNumber() const {
    if (is_int()) return static_cast<double>(as_int());
    if (is_float()) return as_float();
    return std::nullopt;
  }

  // Python-like names: "None", "bool", "int", "float", "str", "list", "row".
  std::string_view TypeName() const;

  // Deep equality; int and float compare numerically (1 == 1.0), as in Python.
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }

  // Compact JSON (rows as objects, non-finite floats as null, strings escaped per RFC 8259).
  std::string ToJson() const;
  void AppendJson(std::string& out) const;

 private:
  using Storage = std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<const List>,
                               std::shared_ptr<const Row>>;
  explicit Value(Storage s) : v_(std::move(s)) {}
  Storage v_;
};

struct Field {
  std::string name;
  Value value;
};

class Row {
 public:
  Row() = default;
  explicit Row(std::vector<Field> fields) : fields_(std::move(fields)) {}

  const std::vector<Field>& fields() const { return fields_; }
  std::vector<Field>& mutable_fields() { return fields_; }
  std::size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }

  // nullptr when absent. Inline: every expression field read and every JSON key goes through it.
  const Value* Find(std::string_view name) const {
    for (const Field& f : fields_) {
      if (f.name.size() == name.size() && std::char_traits<char>::compare(f.name.data(), name.data(), name.size()) == 0) {
        return &f.value;
      }
    }
    return nullptr;
  }
  Value* FindMutable(std::string_view name) { return const_cast<Value*>(std::as_const(*this).Find(name)); }
  bool Has(std::string_view name) const { return Find(name) != nullptr; }

  // Replaces the field's value, or appends the field when absent.
  void Set(std::string_view name, Value v);
  // Appends without checking for an existing field (caller guarantees uniqueness; hot paths).
  void Append(std::string name, Value v) { fields_.push_back(Field{std::move(name), std::move(v)}); }
  // Appends a null field named `name` (unchecked, as Append) and returns its value to fill in place.
  Value& AppendNull(std::string_view name) { return fields_.emplace_back(Field{std::string(name), Value()}).value; }
  // Removes the field; false when absent.
  bool Erase(std::string_view name);
  void Reserve(std::size_t n) { fields_.reserve(n); }

  // Same field names with equal values, in any order.
  bool operator==(const Row& other) const;
  bool operator!=(const Row& other) const { return !(*this == other); }

  std::string ToJson() const;
  void AppendJson(std::string& out) const;

 private:
  std::vector<Field> fields_;
};

// Appends `s` as a JSON string literal (with quotes). Invalid UTF-8 bytes are written as U+FFFD.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace dfw
