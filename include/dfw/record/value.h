// Rows and values: the data every stage passes around.
//
// A Value is null, bool, int (int64), float (double), Timestamp (int64 microseconds since the epoch,
// Beam's apache_beam.utils.timestamp.Timestamp), str (UTF-8 std::string), bytes (any octets, Python's
// bytes: TFRecord records, Avro/Parquet binary, a callable's `.encode()`), list or row.
// Lists and nested rows are immutable and shared (copying a Value never deep-copies them), so rows
// can fan out to several outputs cheaply. A Row is an ordered list of named fields (Beam Rows are
// schema'd; ours are schema-less like JSON objects, narrow, and looked up by linear scan).
//
// Thread safety: a Value/Row is a plain value type; distinct objects may be used concurrently,
// and shared nested lists/rows are never mutated after construction.
#pragma once

#include <cassert>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dfw {

class Value;
class Row;
using List = std::vector<Value>;

class Value {
 public:
  // Scalars first: heavy() is every kind from kString on.
  enum class Kind : uint8_t { kNull, kBool, kInt, kFloat, kTimestamp, kString, kBytes, kList, kRow };

  Value() noexcept : i_(0) {}  // null
  static Value Bool(bool b) {
    Value v;
    v.AssignBool(b);
    return v;
  }
  static Value Int(int64_t i) {
    Value v;
    v.AssignInt(i);
    return v;
  }
  static Value Float(double d) {
    Value v;
    v.AssignFloat(d);
    return v;
  }
  static Value String(std::string s) {
    Value v;
    new (&v.s_) std::string(std::move(s));
    v.kind_ = Kind::kString;
    return v;
  }
  static Value Bytes(std::string b) {
    Value v;
    new (&v.s_) std::string(std::move(b));
    v.kind_ = Kind::kBytes;
    return v;
  }
  // A Beam Timestamp of `micros` microseconds since the epoch.
  static Value Timestamp(int64_t micros) {
    Value v;
    v.i_ = micros;
    v.kind_ = Kind::kTimestamp;
    return v;
  }
  static Value FromList(List items);
  static Value FromRow(Row row);

  ~Value() {
    if (heavy()) DestroyHeavy();
  }
  Value(const Value& o) : kind_(o.kind_) { ConstructFrom(o); }
  Value(Value&& o) noexcept : kind_(o.kind_) { ConstructFrom(std::move(o)); }
  Value& operator=(const Value& o) {
    if (this == &o) return *this;
    if (!o.heavy()) {  // a scalar: copied in place, nothing to allocate or to throw
      Reset();
      kind_ = o.kind_;
      ConstructFrom(o);
      return *this;
    }
    Value copy(o);  // may throw; *this is untouched until it has succeeded
    *this = std::move(copy);
    return *this;
  }
  Value& operator=(Value&& o) noexcept {
    if (this != &o) {
      Reset();
      kind_ = o.kind_;
      ConstructFrom(std::move(o));
    }
    return *this;
  }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }  // bool is not a number here
  bool is_string() const { return kind() == Kind::kString; }
  bool is_bytes() const { return kind() == Kind::kBytes; }
  bool is_timestamp() const { return kind() == Kind::kTimestamp; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_row() const { return kind() == Kind::kRow; }

  // Accessors: precondition is the matching kind (checked by assert in debug builds).
  bool as_bool() const { return assert(is_bool()), b_; }
  int64_t as_int() const { return assert(is_int()), i_; }
  double as_float() const { return assert(is_float()), d_; }
  const std::string& as_string() const { return assert(is_string()), s_; }
  const std::string& as_bytes() const { return assert(is_bytes()), s_; }
  int64_t as_timestamp_us() const { return assert(is_timestamp()), i_; }
  const List& as_list() const { return assert(is_list()), *l_; }
  const Row& as_row() const { return assert(is_row()), *r_; }

  // In-place assignment of a scalar or string (hot paths: a reader filling a row it just appended,
  // with no temporary Value and, for strings, one copy of the bytes).
  void AssignBool(bool b) {
    Reset();
    b_ = b;
    kind_ = Kind::kBool;
  }
  void AssignInt(int64_t i) {
    Reset();
    i_ = i;
    kind_ = Kind::kInt;
  }
  void AssignFloat(double d) {
    Reset();
    d_ = d;
    kind_ = Kind::kFloat;
  }
  void AssignString(std::string_view s) {
    if (is_string()) {
      s_.assign(s);
      return;
    }
    Reset();
    new (&s_) std::string(s);
    kind_ = Kind::kString;
  }

  // int or float as double; nullopt for anything else (bool included).
  std::optional<double> AsNumber() const {
    if (is_int()) return static_cast<double>(as_int());
    if (is_float()) return as_float();
    return std::nullopt;
  }

  // Python-like names: "None", "bool", "int", "float", "Timestamp", "str", "bytes", "list", "row".
  std::string_view TypeName() const;

  // Deep equality; int and float compare numerically (1 == 1.0), as in Python; a Timestamp equals
  // another of the same microseconds, or a number of seconds (Beam's Timestamp.__eq__); bytes never
  // equal a str.
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }

  // Compact JSON (rows as objects, non-finite floats as null, strings escaped per RFC 8259; a
  // Timestamp as its seconds, bytes as base64 as protobuf's JSON mapping writes them: Beam's
  // json.dumps refuses both).
  std::string ToJson() const;
  void AppendJson(std::string& out) const;

 private:
  // A tagged union rather than std::variant: the scalar kinds are created, copied and destroyed
  // without a visit (a jump through a table per operation), which rows of many small values pay
  // for on every field; only strings, lists and rows take the slow path.
  bool heavy() const { return kind_ >= Kind::kString; }
  // Ends the string/list/row member, if any, and leaves null.
  void Reset() noexcept {
    if (heavy()) DestroyHeavy();
    kind_ = Kind::kNull;
  }
  void DestroyHeavy() noexcept {
    switch (kind_) {
      case Kind::kString:
      case Kind::kBytes: s_.~basic_string(); break;
      case Kind::kList: l_.~shared_ptr(); break;
      case Kind::kRow: r_.~shared_ptr(); break;
      default: break;
    }
  }
  // Constructs the member of kind_ (already set to o's kind) from o; no member is alive before.
  void ConstructFrom(const Value& o) {
    switch (kind_) {
      case Kind::kNull: i_ = 0; break;
      case Kind::kBool: b_ = o.b_; break;
      case Kind::kInt: i_ = o.i_; break;
      case Kind::kFloat: d_ = o.d_; break;
      case Kind::kTimestamp: i_ = o.i_; break;
      case Kind::kString:
      case Kind::kBytes: new (&s_) std::string(o.s_); break;
      case Kind::kList: new (&l_) std::shared_ptr<const List>(o.l_); break;
      case Kind::kRow: new (&r_) std::shared_ptr<const Row>(o.r_); break;
    }
  }
  // As above, moving: o keeps its kind with a moved-from member (as std::variant leaves it).
  void ConstructFrom(Value&& o) noexcept {
    switch (kind_) {
      case Kind::kNull: i_ = 0; break;
      case Kind::kBool: b_ = o.b_; break;
      case Kind::kInt: i_ = o.i_; break;
      case Kind::kFloat: d_ = o.d_; break;
      case Kind::kTimestamp: i_ = o.i_; break;
      case Kind::kString:
      case Kind::kBytes: new (&s_) std::string(std::move(o.s_)); break;
      case Kind::kList: new (&l_) std::shared_ptr<const List>(std::move(o.l_)); break;
      case Kind::kRow: new (&r_) std::shared_ptr<const Row>(std::move(o.r_)); break;
    }
  }

  Kind kind_ = Kind::kNull;
  union {
    bool b_;
    int64_t i_;
    double d_;
    std::string s_;
    std::shared_ptr<const List> l_;
    std::shared_ptr<const Row> r_;
  };
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
      if (SameFieldName(f.name, name)) return &f.value;
    }
    return nullptr;
  }
  // a == b for field names: sizes first, then short names (nearly all) byte by byte inline rather
  // than through a call to memcmp per candidate field.
  [[gnu::always_inline]] static bool SameFieldName(const std::string& a, std::string_view b) {
    if (a.size() != b.size()) return false;
    if (b.size() > 16) return std::char_traits<char>::compare(a.data(), b.data(), b.size()) == 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  Value* FindMutable(std::string_view name) { return const_cast<Value*>(std::as_const(*this).Find(name)); }
  bool Has(std::string_view name) const { return Find(name) != nullptr; }

  // Replaces the field's value, or appends the field when absent.
  void Set(std::string_view name, Value v);
  // Appends without checking for an existing field (caller guarantees uniqueness; hot paths).
  // Built in place, as AppendNull: no temporary Field moved into the vector.
  void Append(std::string name, Value v) {
    Field& f = fields_.emplace_back();
    f.name = std::move(name);
    f.value = std::move(v);
  }
  // Appends a null field named `name` (unchecked, as Append) and returns its value to fill in place.
  // (Built in place: no temporary Field to move in.)
  Value& AppendNull(std::string_view name) {
    Field& f = fields_.emplace_back();
    f.name.append(name.data(), name.size());
    return f.value;
  }
  // Removes the field; false when absent.
  bool Erase(std::string_view name);
  void Reserve(std::size_t n) { fields_.reserve(n); }
  // No fields and the default metadata, as a new Row; the field vector keeps its capacity.
  void Clear() {
    fields_.clear();
    timestamp_us_ = kNoTimestamp;
    window_start_us_ = INT64_MIN;
    window_end_us_ = INT64_MAX;
  }

  // Beam's element metadata in batch: the event timestamp (set by AssignTimestamps) and the window
  // (set by WindowInto, or by a windowed Combine on its output). Default: no timestamp, the global
  // window. Not part of equality or JSON; transforms that build a new row from one copy it
  // (CopyMetadataFrom).
  static constexpr int64_t kNoTimestamp = INT64_MIN;
  int64_t timestamp_us() const { return timestamp_us_; }
  void set_timestamp_us(int64_t t) { timestamp_us_ = t; }
  bool in_global_window() const { return window_start_us_ == INT64_MIN && window_end_us_ == INT64_MAX; }
  int64_t window_start_us() const { return window_start_us_; }
  int64_t window_end_us() const { return window_end_us_; }
  void set_window(int64_t start_us, int64_t end_us) {
    window_start_us_ = start_us;
    window_end_us_ = end_us;
  }
  void CopyMetadataFrom(const Row& other) {
    timestamp_us_ = other.timestamp_us_;
    window_start_us_ = other.window_start_us_;
    window_end_us_ = other.window_end_us_;
  }

  // Same field names with equal values, in any order.
  bool operator==(const Row& other) const;
  bool operator!=(const Row& other) const { return !(*this == other); }

  std::string ToJson() const;
  void AppendJson(std::string& out) const;

 private:
  std::vector<Field> fields_;
  int64_t timestamp_us_ = kNoTimestamp;
  int64_t window_start_us_ = INT64_MIN;  // [start, end): the global window by default
  int64_t window_end_us_ = INT64_MAX;
};

// Appends `s` as a JSON string literal (with quotes). Invalid UTF-8 bytes are written as U+FFFD.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace dfw
