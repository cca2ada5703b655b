// The values a template computes with: Jinja2's (Python's) none, bool, int, float, str, list, dict
// and callables (macros, range), plus Undefined, which Beam's StrictUndefined turns into an error
// wherever it is used (printed, compared, iterated, tested for truth) except by `is defined` and
// the `default` filter.
//
// Values are cheap to copy: lists, dicts and callables are shared (immutable once built).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "dfw/common/status.h"

namespace dfw::tmpl {

class Value;
using ValueList = std::vector<Value>;
// A dict keeps insertion order (as Python's does); keys are strings.
using ValueDict = std::vector<std::pair<std::string, Value>>;

// Something `name(...)` can call. Implementations are owned by the render that made them and are
// only called during it.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual Result<Value> Call(const ValueList& args, const ValueDict& kwargs, int line) = 0;
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

  Value() = default;  // none
  // `message` is the error its use raises, e.g. "'K' is undefined".
  static Value Undefined(std::string message);
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value List(ValueList items);
  static Value Dict(ValueDict items);
  static Value Function(std::shared_ptr<Callable> fn);
  // JSON object/array/scalar -> Value (objects become dicts in their JSON order).
  static Value FromJson(const nlohmann::json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return s_; }  // the string, or an undefined's message
  const ValueList& as_list() const { return *list_; }
  const ValueDict& as_dict() const { return *dict_; }
  Callable* as_callable() const { return fn_.get(); }

  // The dict entry `key`, or nullptr.
  const Value* Find(const std::string& key) const;

  // Python's truth value; an error for Undefined.
  Result<bool> Truthy() const;
  // Python's str(): True, None, 1.5, ['a', 1], {'k': 'v'}. An error for Undefined.
  Result<std::string> Str() const;
  // Python's repr() (strings quoted), used inside lists and dicts.
  std::string Repr() const;
  // Jinja2's `tojson`: json.dumps(sort_keys=True) with <, >, & and ' escaped as \u00XX.
  Result<std::string> ToJson() const;
  // Python's ==.
  bool Equals(const Value& other) const;
  // "int", "str", "list", ... as Python names them (for error messages).
  std::string TypeName() const;

 private:
  Kind kind_ = Kind::kNone;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<const ValueDict> dict_;
  std::shared_ptr<Callable> fn_;
};

// The error StrictUndefined raises when `v` is used (its message).
Status UndefinedError(const Value& v);

}  // namespace dfw::tmpl
