// A Join of three or more inputs whose equalities key the inputs on different fields (A and B on
// one field, B and C on another) as the left-deep steps of Beam's query: Join(A, B), then
// Join(that, C), ... Each step is a two-input Join on a shuffle of its own (one shuffle serves one
// key). Beam's query: SELECT <fields> FROM A JOIN B ON ... JOIN C ON ... (yaml_join.py); a step
// carries forward the columns the later steps compare and the listed `fields`, named
// "<input>__<field>", and the last step writes the `fields` under their own names. Only a Join
// whose `fields` lists every input is split (the steps must name their columns; a `SELECT *` input
// has no known columns at load).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "loader_internal.h"

namespace dfw::loader_internal {
namespace {

struct Column {
  std::size_t input;
  std::string field;
  bool operator<(const Column& o) const { return input != o.input ? input < o.input : field < o.field; }
};

// Beam's generate_join_type for step j (the previous input, input j), as a two-input Join's type.
std::string StepType(const ConfigNode& type, const std::vector<std::string>& tags, std::size_t j) {
  if (type.IsScalar()) return type.Scalar();
  std::vector<bool> outer(tags.size(), false);
  for (const ConfigNode& item : type["outer"].items()) {
    auto it = std::find(tags.begin(), tags.end(), item.Scalar());
    if (it != tags.end()) outer[static_cast<std::size_t>(it - tags.begin())] = true;
  }
  if (outer[j - 1] && outer[j]) return "outer";
  if (outer[j - 1]) return "left";
  if (outer[j]) return "right";
  return "inner";
}

}  // namespace

Result<bool> Loader::SplitJoin(Leaf& join, Entry& entry, const StageTypeInfo& info) {
  const StageConfig& cfg = join.spec.config;
  const std::vector<std::string>& tags = cfg.input_names;
  const std::size_t n = tags.size();
  const ConfigNode& eq = cfg.config["equalities"];
  const ConfigNode& fields = cfg.config["fields"];
  if (n < 3 || !eq.IsSequence() || !fields.IsMap() || fields.size() != n) return false;
  auto index = [&](const std::string& tag) -> std::size_t {
    return static_cast<std::size_t>(std::find(tags.begin(), tags.end(), tag) - tags.begin());
  };
  // Each equality item at the step of its latest input: (earlier column, that input's field).
  std::vector<std::vector<std::pair<Column, std::string>>> on(n);
  std::set<Column> compared;  // columns a later step compares
  for (const ConfigNode& item : eq.items()) {
    std::vector<Column> cols;
    if (!item.IsMap()) return false;
    for (const ConfigEntry& e : item.entries()) {
      const std::size_t i = index(e.key.Scalar());
      if (i >= n || !e.value.IsScalar() || e.value.Scalar().empty()) return false;  // the Join's own message says what
      cols.push_back(Column{i, e.value.Scalar()});
    }
    if (cols.size() < 2) return false;
    std::sort(cols.begin(), cols.end());
    const Column& last = cols.back();
    for (std::size_t k = 0; k + 1 < cols.size(); ++k) {
      if (cols[k].input == last.input) return false;  // two fields of one input: not a join step
      on[last.input].emplace_back(cols[k], last.field);
      compared.insert(cols[k]);
    }
  }
  // The listed fields, per input: (alias, field).
  std::vector<std::vector<std::pair<std::string, std::string>>> listed(n);
  for (const ConfigEntry& e : fields.entries()) {
    const std::size_t i = index(e.key.Scalar());
    if (i >= n) return false;
    if (e.value.IsSequence()) {
      for (const ConfigNode& f : e.value.items()) {
        if (!f.IsScalar()) return false;
        listed[i].emplace_back(f.Scalar(), f.Scalar());
      }
    } else if (e.value.IsMap()) {
      for (const ConfigEntry& f : e.value.entries()) {
        if (!f.value.IsScalar()) return false;
        listed[i].emplace_back(f.key.Scalar(), f.value.Scalar());
      }
    } else {
      return false;
    }
  }
  for (std::size_t j = 1; j < n; ++j) if (on[j].empty()) return false;  // a cross join: no ON clause
  auto carried = [&](const Column& c) { return tags[c.input] + "__" + c.field; };
  const std::string prev_tag = [&] {
    std::string t = "joined";
    while (std::find(tags.begin(), tags.end(), t) != tags.end()) t += "_";
    return t;
  }();
  const std::vector<RawRef> refs = join.refs;
  const int base = static_cast<int>(leaves_.size());  // step j becomes leaf base + j - 1
  std::vector<Leaf> steps;
  for (std::size_t j = 1; j < n; ++j) {
    const bool last = j + 1 == n;
    const std::string left = j == 1 ? tags[0] : prev_tag;
    auto left_column = [&](const Column& c) { return j == 1 ? c.field : carried(c); };
    Leaf step;
    step.spec = join.spec;
    StageConfig& sc = step.spec.config;
    sc.name = last ? cfg.name : fmt::format("{}/step{}", cfg.name, j);
    sc.input_names = {left, tags[j]};
    ConfigNode conf = ConfigNode::Map();
    conf.Set("type", ConfigNode::Scalar(StepType(cfg.config["type"], tags, j)));
    ConfigNode equalities = ConfigNode::Sequence();
    for (const auto& [earlier, field] : on[j]) {
      ConfigNode m = ConfigNode::Map();
      m.Set(left, ConfigNode::Scalar(left_column(earlier)));
      m.Set(tags[j], ConfigNode::Scalar(field));
      equalities.Append(std::move(m));
    }
    conf.Set("equalities", std::move(equalities));
    ConfigNode left_fields = ConfigNode::Map(), right_fields = ConfigNode::Map();
    if (last) {  // the fields under the names Beam's query gives them
      for (std::size_t i = 0; i < j; ++i) {
        for (const auto& [alias, field] : listed[i]) left_fields.Set(alias, ConfigNode::Scalar(left_column(Column{i, field})));
      }
      for (const auto& [alias, field] : listed[j]) right_fields.Set(alias, ConfigNode::Scalar(field));
    } else {  // what the later steps compare, and the fields the last one writes
      std::set<Column> keep;
      for (std::size_t i = 0; i <= j; ++i) for (const auto& [alias, field] : listed[i]) keep.insert(Column{i, field});
      for (const Column& c : compared) if (c.input <= j) keep.insert(c);
      for (const Column& c : keep) {
        (c.input < j ? left_fields : right_fields).Set(carried(c), ConfigNode::Scalar(c.input < j ? left_column(c) : c.field));
      }
    }
    ConfigNode f = ConfigNode::Map();
    f.Set(left, std::move(left_fields));
    f.Set(tags[j], std::move(right_fields));
    conf.Set("fields", std::move(f));
    sc.config = std::move(conf);
    if (info.check && !info.check(sc).ok()) return false;  // the Join's own message says more
    step.node = join.node;
    step.scope = join.scope;
    step.entry = join.entry;
    step.refs = {j == 1 ? refs[0] : RawRef{nullptr, "", -1, base + static_cast<int>(j) - 2, join.node}, refs[j]};
    steps.push_back(std::move(step));
  }
  for (Leaf& step : steps) leaves_.push_back(std::move(step));
  entry.leaf = entry.main_leaf = static_cast<int>(leaves_.size()) - 1;
  return true;
}

}  // namespace dfw::loader_internal
