// The Beam YAML loader: file → checked, wired, topologically sorted PipelineSpec.
// Every error starts with "file:line:column: " and says what is allowed.
#include <algorithm>
#include <cctype>
#include <functional>
#include <unordered_map>
#include <map>
#include <set>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "dfw/common/yaml_document.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/combine.h"
#include "dfw/stages/config_yaml.h"

namespace dfw {
namespace {

// Valid Beam YAML transform types that dfworker refuses, with why.
const std::map<std::string, std::string>& UnsupportedTypes() {
  static const std::map<std::string, std::string> kTypes = {
      {"Sql", "SQL transforms need Beam's Java expansion service"},
      {"PyTransform", "arbitrary Python PTransforms need a Python SDK"},
      {"AssertEqual", "test assertions are not implemented"},
      {"StripErrorMetadata", "not implemented yet"},
      {"ValidateWithSchema", "not implemented yet"},
      {"composite", "composite transforms are not implemented"},
      {"chain", "nested chains are not implemented; flatten them into the pipeline"},
  };
  return kTypes;
}

struct Pending {
  TransformSpec spec;
  YAML::Node node;
  std::vector<std::pair<std::string, YAML::Node>> refs;  // raw `input:` references
  int chain_prev = -1;  // inside a chain: index of the previous transform (its main output)
};

class Loader {
 public:
  Loader(const StageRegistry& registry, std::string file, std::string base_dir)
      : registry_(registry), file_(std::move(file)), base_dir_(std::move(base_dir)) {}

  Result<PipelineSpec> Load(const YAML::Node& root);

 private:
  std::string Loc(const YAML::Node& n) const {
    if (!n.IsDefined() || n.Mark().is_null()) return fmt::format("{}:1:1", file_);
    return fmt::format("{}:{}:{}", file_, n.Mark().line + 1, n.Mark().column + 1);
  }
  Status Err(const YAML::Node& n, const std::string& msg) const { return InvalidArgument(Loc(n) + ": " + msg); }
  Status Refuse(const YAML::Node& n, const std::string& msg) const { return Unimplemented(Loc(n) + ": " + msg); }

  Status CheckKeys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& what,
                   const std::map<std::string, std::string>& refused) const;
  Status ParseTransform(const YAML::Node& n, bool in_chain, Pending& out) const;
  Status ParseConfig(const YAML::Node& n, const StageTypeInfo& info, StageConfig& cfg) const;
  Status ParseInputs(const YAML::Node& n, bool named, Pending& out) const;
  Status ParseResourceHints(const YAML::Node& n, const std::string& what, std::vector<ResourceHintSpec>& out) const;
  Result<PipelineSpec> Wire(std::vector<Pending> all) const;
  // The registered types a pipeline file may name (not the fused stages' internal ones).
  std::vector<std::string> UserTypes() const {
    std::vector<std::string> types = registry_.Types();
    types.erase(std::remove_if(types.begin(), types.end(), [](const std::string& t) { return IsInternalStageType(t); }),
                types.end());
    return types;
  }

  const StageRegistry& registry_;
  std::string file_;
  std::string base_dir_;  // StageConfig::base_dir of every transform
};

Status Loader::CheckKeys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& what,
                         const std::map<std::string, std::string>& refused) const {
  for (const auto& kv : map) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    auto it = refused.find(key);
    if (it != refused.end()) return Refuse(kv.first, fmt::format("{}: '{}' is valid Beam YAML but {}", what, key, it->second));
    return Err(kv.first, fmt::format("{}: unknown key '{}'{}; allowed: {}", what, key, DidYouMeanSuffix(key, allowed),
                                     allowed.empty() ? "(none)" : Join(allowed)));
  }
  return Status::OK();
}

// Beam YAML's `dependencies:` (pip packages or jars for a UDF) cannot be honoured: say why and what to do.
constexpr const char* kDependenciesRefusal =
    "'dependencies' (pip packages or jars for a UDF) is valid Beam YAML but dfworker's workers have no Python or Java "
    "runtime to install them into: expressions and lambdas run in dfworker's own evaluator. Remove it and keep to the "
    "expression subset (builtins such as len, str, int, float, round, abs, min, max and string methods), or run this "
    "pipeline on Beam (DirectRunner or Dataflow)";

Status Loader::ParseConfig(const YAML::Node& n, const StageTypeInfo& info, StageConfig& cfg) const {
  std::string what = fmt::format("transform '{}' ({}) config", cfg.name, cfg.type);
  const bool absent = !n.IsDefined() || n.IsNull();
  if (!absent && !n.IsMap()) return Err(n, what + ": expected a mapping of parameters");
  const YAML::Node yaml_config = absent ? YAML::Node(YAML::NodeType::Map) : n;
  std::vector<std::string> allowed = info.allowed_keys;
  for (const auto& kv : yaml_config) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (key == "dependencies") return Refuse(kv.first, what + ": " + kDependenciesRefusal);
    if (key != "error_handling") continue;
    if (!info.traits.can_fail_per_record) {
      return Err(kv.first, fmt::format("{}: {} has no per-record failures, so 'error_handling' is not allowed here",
                                       what, cfg.type));
    }
    const YAML::Node& eh = kv.second;
    if (!eh.IsMap()) return Err(kv.second, what + ": error_handling must be a mapping {output: NAME, threshold: R}");
    RETURN_IF_ERROR(CheckKeys(eh, {"output", "threshold"}, what + " error_handling", {}));
    if (!eh["output"].IsScalar() || eh["output"].Scalar().empty()) {
      return Err(eh, what + ": error_handling needs 'output: NAME' (the name of the error output)");
    }
    cfg.error_output = eh["output"].Scalar();
    if (eh["threshold"].IsDefined()) {
      auto t = eh["threshold"].IsScalar() ? ParseDouble(eh["threshold"].Scalar()) : std::nullopt;
      if (!t || *t < 0 || *t > 1) {
        return Err(eh["threshold"], what + ": error_handling threshold must be a number between 0 and 1 (a fraction of records)");
      }
      cfg.error_threshold = *t;
    }
  }
  allowed.push_back("error_handling");
  if (!info.traits.can_fail_per_record) allowed.pop_back();
  RETURN_IF_ERROR(CheckKeys(yaml_config, allowed, what, {}));
  for (const std::string& req : info.required_keys) {
    if (!yaml_config[req].IsDefined()) return Err(n.IsDefined() ? n : YAML::Node(), what + ": '" + req + "' is required");
  }
  cfg.config = ConfigNodeFromYaml(yaml_config);
  return Status::OK();
}

// Beam's hint names (apache_beam/transforms/resources.py); the options module parses their values
// (src/options/resource_hints.cc keeps the same list).
const std::vector<std::string>& KnownResourceHints() {
  static const std::vector<std::string> kKnown = {"accelerator", "min_ram", "cpu_count"};
  return kKnown;
}

Status Loader::ParseResourceHints(const YAML::Node& n, const std::string& what,
                                  std::vector<ResourceHintSpec>& out) const {
  if (!n.IsMap()) {
    return Err(n, what + " resource_hints: expected a mapping of hint to value, e.g. {min_ram: 16GB, accelerator: "
                         "\"type:nvidia-l4;count:1;install-nvidia-driver\"}");
  }
  for (const auto& kv : n) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    const std::vector<std::string>& known = KnownResourceHints();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Err(kv.first, fmt::format("{} resource_hints: unknown hint '{}'{}; known: {}", what, key,
                                       DidYouMeanSuffix(key, known), Join(known)));
    }
    if (!kv.second.IsScalar()) {
      const char* got = kv.second.IsSequence() ? "a list" : kv.second.IsMap() ? "a mapping" : "empty";
      return Err(kv.second.IsNull() ? kv.first : kv.second,
                 fmt::format("{} resource_hints: '{}' must be one value (a string or a number), not {}{}", what, key,
                             got,
                             key == "accelerator" ? "; write e.g. accelerator: \"type:nvidia-l4;count:1;install-nvidia-driver\""
                             : key == "min_ram"   ? "; write e.g. min_ram: 16GB"
                                                  : "; write e.g. cpu_count: 4"));
    }
    const YAML::Mark m = kv.second.Mark();
    out.push_back(ResourceHintSpec{key, kv.second.Scalar(), m.is_null() ? 1 : m.line + 1, m.is_null() ? 1 : m.column + 1});
  }
  return Status::OK();
}

Status Loader::ParseInputs(const YAML::Node& n, bool named, Pending& out) const {
  if (named) {
    if (!n.IsMap()) {
      return Err(n, fmt::format("input: {} takes named inputs, a mapping of tag to transform: input: {{left: A, right: B}}",
                                out.spec.config.type));
    }
    for (const auto& kv : n) {
      const std::string tag = kv.first.IsScalar() ? kv.first.Scalar() : "";
      // Beam names each input as a SQL table: an identifier.
      bool ident = !tag.empty() && (std::isalpha(static_cast<unsigned char>(tag[0])) || tag[0] == '_');
      for (char c : tag) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!ident) return Err(kv.first, fmt::format("input: tag '{}' must be an identifier (letters, digits, _; not first a digit)", tag));
      auto& names = out.spec.config.input_names;
      if (std::find(names.begin(), names.end(), tag) != names.end()) return Err(kv.first, "input: tag '" + tag + "' repeats");
      if (!kv.second.IsScalar()) return Err(kv.second, "input: '" + tag + "' must name one transform");
      names.push_back(tag);
      out.refs.emplace_back(kv.second.Scalar(), kv.second);
    }
    return Status::OK();
  }
  if (n.IsScalar()) {
    out.refs.emplace_back(n.Scalar(), n);
  } else if (n.IsSequence()) {
    if (n.size() == 0) return Err(n, "input: an empty list; name at least one transform");
    for (const YAML::Node& item : n) {
      if (!item.IsScalar()) return Err(item, "input: list items must be transform names");
      out.refs.emplace_back(item.Scalar(), item);
    }
  } else if (n.IsMap()) {
    return Refuse(n, "named inputs (input: {name: Transform}) are valid Beam YAML for multi-input transforms such as "
                     "Sql or Join; dfworker takes them for Join only; use a name or a list of names (flatten)");
  } else {
    return Err(n, "input: expected a transform name or a list of names");
  }
  return Status::OK();
}

Status Loader::ParseTransform(const YAML::Node& n, bool in_chain, Pending& out) const {
  if (!n.IsMap()) return Err(n, "a transform must be a mapping with at least 'type'");
  static const std::map<std::string, std::string> kRefusedKeys = {
      {"transforms", "nested transforms (composite/chain) are not supported"},
      {"dependencies", "dfworker cannot install them (see the config-level message)"}};
  RETURN_IF_ERROR(CheckKeys(n, {"type", "name", "input", "config", "resource_hints", "windowing"}, "transform", kRefusedKeys));
  if (!n["type"].IsDefined() || !n["type"].IsScalar()) return Err(n, "transform: 'type' is required (e.g. ReadFromJson)");
  StageConfig& cfg = out.spec.config;
  cfg.type = n["type"].Scalar();
  cfg.name = n["name"].IsDefined() ? (n["name"].IsScalar() ? n["name"].Scalar() : "") : cfg.type;
  if (cfg.name.empty()) return Err(n["name"], "transform 'name' must be a non-empty string");
  cfg.file = file_;
  cfg.base_dir = base_dir_;
  cfg.line = n.Mark().is_null() ? 1 : n.Mark().line + 1;
  cfg.column = n.Mark().is_null() ? 1 : n.Mark().column + 1;
  out.node = n;
  const StageTypeInfo* info = IsInternalStageType(cfg.type) ? nullptr : registry_.Find(cfg.type);
  if (info == nullptr) {
    auto it = UnsupportedTypes().find(cfg.type);
    if (it != UnsupportedTypes().end()) {
      return Refuse(n["type"], fmt::format("transform type '{}' is valid Beam YAML but is not supported by dfworker: {}",
                                           cfg.type, it->second));
    }
    return Err(n["type"], fmt::format("unknown transform type '{}'{}; available: {}", cfg.type,
                                      DidYouMeanSuffix(cfg.type, UserTypes()), Join(UserTypes())));
  }
  out.spec.traits = info->traits;
  if (n["windowing"].IsDefined()) {
    // Beam applies a transform's windowing to its inputs; in batch only grouping sees windows.
    if (cfg.type != "WindowInto" && cfg.type != "Combine") {
      return Refuse(n["windowing"], fmt::format("windowing on a {} is not supported: only grouping sees windows in batch; "
                                                "put 'windowing:' on the Combine that aggregates, or add a WindowInto before it",
                                                cfg.type));
    }
    cfg.windowing = ConfigNodeFromYaml(n["windowing"]);
  }
  RETURN_IF_ERROR(ParseConfig(n["config"], *info, cfg));
  if (n["resource_hints"].IsDefined()) {
    RETURN_IF_ERROR(ParseResourceHints(n["resource_hints"], fmt::format("transform '{}' ({})", cfg.name, cfg.type),
                                       out.spec.resource_hints));
  }
  if (n["input"].IsDefined()) {
    if (in_chain) return Err(n["input"], "inside a chain inputs are implicit: remove 'input' (or move the transform to extra_transforms)");
    if (info->traits.is_source) return Err(n["input"], fmt::format("{} is a source and takes no input", cfg.type));
    RETURN_IF_ERROR(ParseInputs(n["input"], info->traits.named_inputs, out));
  } else if (info->traits.named_inputs) {
    return Err(n, fmt::format("transform '{}' ({}) takes named inputs: input: {{left: A, right: B}} (two or more){}",
                              cfg.name, cfg.type, in_chain ? "; move it out of the chain to extra_transforms" : ""));
  } else if (!in_chain && !info->traits.is_source) {
    return Err(n, fmt::format("transform '{}' ({}): 'input' is required outside a chain", cfg.name, cfg.type));
  }
  if (info->check) RETURN_IF_ERROR(info->check(cfg));
  if (info->named_outputs) {
    ASSIGN_OR_RETURN(out.spec.outputs, info->named_outputs(cfg));
    for (const std::string& o : out.spec.outputs) {
      if (!cfg.error_output.empty() && o == cfg.error_output) {
        return Err(n["config"], fmt::format("transform '{}' ({}): error_handling output '{}' cannot be among its outputs {}",
                                            cfg.name, cfg.type, o, Join(out.spec.outputs)));
      }
    }
  }
  return Status::OK();
}

Result<PipelineSpec> Loader::Wire(std::vector<Pending> all) const {
  std::multimap<std::string, int> by_name;
  std::vector<std::string> names;
  for (int i = 0; i < static_cast<int>(all.size()); ++i) {
    by_name.emplace(all[i].spec.config.name, i);
    names.push_back(all[i].spec.config.name);
  }
  std::vector<bool> error_consumed(all.size(), false);
  auto resolve = [&](const std::string& ref, const YAML::Node& at) -> Result<InputRef> {
    auto exact = by_name.equal_range(ref);
    std::string base = ref, output;
    if (exact.first == exact.second) {
      std::size_t dot = ref.rfind('.');
      if (dot != std::string::npos) {
        base = ref.substr(0, dot);
        output = ref.substr(dot + 1);
      }
    }
    auto range = by_name.equal_range(base);
    if (range.first == range.second) {
      return Err(at, fmt::format("input '{}' names no transform{}; transforms: {}", ref, DidYouMeanSuffix(base, names),
                                 Join(names)));
    }
    if (std::next(range.first) != range.second) {
      std::vector<std::string> lines;
      for (auto it = range.first; it != range.second; ++it) lines.push_back(std::to_string(all[it->second].spec.config.line));
      return Err(at, fmt::format("input '{}' is ambiguous: transforms on lines {} have that name; give them distinct 'name's",
                                 base, Join(lines)));
    }
    int from = range.first->second;
    const StageConfig& src = all[from].spec.config;
    const std::vector<std::string>& named = all[from].spec.outputs;
    // What the producer offers, for the messages: "'P.a', 'P.b' and 'P.errors'".
    auto offered = [&] {
      std::vector<std::string> names;
      if (!all[from].spec.traits.no_main_output) names.push_back("'" + base + "'");
      for (const std::string& o : named) names.push_back("'" + base + "." + o + "'");
      if (!src.error_output.empty()) names.push_back("'" + base + "." + src.error_output + "'");
      return Join(names);
    };
    if (output.empty()) {
      if (all[from].spec.traits.is_sink) return Err(at, fmt::format("input '{}': {} is a sink and has no output", ref, src.type));
      if (all[from].spec.traits.no_main_output) {
        return Err(at, fmt::format("input '{}': {} has no main output; name one of its outputs: {}", ref, src.type, offered()));
      }
      return InputRef{from, false};
    }
    if (output == src.error_output) {
      error_consumed[from] = true;
      return InputRef{from, true};
    }
    auto tag = std::find(named.begin(), named.end(), output);
    if (tag != named.end()) return InputRef{from, false, static_cast<int>(tag - named.begin())};
    return Err(at, fmt::format("input '{}': transform '{}' has no output '{}'{}; it has {}", ref, base, output,
                               DidYouMeanSuffix(output, named), offered()));
  };
  for (Pending& p : all) {
    if (p.chain_prev >= 0) p.spec.inputs.push_back(InputRef{p.chain_prev, false});
    for (const auto& [ref, at] : p.refs) {
      ASSIGN_OR_RETURN(InputRef in, resolve(ref, at));
      p.spec.inputs.push_back(in);
    }
  }
  bool any_source = false;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const StageConfig& c = all[i].spec.config;
    any_source = any_source || all[i].spec.traits.is_source;
    if (!c.error_output.empty() && !error_consumed[i]) {
      return Err(all[i].node, fmt::format("transform '{}' ({}): error output '{}' is not consumed; Beam requires it "
                                          "(add a transform with input: {}.{}, e.g. a WriteToJson)",
                                          c.name, c.type, c.error_output, c.name, c.error_output));
    }
  }
  if (!any_source) return Err(YAML::Node(), "the pipeline has no source (ReadFromText, ReadFromJson, ReadFromCsv or Create)");

  // Topological order (Kahn), stable in file order.
  std::vector<int> indegree(all.size(), 0), order;
  std::vector<std::vector<int>> consumers(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (const InputRef& in : all[i].spec.inputs) {
      ++indegree[i];
      consumers[in.from].push_back(static_cast<int>(i));
    }
  }
  std::set<int> ready;
  for (std::size_t i = 0; i < all.size(); ++i) if (indegree[i] == 0) ready.insert(static_cast<int>(i));
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int c : consumers[i]) if (--indegree[c] == 0) ready.insert(c);
  }
  if (order.size() != all.size()) {
    std::vector<std::string> cyclic;
    for (std::size_t i = 0; i < all.size(); ++i) if (indegree[i] > 0) cyclic.push_back(all[i].spec.config.name);
    return Err(all[0].node, "the inputs form a cycle through: " + Join(cyclic));
  }
  // Names are metrics namespaces and staging folders, so they must be unique at run time: a repeated
  // name (two unnamed Filters in a chain) becomes Filter_2, Filter_3, ... after wiring.
  std::map<std::string, int> seen;
  for (int i : order) {
    std::string& name = all[i].spec.config.name;
    int n = ++seen[name];
    if (n > 1) {
      std::string candidate;
      do candidate = fmt::format("{}_{}", name, n++); while (by_name.count(candidate) || seen.count(candidate));
      seen[candidate] = 1;
      name = candidate;
    }
  }
  std::vector<int> position(all.size());
  for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = static_cast<int>(k);
  PipelineSpec spec;
  spec.file = file_;
  for (int i : order) {
    TransformSpec t = std::move(all[i].spec);
    for (InputRef& in : t.inputs) in.from = position[in.from];
    spec.transforms.push_back(std::move(t));
  }
  return spec;
}

Result<PipelineSpec> Loader::Load(const YAML::Node& root) {
  if (!root.IsMap()) return Err(root, "a pipeline file must be a mapping with a 'pipeline:' key");
  // `tests:` is the pipeline's own tests (Beam's yaml_testing; `dfworker test` runs them): no part of a run.
  RETURN_IF_ERROR(CheckKeys(root, {"pipeline", "options", "tests"}, "top level",
                            {{"providers", "external transform providers (Python packages, Java jars) are not supported"}}));
  const YAML::Node p = root["pipeline"];  // const: yaml-cpp's non-const operator[] inserts keys
  if (!p.IsDefined() || !p.IsMap()) return Err(p.IsDefined() ? p : root, "'pipeline:' must be a mapping with 'transforms:'");
  // resource_hints: accepted at the pipeline level as on transforms (Beam applies them to every
  // transform); the options module reads their values into the plan and the rules (docs/options.md).
  RETURN_IF_ERROR(CheckKeys(p, {"type", "transforms", "source", "sink", "extra_transforms", "name", "resource_hints"}, "pipeline",
                            {{"windowing", "pipeline-level windowing is not supported: put 'windowing:' on the Combine that "
                                           "aggregates, or add a WindowInto before it"}}));
  std::vector<ResourceHintSpec> pipeline_hints;
  if (p["resource_hints"].IsDefined()) RETURN_IF_ERROR(ParseResourceHints(p["resource_hints"], "pipeline", pipeline_hints));
  bool chain = false;
  if (p["type"].IsDefined()) {
    std::string type = p["type"].IsScalar() ? p["type"].Scalar() : "";
    if (type == "composite") return Refuse(p["type"], "pipeline type 'composite' is valid Beam YAML but is not supported; omit type or use chain");
    if (type != "chain") return Err(p["type"], fmt::format("pipeline type '{}' is not allowed; allowed: chain (or omit it)", type));
    chain = true;
  }
  if (!chain) {
    for (const char* k : {"source", "sink", "extra_transforms"}) {
      if (p[k].IsDefined()) return Err(p[k], fmt::format("'{}' is only allowed with 'type: chain'", k));
    }
  }
  const YAML::Node list = p["transforms"];
  if (list.IsDefined() && !list.IsSequence()) return Err(list, "'transforms:' must be a list of transforms");
  std::vector<Pending> all;
  auto add = [&](const YAML::Node& n, bool in_chain) -> Status {
    Pending t;
    RETURN_IF_ERROR(ParseTransform(n, in_chain, t));
    all.push_back(std::move(t));
    return Status::OK();
  };
  if (chain && p["source"].IsDefined()) RETURN_IF_ERROR(add(p["source"], true));
  if (list.IsDefined()) for (const YAML::Node& n : list) RETURN_IF_ERROR(add(n, chain));
  if (chain && p["sink"].IsDefined()) RETURN_IF_ERROR(add(p["sink"], true));
  if (all.empty()) return Err(p, "the pipeline has no transforms");
  if (chain) {
    for (std::size_t i = 0; i < all.size(); ++i) {
      const TransformSpec& t = all[i].spec;
      if (i == 0 && !t.traits.is_source) {
        return Err(all[i].node, fmt::format("a chain starts with a source (ReadFrom..., Create); '{}' ({}) needs an input",
                                            t.config.name, t.config.type));
      }
      if (i > 0 && t.traits.is_source) return Err(all[i].node, fmt::format("'{}' is a source: only the first transform of a chain may be one", t.config.name));
      if (i > 0 && all[i - 1].spec.traits.is_sink) {
        return Err(all[i].node, fmt::format("'{}' follows the sink '{}', which has no output", t.config.name, all[i - 1].spec.config.name));
      }
      if (i > 0 && all[i - 1].spec.traits.no_main_output) {
        return Err(all[i].node, fmt::format("'{}' follows '{}' ({}) in a chain, but {} has only named outputs; move the "
                                            "transforms that read them to extra_transforms with input: {}.<output>",
                                            t.config.name, all[i - 1].spec.config.name, all[i - 1].spec.config.type,
                                            all[i - 1].spec.config.type, all[i - 1].spec.config.name));
      }
      if (i > 0) all[i].chain_prev = static_cast<int>(i - 1);  // by position: chains may repeat a type
    }
    const YAML::Node extra = p["extra_transforms"];
    if (extra.IsDefined()) {
      if (!extra.IsSequence()) return Err(extra, "'extra_transforms:' must be a list of transforms");
      for (const YAML::Node& n : extra) RETURN_IF_ERROR(add(n, false));
    }
  }
  ASSIGN_OR_RETURN(PipelineSpec spec, Wire(std::move(all)));
  spec.resource_hints = std::move(pipeline_hints);
  return spec;
}

// A repeated key (`batch_size: 8` then `batch_size: 64` would silently run with 8) or an alias
// bomb is refused with its place (dfw/common/yaml_document.h: every YAML file gets these checks).
Status CheckUniqueKeys(const YAML::Node& root, const std::string& file) {
  std::optional<YamlProblem> problem = FindYamlProblem(root);
  if (!problem) return Status::OK();
  if (problem->line < 0) return InvalidArgument(fmt::format("{}: {}", file, problem->message));
  return InvalidArgument(fmt::format("{}:{}:{}: {}", file, problem->line + 1, problem->column + 1, problem->message));
}

Result<PipelineSpec> LoadFrom(const StageRegistry& registry, const std::string& file, const std::string& base_dir,
                              const std::function<YAML::Node()>& parse) {
  try {
    YAML::Node root = parse();
    RETURN_IF_ERROR(CheckUniqueKeys(root, file));
    return Loader(registry, file, base_dir).Load(root);
  } catch (const YAML::BadFile&) {
    return NotFound(fmt::format("{}: cannot open the pipeline file", file));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return InvalidArgument(fmt::format("{}: {}", file, e.msg));
    return InvalidArgument(fmt::format("{}:{}:{}: YAML syntax error: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (...) {
    return FromCurrentException(file);
  }
}

}  // namespace

Result<PipelineSpec> LoadPipelineFile(const std::string& path, const StageRegistry& registry) {
  return LoadFrom(registry, path, "", [&] { return YAML::LoadFile(path); });
}

Result<PipelineSpec> LoadPipelineString(const std::string& yaml, const StageRegistry& registry, const std::string& file_name,
                                        const std::string& base_dir) {
  return LoadFrom(registry, file_name, base_dir, [&] { return YAML::Load(yaml); });
}

}  // namespace dfw
