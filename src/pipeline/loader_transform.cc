// One leaf transform of a Beam YAML pipeline: type, config, error_handling, resource_hints,
// windowing, its written inputs (loader_internal.h).
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "dfw/stages/combine.h"
#include "dfw/stages/config_yaml.h"
#include "dfw/stages/sql.h"
#include "loader_internal.h"
#include "dfw/pipeline/dependencies.h"

namespace dfw::loader_internal {
namespace {

// Valid Beam YAML transform types that dfworker refuses, with why.
const std::map<std::string, std::string>& RefusedLeafTypes() {
  static const std::map<std::string, std::string> kTypes = {
      {"PyTransform", "arbitrary Python PTransforms need a Python SDK"},
      {"StripErrorMetadata", "not implemented yet"},
  };
  return kTypes;
}

// Beam's hint names (apache_beam/transforms/resources.py); the options module parses their values
// (src/options/resource_hints.cc keeps the same list).
const std::vector<std::string>& KnownResourceHints() {
  static const std::vector<std::string> kKnown = {"accelerator", "min_ram", "cpu_count"};
  return kKnown;
}

bool IsIdentifier(const std::string& tag) {
  bool ident = !tag.empty() && (std::isalpha(static_cast<unsigned char>(tag[0])) || tag[0] == '_');
  for (char c : tag) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  return ident;
}

}  // namespace

std::vector<std::string> Loader::UserTypes() const {
  std::vector<std::string> types = registry_.Types();
  types.erase(std::remove_if(types.begin(), types.end(), [](const std::string& t) { return IsInternalStageType(t); }),
              types.end());
  types.push_back("chain");
  types.push_back("composite");
  return types;
}

Status Loader::ParseConfig(const YAML::Node& n, const StageTypeInfo& info, StageConfig& cfg) const {
  std::string what = fmt::format("transform '{}' ({}) config", cfg.name, cfg.type);
  const bool absent = !n.IsDefined() || n.IsNull();
  if (!absent && !n.IsMap()) return Err(n, what + ": expected a mapping of parameters");
  // The stage's config without `dependencies` (installed before the load, dfw/pipeline/dependencies.h)
  // and without `output_schema` (a check after the stage, AddOutputSchema; a stage that takes it
  // itself, Create, checks its elements at load too when the schema routes no errors): the same key
  // and value nodes, their marks kept, in a new mapping (never an assignment to a yaml-cpp node that
  // exists, which would rewrite the document's node).
  const bool own_schema = std::find(info.allowed_keys.begin(), info.allowed_keys.end(), "output_schema") != info.allowed_keys.end();
  auto stripped = [&](const std::string& key) {
    if (key == "dependencies") return true;
    if (key != "output_schema") return false;
    const YAML::Node schema = n["output_schema"];
    return !own_schema || (schema.IsMap() && schema["error_handling"].IsDefined());
  };
  const YAML::Node yaml_config = [&] {
    if (absent) return YAML::Node(YAML::NodeType::Map);
    bool any = false;
    for (const auto& kv : n) any = any || (kv.first.IsScalar() && stripped(kv.first.Scalar()));
    if (!any) return n;
    YAML::Node rest(YAML::NodeType::Map);
    for (const auto& kv : n) {
      if (!(kv.first.IsScalar() && stripped(kv.first.Scalar()))) rest.force_insert(kv.first, kv.second);
    }
    return rest;
  }();
  std::vector<std::string> allowed = info.allowed_keys;
  if (!absent && n["dependencies"].IsDefined()) {
    if (std::string problem = DependencyListProblem(n["dependencies"]); !problem.empty()) {
      return Err(n["dependencies"], what + ": " + problem);
    }
  }
  for (const auto& kv : yaml_config) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (key != "error_handling") continue;
    if (!info.traits.can_fail_per_record) {
      return Err(kv.first, fmt::format("{}: {} has no per-record failures, so 'error_handling' is not allowed here",
                                       what, cfg.type));
    }
    RETURN_IF_ERROR(ParseErrorHandling(kv.second, what, cfg));
  }
  if (info.traits.can_fail_per_record) allowed.push_back("error_handling");
  // WindowInto takes its windowing as `windowing:` beside `config:` or inside it (Beam moves the one
  // to the other).
  if (cfg.type == "WindowInto") allowed.push_back("windowing");
  RETURN_IF_ERROR(CheckKeys(yaml_config, allowed, what, {}));
  for (const std::string& req : info.required_keys) {
    if (!yaml_config[req].IsDefined()) return Err(n.IsDefined() ? n : YAML::Node(), what + ": '" + req + "' is required");
  }
  cfg.config = ConfigNodeFromYaml(yaml_config);
  return Status::OK();
}

Status Loader::ParseErrorHandling(const YAML::Node& eh, const std::string& what, StageConfig& cfg) const {
  if (!eh.IsMap()) return Err(eh, what + ": error_handling must be a mapping {output: NAME, threshold: R}");
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
  return Status::OK();
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

Status Loader::ParseLeafInputs(const YAML::Node& n, const Scope& scope, Leaf& out) const {
  auto ref = [&](const YAML::Node& item) { return RawRef{&scope, item.Scalar(), -1, -1, item}; };
  if (out.spec.traits.named_inputs) {
    if (!n.IsMap()) {
      return Err(n, fmt::format("input: {} takes named inputs, a mapping of tag to transform: input: {{left: A, right: B}}",
                                out.spec.config.type));
    }
    for (const auto& kv : n) {
      const std::string tag = kv.first.IsScalar() ? kv.first.Scalar() : "";
      // Beam names each input as a SQL table: an identifier.
      if (!IsIdentifier(tag)) return Err(kv.first, fmt::format("input: tag '{}' must be an identifier (letters, digits, _; not first a digit)", tag));
      auto& names = out.spec.config.input_names;
      if (std::find(names.begin(), names.end(), tag) != names.end()) return Err(kv.first, "input: tag '" + tag + "' repeats");
      if (!kv.second.IsScalar()) return Err(kv.second, "input: '" + tag + "' must name one transform");
      names.push_back(tag);
      out.refs.push_back(ref(kv.second));
    }
    return Status::OK();
  }
  // One input, several (an implicit Flatten, as Beam inserts one for a list), or Beam's normalised
  // form {input: X} (any tags: their inputs are flattened as a list's).
  auto add = [&](const YAML::Node& v) -> Status {
    if (v.IsScalar()) {
      out.refs.push_back(ref(v));
      return Status::OK();
    }
    if (!v.IsSequence()) return Err(v, "input: expected a transform name or a list of names");
    if (v.size() == 0) return Err(v, "input: an empty list; name at least one transform");
    for (const YAML::Node& item : v) {
      if (!item.IsScalar()) return Err(item, "input: list items must be transform names");
      out.refs.push_back(ref(item));
    }
    return Status::OK();
  };
  if (n.IsMap()) {
    if (n.size() == 0) return Err(n, "input: an empty mapping; name at least one transform");
    if (n.size() > 1 && out.spec.config.type == kSqlType) {  // Beam: each tag is a table of the query
      for (const auto& kv : n) {
        const std::string tag = kv.first.IsScalar() ? kv.first.Scalar() : "";
        if (!IsIdentifier(tag)) return Err(kv.first, fmt::format("input: tag '{}' must be an identifier (letters, digits, _; not first a digit)", tag));
        if (!kv.second.IsScalar()) return Err(kv.second, "input: '" + tag + "' must name one transform");
        const auto& names = out.spec.config.input_names;
        if (std::find(names.begin(), names.end(), tag) != names.end()) return Err(kv.first, "input: tag '" + tag + "' repeats");
        out.spec.config.input_names.push_back(tag);
        out.refs.push_back(ref(kv.second));
      }
      return Status::OK();
    }
    if (n.size() > 1 && out.spec.config.type != "Flatten") {
      return Err(n, fmt::format("input: {} takes one input, not {} tags; name one transform (input: X), or a list "
                                "of them to flatten", out.spec.config.type, n.size()));
    }
    for (const auto& kv : n) RETURN_IF_ERROR(add(kv.second));
    return Status::OK();
  }
  return add(n);
}

Status Loader::ParseLeaf(const YAML::Node& n, Scope& scope, bool in_chain, const YAML::Node& windowing, Entry& entry) {
  RETURN_IF_ERROR(CheckKeys(n, {"type", "name", "input", "config", "resource_hints", "windowing"}, "transform",
                            {{"dependencies", "only inside the transform's config: config: {dependencies: [...]}"}}));
  Leaf out;
  StageConfig& cfg = out.spec.config;
  cfg.type = entry.type;
  cfg.name = scope.path + entry.name;
  cfg.file = file_;
  cfg.base_dir = base_dir_;
  cfg.line = n.Mark().is_null() ? 1 : n.Mark().line + 1;
  cfg.column = n.Mark().is_null() ? 1 : n.Mark().column + 1;
  out.node = n;
  const StageTypeInfo* info =
      IsInternalStageType(cfg.type) || IsInternalSqlType(cfg.type) ? nullptr : registry_.Find(cfg.type);
  if (info == nullptr) {
    auto it = RefusedLeafTypes().find(cfg.type);
    if (it != RefusedLeafTypes().end()) {
      return Refuse(n["type"], fmt::format("transform type '{}' is valid Beam YAML but is not supported by dfworker: {}",
                                           cfg.type, it->second));
    }
    return Err(n["type"], fmt::format("unknown transform type '{}'{}; available: {}", cfg.type,
                                      DidYouMeanSuffix(cfg.type, UserTypes()), Join(UserTypes())));
  }
  out.spec.traits = info->traits;
  const YAML::Node own_windowing = n["windowing"];
  const YAML::Node effective = Given(own_windowing) ? own_windowing : windowing;
  RETURN_IF_ERROR(ParseConfig(n["config"], *info, cfg));
  if (cfg.type == "WindowInto") {
    const ConfigNode in_config = cfg.config["windowing"];
    if (in_config.IsDefined() && Given(own_windowing)) {
      return Err(own_windowing, "WindowInto: give 'windowing' once, beside 'config' or inside it");
    }
    if (in_config.IsDefined()) {
      cfg.windowing = in_config;
      ConfigNode rest = ConfigNode::Map();
      for (const ConfigEntry& e : cfg.config.entries()) {
        if (e.key.Scalar() != "windowing") rest.AddEntry(e.key, e.value);
      }
      cfg.config = std::move(rest);
    } else if (Given(effective)) {
      cfg.windowing = ConfigNodeFromYaml(effective);
    }
  } else if (cfg.type == kCombineType && !(effective.IsMap() && effective["type"].IsScalar() &&
                                            effective["type"].Scalar() == "sliding")) {
    // The Combine windows its own input (sessions merge there); sliding windows copy each row into
    // several windows, which a WindowInto before it does.
    if (Given(effective)) cfg.windowing = ConfigNodeFromYaml(effective);
  } else if (Given(effective)) {
    out.windowing = effective;  // Beam: a WindowInto on each input (on a source: after it)
  }
  if (n["resource_hints"].IsDefined()) {
    RETURN_IF_ERROR(ParseResourceHints(n["resource_hints"], fmt::format("transform '{}' ({})", cfg.name, cfg.type),
                                       out.spec.resource_hints));
  }
  if (n["input"].IsDefined()) {
    if (in_chain) {
      return Err(n["input"], fmt::format("transform '{}' is part of a chain: inside a chain inputs are implicit; remove "
                                         "'input' (or move the transform to extra_transforms)", cfg.name));
    }
    if (info->traits.is_source) return Err(n["input"], fmt::format("{} is a source and takes no input", cfg.type));
    RETURN_IF_ERROR(ParseLeafInputs(n["input"], scope, out));
  } else if (info->traits.named_inputs) {
    return Err(n, fmt::format("transform '{}' ({}) takes named inputs: input: {{left: A, right: B}} (two or more){}",
                              cfg.name, cfg.type, in_chain ? "; move it out of the chain to extra_transforms" : ""));
  } else if (!in_chain && !info->traits.is_source) {
    return Err(n, fmt::format("transform '{}' ({}): 'input' is required outside a chain", cfg.name, cfg.type));
  }
  out.scope = &scope;
  out.entry = static_cast<int>(scope.entries.size());  // the entry this leaf becomes (ParseEntry appends it)
  if (info->check) {
    Status checked = info->check(cfg);
    if (!checked.ok() && cfg.type == "Join") {  // keyed differently per step: one Join per step
      ASSIGN_OR_RETURN(bool split, SplitJoin(out, entry, *info));
      if (split) return Status::OK();
    }
    RETURN_IF_ERROR(checked);
  }
  if (cfg.type == kSqlType) {  // a query over every row: its steps around Combine's shuffle (dfw/stages/sql.h)
    ASSIGN_OR_RETURN(std::vector<SqlStep> steps, SqlShuffleSteps(cfg));
    const int base = static_cast<int>(leaves_.size());
    for (SqlStep& s : steps) {
      Leaf leaf;
      leaf.spec.config = std::move(s.config);
      const StageTypeInfo* step = registry_.Find(leaf.spec.config.type);
      if (step == nullptr) return Err(n["type"], "Sql: step type '" + leaf.spec.config.type + "' is not registered");
      leaf.spec.traits = step->traits;
      if (step->check) RETURN_IF_ERROR(step->check(leaf.spec.config));
      leaf.node = n;
      leaf.scope = out.scope;
      leaf.entry = out.entry;
      for (int from : s.inputs) {
        if (from >= 0) {
          leaf.refs.push_back(RawRef{nullptr, "", -1, base + from, n});
        } else if (cfg.input_names.size() > 1) {  // one input of a mapping: its tag's reference
          leaf.refs.push_back(out.refs[static_cast<std::size_t>(-1 - from)]);
          leaf.windowing = out.windowing;
        } else {
          leaf.refs.insert(leaf.refs.end(), out.refs.begin(), out.refs.end());
          leaf.windowing = out.windowing;
        }
      }
      leaves_.push_back(std::move(leaf));
    }
    if (!steps.empty()) {
      entry.leaf = base;  // a chain feeds the first step
      entry.main_leaf = static_cast<int>(leaves_.size()) - 1;
      return Status::OK();
    }
  }
  if (info->named_outputs) {
    ASSIGN_OR_RETURN(out.spec.outputs, info->named_outputs(cfg));
    for (const std::string& o : out.spec.outputs) {
      if (!cfg.error_output.empty() && o == cfg.error_output) {
        return Err(n["config"], fmt::format("transform '{}' ({}): error_handling output '{}' cannot be among its outputs {}",
                                            cfg.name, cfg.type, o, Join(out.spec.outputs)));
      }
    }
  }
  entry.leaf = entry.main_leaf = static_cast<int>(leaves_.size());
  leaves_.push_back(std::move(out));
  return Status::OK();
}

Status Loader::AddOutputSchema(const YAML::Node& n, Entry& entry) {
  const YAML::Node config = n["config"];
  if (!config.IsDefined() || !config.IsMap() || !config["output_schema"].IsDefined()) return Status::OK();
  const YAML::Node schema = config["output_schema"];
  const TransformSpec& t = leaves_[static_cast<std::size_t>(entry.leaf)].spec;
  const std::string what = fmt::format("transform '{}' ({}) output_schema", t.config.name, t.config.type);
  if (!schema.IsMap()) return Err(schema, what + ": expected a JSON Schema mapping, e.g. {type: object, properties: {...}}");
  if (t.traits.is_sink || t.traits.no_main_output) {
    return Refuse(schema, fmt::format("{}: {} has no main output to check; put a ValidateWithSchema after the output "
                                      "to check", what, t.config.type));
  }
  const StageTypeInfo* info = registry_.Find("ValidateWithSchema");
  if (info == nullptr) return Err(schema, what + ": ValidateWithSchema is not available");
  Leaf v;
  StageConfig& cfg = v.spec.config;
  cfg.type = "ValidateWithSchema";
  cfg.name = t.config.name + "/OutputSchema";
  cfg.file = file_;
  cfg.base_dir = base_dir_;
  cfg.line = schema.Mark().is_null() ? 1 : schema.Mark().line + 1;
  cfg.column = schema.Mark().is_null() ? 1 : schema.Mark().column + 1;
  // Rows failing the schema join the transform's own error output; a transform without one (Create)
  // may name one inside output_schema.
  YAML::Node body(YAML::NodeType::Map);
  for (const auto& kv : schema) {
    if (kv.first.IsScalar() && kv.first.Scalar() == "error_handling") {
      if (!t.config.error_output.empty()) {
        return Err(kv.first, fmt::format("{}: the transform has error_handling (output '{}'), where rows that fail the "
                                         "schema go too; remove error_handling from output_schema",
                                         what, t.config.error_output));
      }
      RETURN_IF_ERROR(ParseErrorHandling(kv.second, what, cfg));
      continue;
    }
    body.force_insert(kv.first, kv.second);
  }
  if (cfg.error_output.empty()) {
    cfg.error_output = t.config.error_output;
    cfg.error_threshold = t.config.error_threshold;
  }
  for (const std::string& o : t.outputs) {
    if (o == cfg.error_output) {
      return Err(schema, fmt::format("{}: error_handling output '{}' cannot be among the transform's outputs {}", what,
                                     o, Join(t.outputs)));
    }
  }
  YAML::Node wrapped(YAML::NodeType::Map);
  wrapped.force_insert(YAML::Node("schema"), body);
  cfg.config = ConfigNodeFromYaml(wrapped);
  v.spec.traits = info->traits;
  if (info->check) RETURN_IF_ERROR(info->check(cfg));
  v.node = schema;
  v.refs.push_back(RawRef{nullptr, "", -1, entry.main_leaf, schema});
  v.scope = leaves_[static_cast<std::size_t>(entry.leaf)].scope;
  v.entry = leaves_[static_cast<std::size_t>(entry.leaf)].entry;
  leaves_.push_back(std::move(v));
  entry.main_leaf = entry.schema_leaf = static_cast<int>(leaves_.size()) - 1;
  return Status::OK();
}

int Loader::AddWindowInto(const YAML::Node& windowing, const std::string& name, std::vector<RawRef> refs,
                          const YAML::Node& at) {
  Leaf w;
  StageConfig& cfg = w.spec.config;
  cfg.type = "WindowInto";
  cfg.name = name;
  cfg.file = file_;
  cfg.base_dir = base_dir_;
  cfg.line = at.Mark().is_null() ? 1 : at.Mark().line + 1;
  cfg.column = at.Mark().is_null() ? 1 : at.Mark().column + 1;
  cfg.config = ConfigNode::Map();
  cfg.windowing = ConfigNodeFromYaml(windowing);
  if (const StageTypeInfo* info = registry_.Find("WindowInto")) w.spec.traits = info->traits;
  w.node = at;
  w.refs = std::move(refs);
  leaves_.push_back(std::move(w));
  return static_cast<int>(leaves_.size()) - 1;
}

Status Loader::ApplyWindowing() {
  const StageTypeInfo* info = registry_.Find("WindowInto");
  const std::size_t n = leaves_.size();  // the WindowInto leaves added below need nothing more
  for (std::size_t i = 0; i < n; ++i) {
    if (!Given(leaves_[i].windowing)) continue;
    if (info == nullptr) return Err(leaves_[i].windowing, "windowing: WindowInto is not available");
    const YAML::Node windowing = leaves_[i].windowing;
    const std::string name = leaves_[i].spec.config.name;
    int first = -1;
    if (leaves_[i].spec.traits.is_source) {
      // (After the source's output_schema check, when it has one: the entry's main output so far.)
      Entry& source = leaves_[i].scope->entries[static_cast<std::size_t>(leaves_[i].entry)];
      first = AddWindowInto(windowing, name + "/WindowInto", {RawRef{nullptr, "", -1, source.main_leaf, windowing}}, windowing);
      source.main_leaf = first;
    } else {
      std::vector<RawRef> refs = std::move(leaves_[i].refs);
      leaves_[i].refs.clear();
      for (std::size_t k = 0; k < refs.size(); ++k) {
        const auto& names = leaves_[i].spec.config.input_names;
        const std::string tag = k < names.size() ? names[k] : std::to_string(k);
        int w = AddWindowInto(windowing, fmt::format("{}/WindowInto[{}]", name, tag), {refs[k]}, windowing);
        if (first < 0) first = w;
        leaves_[i].refs.push_back(RawRef{nullptr, "", -1, w, refs[k].at});
      }
    }
    if (first >= 0 && info->check) RETURN_IF_ERROR(info->check(leaves_[static_cast<std::size_t>(first)].spec.config));
  }
  return Status::OK();
}

}  // namespace dfw::loader_internal
