#include "combine_fns.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "dfw/stages/config.h"
#include "stages/expression_config.h"

namespace dfw::stages_internal {
namespace {

constexpr const char* kTopCombineFn = "apache_beam.transforms.combiners.TopCombineFn";

struct FnName {
  const char* name;
  CombineFnKind kind;
};
constexpr FnName kFns[] = {{"sum", CombineFnKind::kSum},     {"count", CombineFnKind::kCount},
                           {"mean", CombineFnKind::kMean},   {"min", CombineFnKind::kMin},
                           {"max", CombineFnKind::kMax},     {"all", CombineFnKind::kAll},
                           {"any", CombineFnKind::kAny},     {"group", CombineFnKind::kGroup},
                           {"concat", CombineFnKind::kConcat}, {"top_largest", CombineFnKind::kTopLargest},
                           {"top_smallest", CombineFnKind::kTopSmallest}};

std::string KnownFns() {
  std::string s;
  for (const FnName& f : kFns) s += std::string(s.empty() ? "" : ", ") + f.name;
  return s + ", " + kTopCombineFn + " (config: n, reverse)";
}

bool IsTop(CombineFnKind k) { return k == CombineFnKind::kTopLargest || k == CombineFnKind::kTopSmallest; }

// Python 3 ordering of two values: numbers (bool, int, float) numerically, strings by code point
// (UTF-8 byte order is code point order), lists lexicographically; anything else is a TypeError.
Result<int> PyCompare(const Value& a, const Value& b) {
  auto number = [](const Value& v) -> std::optional<double> {
    if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
    return v.AsNumber();
  };
  if ((a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool())) {
    int64_t x = a.is_bool() ? a.as_bool() : a.as_int(), y = b.is_bool() ? b.as_bool() : b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (auto x = number(a), y = number(b); x && y) return *x < *y ? -1 : (*x > *y ? 1 : 0);
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      ASSIGN_OR_RETURN(int c, PyCompare(x[i], y[i]));
      if (c != 0) return c;
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return InvalidArgument(fmt::format("TypeError: '<' not supported between instances of '{}' and '{}'", a.TypeName(),
                                     b.TypeName()));
}

Status NeedNumber(const Aggregation& a, const Value& v) {
  if (v.is_number() || v.is_bool()) return Status::OK();
  return InvalidArgument(fmt::format("TypeError: {} of '{}' needs numbers, got '{}' ({})", a.output,
                                     a.value->source(), v.TypeName(), v.ToJson()));
}

// Python's + on two numbers: int stays int (an overflow of int64 is an error, not a wrong value).
Result<Value> AddNumbers(const Value& x, const Value& y) {
  auto as_int = [](const Value& v) { return v.is_bool() ? int64_t{v.as_bool()} : v.as_int(); };
  if ((x.is_int() || x.is_bool()) && (y.is_int() || y.is_bool())) {
    int64_t r;
    if (__builtin_add_overflow(as_int(x), as_int(y), &r)) {
      return OutOfRange(fmt::format("sum overflows a 64-bit integer ({} + {})", as_int(x), as_int(y)));
    }
    return Value::Int(r);
  }
  return Value::Float(*(x.is_bool() ? std::optional<double>(x.as_bool()) : x.AsNumber()) +
                      *(y.is_bool() ? std::optional<double>(y.as_bool()) : y.AsNumber()));
}

// Inserts `v` into the best-first list `top` (at most n items): largest first, or smallest first.
Status InsertTop(List& top, const Value& v, int64_t n, bool largest) {
  std::size_t pos = top.size();
  for (std::size_t i = 0; i < top.size(); ++i) {
    ASSIGN_OR_RETURN(int c, PyCompare(v, top[i]));
    if (largest ? c > 0 : c < 0) {
      pos = i;
      break;
    }
  }
  if (pos >= static_cast<std::size_t>(n)) return Status::OK();
  top.insert(top.begin() + static_cast<std::ptrdiff_t>(pos), v);
  if (top.size() > static_cast<std::size_t>(n)) top.pop_back();
  return Status::OK();
}

Status ParseFn(const StageConfig& c, const std::string& where, const ConfigNode& fn, Aggregation& a) {
  std::string type;
  const ConfigNode& fn_config = fn["config"];  // undefined unless fn is a mapping with a config
  if (fn.IsScalar()) {
    type = fn.Scalar();
  } else if (fn.IsMap()) {
    for (const ConfigEntry& kv : fn.entries()) {
      const std::string k = kv.key.Scalar();
      if (k != "type" && k != "config") {
        return InvalidArgument(NodeLocation(c, kv.key) + ": " + where + ".fn: unknown key '" + k + "'; allowed: type, config");
      }
    }
    if (!fn["type"].IsScalar()) return InvalidArgument(NodeLocation(c, fn) + ": " + where + ".fn needs 'type: <fn name>'");
    type = fn["type"].Scalar();
  } else {
    return InvalidArgument(NodeLocation(c, fn) + ": " + where + ".fn must be a name (sum, count, ...) or {type, config}");
  }
  const auto* known = std::find_if(std::begin(kFns), std::end(kFns), [&](const FnName& f) { return type == f.name; });
  const bool top_class = type == kTopCombineFn;
  if (known == std::end(kFns) && !top_class) {
    return Status(StatusCode::kUnimplemented,
                  fmt::format("{}: {}.fn '{}' is not a combine function dfworker has (no Python runtime for other "
                              "CombineFns); supported: {}",
                              NodeLocation(c, fn), where, type, KnownFns()));
  }
  a.fn = top_class ? CombineFnKind::kTopLargest : known->kind;
  const bool takes_config = IsTop(a.fn) || top_class;
  if (fn_config.IsDefined() && !fn_config.IsNull()) {
    if (!takes_config) return InvalidArgument(NodeLocation(c, fn_config) + ": " + where + ".fn '" + type + "' takes no config");
    if (!fn_config.IsMap()) return InvalidArgument(NodeLocation(c, fn_config) + ": " + where + ".fn.config must be a mapping");
    for (const ConfigEntry& kv : fn_config.entries()) {
      const std::string k = kv.key.Scalar();
      if (k != "n" && !(top_class && k == "reverse")) {
        return Status(StatusCode::kUnimplemented,
                      fmt::format("{}: {}.fn.config: '{}' is not supported; allowed: n{}", NodeLocation(c, kv.key), where, k,
                                  top_class ? ", reverse" : ""));
      }
    }
  }
  if (!takes_config) return Status::OK();
  const ConfigNode& n = fn_config["n"];
  const std::optional<int64_t> count = n.IsScalar() ? ParseInt64(n.Scalar()) : std::nullopt;
  if (!count || *count < 1) {
    return InvalidArgument(NodeLocation(c, n.IsDefined() ? n : fn) + ": " + where + ".fn '" + type +
                           "' needs config n, a whole number >= 1");
  }
  a.n = *count;
  if (const ConfigNode& r = fn_config["reverse"]; top_class && r.IsDefined()) {
    const std::optional<bool> reverse = ConfigScalarBool(r);
    if (!reverse) return InvalidArgument(NodeLocation(c, r) + ": " + where + ".fn.config.reverse must be true or false");
    if (*reverse) a.fn = CombineFnKind::kTopSmallest;
  }
  return Status::OK();
}

}  // namespace

Result<CombineSpec> ParseCombineSpec(const StageConfig& c) {
  CombineSpec spec;
  ASSIGN_OR_RETURN(ExprLanguage language, ConfigLanguage(c));
  const ConfigNode& cfg = c.config;
  const ConfigNode& group_by = cfg["group_by"];
  if (!group_by.IsDefined()) return ConfigKeyError(c, "group_by", "is required (a field name or a list of them)");
  if (group_by.IsScalar()) {
    spec.group_by.push_back(group_by.Scalar());
  } else if (group_by.IsSequence()) {
    for (const ConfigNode& f : group_by.items()) {
      if (!f.IsScalar()) return ConfigKeyError(c, "group_by", "must list field names");
      spec.group_by.push_back(f.Scalar());
    }
  } else {
    return ConfigKeyError(c, "group_by", "must be a field name or a list of field names");
  }
  for (std::size_t i = 0; i < spec.group_by.size(); ++i) {
    if (spec.group_by[i].empty()) return ConfigKeyError(c, "group_by", "field names must not be empty");
    for (std::size_t j = 0; j < i; ++j) {
      if (spec.group_by[i] == spec.group_by[j]) return ConfigKeyError(c, "group_by", "field '" + spec.group_by[i] + "' is listed twice");
    }
  }
  const ConfigNode& combine = cfg["combine"];
  if (!combine.IsDefined() || !combine.IsMap() || combine.size() == 0) {
    return ConfigKeyError(c, "combine", "is required: a mapping of output field to {value, fn} or to a fn name");
  }
  for (const ConfigEntry& kv : combine.entries()) {
    Aggregation a;
    a.output = kv.key.Scalar();
    const std::string where = "combine." + a.output;
    if (std::find(spec.group_by.begin(), spec.group_by.end(), a.output) != spec.group_by.end()) {
      return InvalidArgument(NodeLocation(c, kv.key) + ": " + where + ": the output field is also a group_by field");
    }
    ConfigNode value = ConfigNode::Scalar(a.output);  // Beam: `dest: fn` combines the field named dest
    ConfigNode fn;
    if (kv.value.IsScalar()) {
      fn = kv.value;
    } else if (const ConfigNode& agg = kv.value; agg.IsMap()) {
      for (const ConfigEntry& item : agg.entries()) {
        const std::string k = item.key.Scalar();
        if (k != "value" && k != "fn") {
          return InvalidArgument(NodeLocation(c, item.key) + ": " + where + ": unknown key '" + k + "'; allowed: value, fn");
        }
      }
      if (agg["value"].IsDefined()) value = agg["value"];
      if (!agg["fn"].IsDefined()) return InvalidArgument(NodeLocation(c, agg) + ": " + where + " needs 'fn'");
      fn = agg["fn"];
    } else {
      return InvalidArgument(NodeLocation(c, kv.value) + ": " + where + " must be a fn name or {value, fn}");
    }
    RETURN_IF_ERROR(ParseFn(c, where, fn, a));
    ASSIGN_OR_RETURN(ConfiguredExpression e, CompileConfigExpression(c, value, where + ".value", language));
    a.value = std::move(e.expr);
    spec.aggregations.push_back(std::move(a));
  }
  for (Aggregation& a : spec.aggregations) {
    const std::string& source = a.value->source();
    auto same = std::find_if(spec.inputs.begin(), spec.inputs.end(),
                             [&](const CombineInput& in) { return in.expr->source() == source; });
    a.input = static_cast<int>(same - spec.inputs.begin());
    if (same != spec.inputs.end()) continue;
    CombineInput in;
    in.expr = a.value.get();
    // A bare field name: read the field, no evaluation (the hot case: `value: price`).
    const auto& fields = a.value->referenced_fields();
    if (fields.size() == 1 && fields[0] == source) in.field = source;
    spec.inputs.push_back(std::move(in));
  }
  if (c.windowing.IsDefined() && !c.windowing.IsNull()) {
    ASSIGN_OR_RETURN(WindowFn w, ParseWindowing(c, c.windowing, /*sessions_allowed=*/true));
    spec.window = w;
  }
  spec.partitions = c.shuffle.partitions;
  if (spec.partitions < 1) return c.ConfigError("shuffle partitions must be >= 1, got " + std::to_string(spec.partitions));
  return spec;
}

Accumulators NewAccumulators(const CombineSpec& spec) {
  Accumulators accs(spec.aggregations.size());
  for (std::size_t i = 0; i < accs.size(); ++i) {
    switch (spec.aggregations[i].fn) {
      case CombineFnKind::kSum: accs[i].v = Value::Int(0); break;  // Python: sum([]) == 0
      case CombineFnKind::kAll: accs[i].v = Value::Bool(true); break;
      case CombineFnKind::kAny: accs[i].v = Value::Bool(false); break;
      default: break;
    }
  }
  return accs;
}

Status AddInput(const Aggregation& a, Accumulator& acc, const Value& input) {
  // The hot cases first: a float (or an int into an int sum) needs no checks beyond its kind.
  if (a.fn == CombineFnKind::kSum && input.is_float() && acc.v.is_float()) {
    acc.v.AssignFloat(acc.v.as_float() + input.as_float());
    return Status::OK();
  }
  if (a.fn == CombineFnKind::kMean && input.is_number()) {
    acc.sum += input.is_float() ? input.as_float() : static_cast<double>(input.as_int());
    ++acc.n;
    return Status::OK();
  }
  switch (a.fn) {
    case CombineFnKind::kSum: {
      RETURN_IF_ERROR(NeedNumber(a, input));
      ASSIGN_OR_RETURN(acc.v, AddNumbers(acc.v, input));
      return Status::OK();
    }
    case CombineFnKind::kCount: ++acc.n; return Status::OK();
    case CombineFnKind::kMean: {
      RETURN_IF_ERROR(NeedNumber(a, input));
      acc.sum += input.is_bool() ? input.as_bool() : *input.AsNumber();
      ++acc.n;
      return Status::OK();
    }
    case CombineFnKind::kMin:
    case CombineFnKind::kMax: {
      if (input.is_null()) return InvalidArgument(fmt::format("TypeError: {} of '{}' got None", a.output, a.value->source()));
      if (acc.v.is_null()) {
        acc.v = input;
        return Status::OK();
      }
      ASSIGN_OR_RETURN(int c, PyCompare(input, acc.v));
      if (a.fn == CombineFnKind::kMin ? c < 0 : c > 0) acc.v = input;
      return Status::OK();
    }
    case CombineFnKind::kAll: acc.v = Value::Bool(acc.v.as_bool() && IsTruthy(input)); return Status::OK();
    case CombineFnKind::kAny: acc.v = Value::Bool(acc.v.as_bool() || IsTruthy(input)); return Status::OK();
    case CombineFnKind::kGroup: acc.items.push_back(input); return Status::OK();
    case CombineFnKind::kConcat:
      if (!input.is_list()) {
        return InvalidArgument(fmt::format("TypeError: concat of '{}' needs lists, got '{}'", a.value->source(), input.TypeName()));
      }
      acc.items.insert(acc.items.end(), input.as_list().begin(), input.as_list().end());
      return Status::OK();
    case CombineFnKind::kTopLargest:
    case CombineFnKind::kTopSmallest: return InsertTop(acc.items, input, a.n, a.fn == CombineFnKind::kTopLargest);
  }
  return Internal("unknown combine fn");
}

Status MergeAccumulator(const Aggregation& a, Accumulator& into, Accumulator from) {
  switch (a.fn) {
    case CombineFnKind::kSum: {
      ASSIGN_OR_RETURN(into.v, AddNumbers(into.v, from.v));
      return Status::OK();
    }
    case CombineFnKind::kCount: into.n += from.n; return Status::OK();
    case CombineFnKind::kMean:
      into.sum += from.sum;
      into.n += from.n;
      return Status::OK();
    case CombineFnKind::kMin:
    case CombineFnKind::kMax:
      if (from.v.is_null()) return Status::OK();
      return AddInput(a, into, from.v);
    case CombineFnKind::kAll: into.v = Value::Bool(into.v.as_bool() && from.v.as_bool()); return Status::OK();
    case CombineFnKind::kAny: into.v = Value::Bool(into.v.as_bool() || from.v.as_bool()); return Status::OK();
    case CombineFnKind::kGroup:
    case CombineFnKind::kConcat:
      into.items.insert(into.items.end(), std::make_move_iterator(from.items.begin()), std::make_move_iterator(from.items.end()));
      return Status::OK();
    case CombineFnKind::kTopLargest:
    case CombineFnKind::kTopSmallest:
      for (const Value& v : from.items) RETURN_IF_ERROR(InsertTop(into.items, v, a.n, a.fn == CombineFnKind::kTopLargest));
      return Status::OK();
  }
  return Internal("unknown combine fn");
}

Value ToValue(const Aggregation& a, const Accumulator& acc) {
  switch (a.fn) {
    case CombineFnKind::kCount: return Value::Int(acc.n);
    case CombineFnKind::kMean: return Value::FromList({Value::Float(acc.sum), Value::Int(acc.n)});
    case CombineFnKind::kGroup:
    case CombineFnKind::kConcat:
    case CombineFnKind::kTopLargest:
    case CombineFnKind::kTopSmallest: return Value::FromList(acc.items);
    default: return acc.v;
  }
}

Result<Accumulator> FromValue(const Aggregation& a, Value v) {
  auto malformed = [&] {
    return DataLoss(fmt::format("shuffle: an accumulator of '{}' has the wrong shape ({})", a.output, v.ToJson()));
  };
  Accumulator acc;
  switch (a.fn) {
    case CombineFnKind::kCount:
      if (!v.is_int() || v.as_int() < 0) return malformed();
      acc.n = v.as_int();
      return acc;
    case CombineFnKind::kMean:
      if (!v.is_list() || v.as_list().size() != 2 || !v.as_list()[0].is_float() || !v.as_list()[1].is_int()) return malformed();
      acc.sum = v.as_list()[0].as_float();
      acc.n = v.as_list()[1].as_int();
      return acc;
    case CombineFnKind::kGroup:
    case CombineFnKind::kConcat:
    case CombineFnKind::kTopLargest:
    case CombineFnKind::kTopSmallest:
      if (!v.is_list()) return malformed();
      if (IsTop(a.fn) && v.as_list().size() > static_cast<std::size_t>(a.n)) return malformed();
      acc.items = v.as_list();
      return acc;
    case CombineFnKind::kSum:
      if (!v.is_number()) return malformed();
      break;
    case CombineFnKind::kAll:
    case CombineFnKind::kAny:
      if (!v.is_bool()) return malformed();
      break;
    case CombineFnKind::kMin:
    case CombineFnKind::kMax: break;
  }
  acc.v = std::move(v);
  return acc;
}

Value ExtractOutput(const Aggregation& a, Accumulator acc) {
  switch (a.fn) {
    case CombineFnKind::kMean:
      return Value::Float(acc.n == 0 ? std::nan("") : acc.sum / static_cast<double>(acc.n));
    default: return ToValue(a, acc);
  }
}

Result<Value> GroupKey(const CombineSpec& spec, const Row& row) {
  List key;
  key.reserve(spec.group_by.size());
  for (const std::string& f : spec.group_by) {
    const Value* v = row.Find(f);
    if (v == nullptr) {
      std::string fields;
      for (const Field& x : row.fields()) fields += (fields.empty() ? "" : ", ") + x.name;
      return InvalidArgument(fmt::format("group_by field '{}' is not in the row (fields: {})", f, fields));
    }
    if (v->is_list()) {
      return InvalidArgument(fmt::format("group_by field '{}' is a list ({}); lists cannot be grouped on (unhashable in "
                                         "Python): group by a scalar field, or Explode the list first",
                                         f, v->ToJson()));
    }
    key.push_back(*v);
  }
  return Value::FromList(std::move(key));
}

uint64_t KeyHash(std::string_view encoded_key) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : encoded_key) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace dfw::stages_internal
