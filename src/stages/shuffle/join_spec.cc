// A Join's configuration (join_spec.h): Beam's validation (apache_beam/yaml/yaml_join.py,
// _validate_input/_validate_type/_validate_equalities/_parse_fields) and the query's shape.
#include "join_spec.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "dfw/record/value_codec.h"
#include "dfw/stages/config.h"
#include "dfw/stages/join.h"
#include "shuffle_format.h"

namespace dfw::stages_internal {
namespace {

int IndexOf(const std::vector<std::string>& v, const std::string& s) {
  auto it = std::find(v.begin(), v.end(), s);
  return it == v.end() ? -1 : static_cast<int>(it - v.begin());
}

std::string Quoted(const std::vector<std::string>& v) {
  std::vector<std::string> q;
  for (const std::string& s : v) q.push_back("'" + s + "'");
  return Join(q);
}

Status ParseKinds(const StageConfig& c, JoinSpec& spec) {
  const ConfigNode& type = c.config["type"];
  const std::size_t n = spec.inputs.size();
  std::vector<bool> outer(n, false);
  std::string plain;
  if (type.IsScalar()) {
    plain = type.Scalar();
    if (plain != "inner" && plain != "outer" && plain != "left" && plain != "right") {
      return ConfigKeyError(c, "type", "'" + plain + "': must be one of inner, outer, left, right, or {outer: [inputs to outer join]}");
    }
  } else if (type.IsMap()) {
    const ConfigNode& list = type["outer"];
    if (type.size() != 1 || !list.IsSequence()) {
      return ConfigKeyError(c, "type", "a mapping must be {outer: [list of inputs to outer join]}, e.g. {outer: [input1, input2]}");
    }
    for (const ConfigNode& item : list.items()) {
      int i = item.IsScalar() ? IndexOf(spec.inputs, item.Scalar()) : -1;
      if (i < 0) {
        return ConfigKeyError(c, "type", fmt::format("outer: '{}' is not one of the inputs {}", item.IsScalar() ? item.Scalar() : "?",
                                                     Quoted(spec.inputs)));
      }
      outer[static_cast<std::size_t>(i)] = true;
    }
  } else {
    return ConfigKeyError(c, "type", "must be inner, outer, left, right, or {outer: [inputs to outer join]}");
  }
  // Beam's generate_join_type(previous table, this table).
  const bool any_outer = std::find(outer.begin(), outer.end(), true) != outer.end();
  spec.kinds.assign(n, JoinKind::kInner);
  for (std::size_t j = 1; j < n; ++j) {
    const bool l = outer[j - 1], r = outer[j];
    JoinKind k = JoinKind::kInner;
    if (l && r) k = JoinKind::kFull;
    else if (l) k = JoinKind::kLeft;
    else if (r) k = JoinKind::kRight;
    else if (!any_outer && !plain.empty()) {
      k = plain == "left" ? JoinKind::kLeft : plain == "right" ? JoinKind::kRight : plain == "outer" ? JoinKind::kFull : JoinKind::kInner;
    }
    spec.kinds[j] = k;
  }
  return Status::OK();
}

// Union-find over (input, column).
struct Columns {
  std::map<std::pair<int, std::string>, int> id;
  std::vector<int> parent;
  std::vector<std::pair<int, std::string>> of;
  int Of(int input, const std::string& column) {
    auto [it, fresh] = id.emplace(std::make_pair(input, column), static_cast<int>(parent.size()));
    if (fresh) {
      parent.push_back(it->second);
      of.emplace_back(input, column);
    }
    return it->second;
  }
  int Root(int x) {
    while (parent[static_cast<std::size_t>(x)] != x) x = parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    return x;
  }
  void Unite(int a, int b) { parent[static_cast<std::size_t>(Root(a))] = Root(b); }
};

Status ParseEqualities(const StageConfig& c, JoinSpec& spec) {
  const ConfigNode& eq = c.config["equalities"];
  const int n = static_cast<int>(spec.inputs.size());
  Columns cols;
  std::vector<std::pair<int, int>> pairs;  // (input, input) per ON comparison, as Beam pairs them
  if (eq.IsScalar()) {
    if (eq.Scalar().empty()) return ConfigKeyError(c, "equalities", "expected a field name");
    for (int i = 0; i < n; ++i) cols.Unite(cols.Of(0, eq.Scalar()), cols.Of(i, eq.Scalar()));
    for (int i = 1; i < n; ++i) pairs.emplace_back(0, i);
  } else if (eq.IsSequence() && !eq.items().empty()) {
    for (const ConfigNode& item : eq.items()) {
      if (!item.IsMap() || item.size() < 2) {
        return ConfigKeyError(c, "equalities", "each item must be a mapping of input to field with at least 2 items, e.g. {left: id, right: user_id}");
      }
      int first = -1, first_col = -1;
      for (const ConfigEntry& e : item.entries()) {
        const std::string& tag = e.key.Scalar();
        const int i = IndexOf(spec.inputs, tag);
        if (i < 0) return ConfigKeyError(c, "equalities", fmt::format("'{}' is not one of the inputs {}", tag, Quoted(spec.inputs)));
        if (!e.value.IsScalar() || e.value.Scalar().empty()) {
          return ConfigKeyError(c, "equalities", "'" + tag + "': expected a field name");
        }
        const int col = cols.Of(i, e.value.Scalar());
        if (first < 0) {
          first = i;
          first_col = col;
          continue;
        }
        cols.Unite(first_col, col);
        pairs.emplace_back(first, i);
      }
    }
  } else {
    return ConfigKeyError(c, "equalities", "expected a field name (the same in every input) or a list of {input: field} mappings");
  }
  // Key components in first-seen order; each must name one column of every input.
  std::vector<int> roots;
  for (int x = 0; x < static_cast<int>(cols.parent.size()); ++x) {
    int r = cols.Root(x);
    if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  }
  spec.key.assign(static_cast<std::size_t>(n), {});
  for (int r : roots) {
    std::vector<std::vector<std::string>> per_input(static_cast<std::size_t>(n));
    std::vector<std::string> named;
    for (int x = 0; x < static_cast<int>(cols.parent.size()); ++x) {
      if (cols.Root(x) != r) continue;
      const auto& [input, column] = cols.of[static_cast<std::size_t>(x)];
      per_input[static_cast<std::size_t>(input)].push_back(column);
      named.push_back(spec.inputs[static_cast<std::size_t>(input)] + "." + column);
    }
    for (int i = 0; i < n; ++i) {
      const auto& here = per_input[static_cast<std::size_t>(i)];
      if (here.size() > 1) {
        return ConfigKeyError(c, "equalities", fmt::format("the equalities make two fields of input '{}' equal ({}); "
                                                           "dfworker does not support that",
                                                           spec.inputs[static_cast<std::size_t>(i)], Join(named)));
      }
      if (here.empty()) {
        return ConfigKeyError(c, "equalities", fmt::format(
            "{} compare{} no field of input '{}': dfworker joins every input on one shuffle, so each set of fields made "
            "equal must name a field of every input; write this as two Joins (join two inputs, then join the result "
            "with the next)", Join(named), named.size() == 1 ? "s" : "", spec.inputs[static_cast<std::size_t>(i)]));
      }
      spec.key[static_cast<std::size_t>(i)].push_back(here.front());
    }
  }
  // Each ON clause belongs to the join of the later of its two inputs (Beam attaches it there).
  spec.refs.assign(static_cast<std::size_t>(n), {});
  for (auto [a, b] : pairs) {
    if (a == b) continue;
    auto& r = spec.refs[static_cast<std::size_t>(std::max(a, b))];
    if (std::find(r.begin(), r.end(), std::min(a, b)) == r.end()) r.push_back(std::min(a, b));
  }
  for (int j = 1; j < n; ++j) {
    if (spec.refs[static_cast<std::size_t>(j)].empty()) {
      return ConfigKeyError(c, "equalities", fmt::format("no equality compares input '{}' with an input before it in 'input:' "
                                                         "order ({}); Beam's query would join it without a condition",
                                                         spec.inputs[static_cast<std::size_t>(j)], Quoted(spec.inputs)));
    }
  }
  return Status::OK();
}

Status ParseFields(const StageConfig& c, JoinSpec& spec) {
  spec.star.assign(spec.inputs.size(), true);
  if (!ConfigHas(c, "fields")) return Status::OK();
  const ConfigNode& fields = c.config["fields"];
  if (!fields.IsMap()) return ConfigKeyError(c, "fields", "must be a mapping of input to a list of fields or {new_name: field}");
  std::set<std::string> named;
  for (const ConfigEntry& e : fields.entries()) {
    const int i = IndexOf(spec.inputs, e.key.Scalar());
    if (i < 0) return ConfigKeyError(c, "fields", fmt::format("'{}' is not one of the inputs {}", e.key.Scalar(), Quoted(spec.inputs)));
    spec.star[static_cast<std::size_t>(i)] = false;
    auto add = [&](const std::string& alias, const ConfigNode& column) -> Status {
      if (!column.IsScalar() || column.Scalar().empty()) {
        return ConfigKeyError(c, "fields", "'" + e.key.Scalar() + "': a field name must be a string");
      }
      if (!named.insert(alias).second) return ConfigKeyError(c, "fields", "the field name '" + alias + "' is given more than once");
      spec.fields.push_back(JoinSpec::Field{i, column.Scalar(), alias});
      return Status::OK();
    };
    if (e.value.IsSequence()) {
      for (const ConfigNode& col : e.value.items()) RETURN_IF_ERROR(add(col.IsScalar() ? col.Scalar() : "", col));
    } else if (e.value.IsMap()) {
      for (const ConfigEntry& kv : e.value.entries()) RETURN_IF_ERROR(add(kv.key.Scalar(), kv.value));
    } else {
      return ConfigKeyError(c, "fields", "'" + e.key.Scalar() + "': must be a list of fields or a mapping {new_name: field}");
    }
  }
  return Status::OK();
}

}  // namespace

Result<JoinSpec> ParseJoinSpec(const StageConfig& c) {
  JoinSpec spec;
  spec.inputs = c.input_names;
  if (spec.inputs.size() < 2) {
    return c.ConfigError("a Join takes two or more named inputs: input: {left: A, right: B}");
  }
  if (!ConfigHas(c, "type")) return c.ConfigError("config 'type' is required (inner, outer, left, right, or {outer: [inputs]})");
  if (!ConfigHas(c, "equalities")) return c.ConfigError("config 'equalities' is required (a field name, or a list of {input: field})");
  RETURN_IF_ERROR(ParseKinds(c, spec));
  RETURN_IF_ERROR(ParseEqualities(c, spec));
  RETURN_IF_ERROR(ParseFields(c, spec));
  spec.partitions = c.shuffle.partitions;
  if (spec.partitions < 1) return c.ConfigError("shuffle partitions must be >= 1, got " + std::to_string(spec.partitions));
  return spec;
}

void AppendJoinKey(const JoinSpec& spec, int input, const Row& row, std::string& out) {
  const auto& columns = spec.key[static_cast<std::size_t>(input)];
  const std::size_t mark = out.size();
  const bool windowed = !row.in_global_window();
  // The usual key (global window, every column an int or a string, none missing) in one write;
  // anything else, field by field below. The bytes are the same either way.
  constexpr std::size_t kFlatColumns = 4;
  if (!windowed && columns.size() <= kFlatColumns) {
    const Value* items[kFlatColumns];
    bool flat = true;
    for (std::size_t i = 0; i < columns.size() && flat; ++i) {
      items[i] = row.Find(columns[i]);
      flat = items[i] != nullptr;
    }
    if (flat && AppendEncodedFlatList(out, items, columns.size())) return;
  }
  AppendEncodedListHeader(out, columns.size() + (windowed ? 1 : 0));
  for (const std::string& column : columns) {
    const Value* v = row.Find(column);
    if (v == nullptr || v->is_null()) {
      out.resize(mark);
      AppendEncodedValue(out, Value());
      break;
    }
    if (v->is_float() && std::isfinite(v->as_float()) && v->as_float() == std::trunc(v->as_float()) &&
        std::fabs(v->as_float()) < 9.2e18) {
      AppendEncodedValue(out, Value::Int(static_cast<int64_t>(v->as_float())));
    } else {
      AppendEncodedValue(out, *v);
    }
  }
  if (windowed) AppendWindowItem(out, row.window_start_us(), row.window_end_us());
}

bool IsNullJoinKey(std::string_view key) { return !key.empty() && key[0] == '\0'; }

Result<std::vector<JoinSpec::Field>> JoinOutputColumns(const StageConfig& c, const JoinSpec& spec,
                                                       const std::vector<std::vector<std::string>>& schemas) {
  auto has = [&](int i, const std::string& column) {
    const auto& s = schemas[static_cast<std::size_t>(i)];
    return s.empty() || std::find(s.begin(), s.end(), column) != s.end();
  };
  auto missing = [&](int i, const std::string& column, const char* what) {
    return c.ConfigError(fmt::format("{} '{}' is not a field of input '{}' (its rows have {})", what, column,
                                     spec.inputs[static_cast<std::size_t>(i)], Quoted(schemas[static_cast<std::size_t>(i)])));
  };
  for (std::size_t i = 0; i < spec.key.size(); ++i) {
    for (const std::string& column : spec.key[i]) {
      if (!has(static_cast<int>(i), column)) return missing(static_cast<int>(i), column, "equalities: field");
    }
  }
  std::vector<JoinSpec::Field> out = spec.fields;
  std::unordered_set<std::string> taken;
  for (const JoinSpec::Field& f : out) {
    if (!has(f.input, f.column)) return missing(f.input, f.column, "fields: field");
    taken.insert(f.alias);
  }
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
    if (!spec.star[i]) continue;
    for (const std::string& column : schemas[i]) {
      std::string alias = column;
      for (int k = 0; taken.count(alias) != 0; ++k) alias = column + std::to_string(k);
      taken.insert(alias);
      out.push_back(JoinSpec::Field{static_cast<int>(i), column, alias});
    }
  }
  return out;
}

void JoinGroup(const JoinSpec& spec, const std::vector<std::vector<const Row*>>& rows, std::vector<const Row*>& out,
               std::vector<const Row*>& scratch) {
  const std::size_t n = spec.inputs.size();
  std::vector<const Row*>& cur = out;  // the combinations so far, n entries each
  std::vector<const Row*>& next = scratch;
  cur.clear();
  for (const Row* r : rows[0]) {
    cur.push_back(r);
    cur.insert(cur.end(), n - 1, nullptr);
  }
  for (std::size_t j = 1; j < n; ++j) {
    const JoinKind kind = spec.kinds[j];
    const auto& right = rows[j];
    next.clear();
    bool any = false;
    for (std::size_t c = 0; c < cur.size(); c += n) {
      const Row* const* combo = cur.data() + c;
      bool match = !right.empty();
      for (int i : spec.refs[j]) match = match && combo[static_cast<std::size_t>(i)] != nullptr;
      if (match) {
        any = true;
        for (const Row* r : right) {
          next.insert(next.end(), combo, combo + n);
          next[next.size() - n + j] = r;
        }
      } else if (kind == JoinKind::kLeft || kind == JoinKind::kFull) {
        next.insert(next.end(), combo, combo + n);
      }
    }
    // Every combination that matches one of input j's rows matches them all (one key group), so
    // they are unmatched exactly when no combination matched.
    if (!any && (kind == JoinKind::kRight || kind == JoinKind::kFull)) {
      for (const Row* r : right) {
        next.insert(next.end(), n, nullptr);
        next[next.size() - n + j] = r;
      }
    }
    std::swap(cur, next);  // swaps the two vectors' contents: `out` holds the latest
  }
}

}  // namespace dfw::stages_internal
