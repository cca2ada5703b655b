// References resolved through the scopes (Beam's Scope.get_pcollection), then the flat graph:
// error outputs consumed, topological order, unique names.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "loader_internal.h"

namespace dfw::loader_internal {
namespace {

constexpr int kMaxDepth = 64;  // composites referring to each other in a circle end here

// The members of `scope` that a name refers to: by `name` or by type, as Beam indexes both.
std::vector<int> Candidates(const Scope& scope, const std::string& name) {
  std::vector<int> found;
  for (std::size_t i = 0; i < scope.entries.size(); ++i) {
    const Entry& e = scope.entries[i];
    if (e.name == name || e.type == name) found.push_back(static_cast<int>(i));
  }
  return found;
}

std::vector<std::string> VisibleNames(const Scope& scope) {
  std::vector<std::string> names;
  for (const auto& kv : scope.inputs) names.push_back(kv.first);
  for (const Entry& e : scope.entries) names.push_back(e.name);
  return names;
}

}  // namespace

Result<std::vector<InputRef>> Loader::Resolve(const RawRef& ref, int depth) {
  if (depth > kMaxDepth) return Err(ref.at, fmt::format("input '{}' refers to itself through composite inputs and outputs", ref.name));
  if (ref.leaf >= 0) return std::vector<InputRef>{InputRef{ref.leaf, false}};
  const Scope& scope = *ref.scope;
  if (ref.entry >= 0) return ResolveEntry(scope.entries[static_cast<std::size_t>(ref.entry)], "", ref, depth);
  auto input = scope.inputs.find(ref.name);
  if (input != scope.inputs.end()) {
    std::vector<InputRef> all;
    for (const RawRef& r : input->second) {
      ASSIGN_OR_RETURN(std::vector<InputRef> got, Resolve(r, depth + 1));
      all.insert(all.end(), got.begin(), got.end());
    }
    return all;
  }
  std::string base = ref.name, output;
  std::vector<int> found = Candidates(scope, ref.name);
  if (found.empty()) {
    const std::size_t dot = ref.name.rfind('.');
    if (dot != std::string::npos) {
      base = ref.name.substr(0, dot);
      output = ref.name.substr(dot + 1);
      found = Candidates(scope, base);
    }
  }
  if (found.empty()) {
    const std::vector<std::string> names = VisibleNames(scope);
    return Err(ref.at, fmt::format("input '{}' names no transform in {}{}; it has: {}{}", ref.name, scope.what,
                                   DidYouMeanSuffix(base, names), Join(names),
                                   scope.parent != nullptr ? " (a composite sees only its own transforms and input tags)" : ""));
  }
  if (found.size() > 1) {
    std::vector<std::string> lines;
    for (int i : found) {
      const YAML::Node& n = scope.entries[static_cast<std::size_t>(i)].node;
      lines.push_back(std::to_string(n.Mark().is_null() ? 1 : n.Mark().line + 1));
    }
    return Err(ref.at, fmt::format("input '{}' is ambiguous: transforms on lines {} have that name or type; give them distinct 'name's",
                                   base, Join(lines)));
  }
  return ResolveEntry(scope.entries[static_cast<std::size_t>(found[0])], output, ref, depth);
}

Result<std::vector<InputRef>> Loader::ResolveEntry(const Entry& e, const std::string& output,
                                                   const RawRef& ref, int depth) {
  const std::string shown = ref.name.empty() ? e.name : ref.name;
  if (e.leaf < 0) {  // a composite
    const Scope& inner = *e.inner;
    if (e.implicit_outputs) return ResolveEntry(inner.entries[static_cast<std::size_t>(e.last)], output, ref, depth + 1);
    std::vector<std::string> tags;
    for (const auto& kv : e.outputs) tags.push_back("'" + e.name + "." + kv.first + "'");
    if (output.empty()) {
      if (e.outputs.size() == 1) return Resolve(e.outputs.begin()->second, depth + 1);
      if (e.outputs.empty()) {
        return Err(ref.at, fmt::format("input '{}': {} '{}' declares no 'output:', so it has no output to read", shown, e.type, e.name));
      }
      return Err(ref.at, fmt::format("input '{}' is ambiguous: {} '{}' has outputs {}; name one", shown, e.type, e.name, Join(tags)));
    }
    auto it = e.outputs.find(output);
    if (it == e.outputs.end()) {
      return Err(ref.at, fmt::format("input '{}': {} '{}' has no output '{}'; it has {}", shown, e.type, e.name, output,
                                     tags.empty() ? "none" : Join(tags)));
    }
    return Resolve(it->second, depth + 1);
  }
  const std::size_t from = static_cast<std::size_t>(e.leaf);
  const TransformSpec& src = leaves_[from].spec;
  const std::vector<std::string>& named = src.outputs;
  auto offered = [&] {
    std::vector<std::string> names;
    if (!src.traits.no_main_output && !src.traits.is_sink) names.push_back("'" + e.name + "'");
    for (const std::string& o : named) names.push_back("'" + e.name + "." + o + "'");
    std::string errors = src.config.error_output;
    if (errors.empty() && e.schema_leaf >= 0) errors = leaves_[static_cast<std::size_t>(e.schema_leaf)].spec.config.error_output;
    if (!errors.empty()) names.push_back("'" + e.name + "." + errors + "'");
    return names.empty() ? std::string("no outputs") : Join(names);
  };
  if (output.empty()) {
    if (src.traits.is_sink) return Err(ref.at, fmt::format("input '{}': {} is a sink and has no output", shown, src.config.type));
    if (src.traits.no_main_output) {
      return Err(ref.at, fmt::format("input '{}': {} has no main output; name one of its outputs: {}", shown, src.config.type, offered()));
    }
    return std::vector<InputRef>{InputRef{e.main_leaf, false}};
  }
  // The rows failing an output_schema join the transform's own error output (or are it, where the
  // transform has none and output_schema names one). (`output` is not empty here.)
  const bool own_errors = output == src.config.error_output;
  const bool schema_errors =
      e.schema_leaf >= 0 && output == leaves_[static_cast<std::size_t>(e.schema_leaf)].spec.config.error_output;
  if (own_errors || schema_errors) {
    std::vector<InputRef> errors;
    if (own_errors) errors.push_back(InputRef{e.leaf, true});
    if (schema_errors) errors.push_back(InputRef{e.schema_leaf, true});
    for (const InputRef& r : errors) error_consumed_[static_cast<std::size_t>(r.from)] = true;
    return errors;
  }
  auto tag = std::find(named.begin(), named.end(), output);
  if (tag != named.end()) return std::vector<InputRef>{InputRef{e.leaf, false, static_cast<int>(tag - named.begin())}};
  return Err(ref.at, fmt::format("input '{}': transform '{}' has no output '{}'{}; it has {}", shown, e.name, output,
                                 DidYouMeanSuffix(output, named), offered()));
}

Result<PipelineSpec> Loader::Wire() {
  const std::size_t n = leaves_.size();
  error_consumed_.assign(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<InputRef> inputs;
    for (const RawRef& r : leaves_[i].refs) {
      ASSIGN_OR_RETURN(std::vector<InputRef> got, Resolve(r, 0));
      if (leaves_[i].spec.traits.named_inputs && got.size() != 1) {
        return Err(r.at, fmt::format("input '{}' of {} must be the output of one transform, not {}", r.name,
                                     leaves_[i].spec.config.type, got.size()));
      }
      inputs.insert(inputs.end(), got.begin(), got.end());
    }
    leaves_[i].spec.inputs = std::move(inputs);
  }
  // Session windows merge where rows are grouped: a Combine without windowing of its own that reads
  // only WindowIntos with sessions takes their windowing, so it merges the sessions they opened.
  for (std::size_t i = 0; i < n; ++i) {
    TransformSpec& t = leaves_[i].spec;
    if (t.config.type != "Combine" || t.config.windowing.IsDefined() || t.inputs.empty()) continue;
    const ConfigNode* sessions = nullptr;
    bool all = true;
    for (const InputRef& in : t.inputs) {
      const StageConfig& from = leaves_[static_cast<std::size_t>(in.from)].spec.config;
      const bool is_sessions = !in.error && in.tag < 0 && from.type == "WindowInto" && from.windowing["type"].IsScalar() &&
                               from.windowing["type"].Scalar() == "sessions";
      all = all && is_sessions;
      if (is_sessions) sessions = &from.windowing;
    }
    if (all && sessions != nullptr) t.config.windowing = *sessions;
  }
  bool any_source = false;
  for (std::size_t i = 0; i < n; ++i) {
    const StageConfig& c = leaves_[i].spec.config;
    any_source = any_source || leaves_[i].spec.traits.is_source;
    if (!c.error_output.empty() && !error_consumed_[i]) {
      return Err(leaves_[i].node, fmt::format("transform '{}' ({}): error output '{}' is not consumed; Beam requires it "
                                              "(add a transform with input: {}.{}, e.g. a WriteToJson)",
                                              c.name, c.type, c.error_output, c.name, c.error_output));
    }
  }
  if (!any_source) return Err(YAML::Node(), "the pipeline has no source (ReadFromText, ReadFromJson, ReadFromCsv or Create)");

  // Topological order (Kahn), stable in file order.
  std::vector<int> indegree(n, 0), order;
  std::vector<std::vector<int>> consumers(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const InputRef& in : leaves_[i].spec.inputs) {
      ++indegree[i];
      consumers[static_cast<std::size_t>(in.from)].push_back(static_cast<int>(i));
    }
  }
  std::set<int> ready;
  for (std::size_t i = 0; i < n; ++i) if (indegree[i] == 0) ready.insert(static_cast<int>(i));
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int c : consumers[static_cast<std::size_t>(i)]) if (--indegree[static_cast<std::size_t>(c)] == 0) ready.insert(c);
  }
  if (order.size() != n) {
    std::vector<std::string> cyclic;
    for (std::size_t i = 0; i < n; ++i) if (indegree[i] > 0) cyclic.push_back(leaves_[i].spec.config.name);
    return Err(leaves_[0].node, "the inputs form a cycle through: " + Join(cyclic));
  }
  // Names are metrics namespaces and staging folders, so they must be unique at run time: a repeated
  // name (two unnamed Filters in a chain) becomes Filter_2, Filter_3, ... after wiring.
  std::set<std::string> taken;
  for (const Leaf& l : leaves_) taken.insert(l.spec.config.name);
  std::map<std::string, int> seen;
  for (int i : order) {
    std::string& name = leaves_[static_cast<std::size_t>(i)].spec.config.name;
    int k = ++seen[name];
    if (k > 1) {
      std::string candidate;
      do candidate = fmt::format("{}_{}", name, k++); while (taken.count(candidate) || seen.count(candidate));
      seen[candidate] = 1;
      name = candidate;
    }
  }
  std::vector<int> position(n);
  for (std::size_t k = 0; k < order.size(); ++k) position[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
  PipelineSpec spec;
  spec.file = file_;
  for (int i : order) {
    TransformSpec t = std::move(leaves_[static_cast<std::size_t>(i)].spec);
    for (InputRef& in : t.inputs) in.from = position[static_cast<std::size_t>(in.from)];
    spec.transforms.push_back(std::move(t));
  }
  return spec;
}

}  // namespace dfw::loader_internal
