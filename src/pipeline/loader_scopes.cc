// Composites and chains at any depth (Beam's yaml_transform: expand_composite_transform,
// chain_as_composite, normalize_source_sink, normalize_inputs_outputs, preprocess_windowing).
//
// A composite is a scope: its members see each other and the composite's input tags (`input: X`
// is the tag "input"), nothing outside. A chain is a composite whose members are wired in order:
// the first reads the chain's inputs, each next one the previous; its outputs are its last
// member's unless it declares `output:`. Every leaf becomes one transform of the flat graph, named
// "Outer/Inner/Name" as Beam labels nested transforms.
#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "loader_internal.h"

namespace dfw::loader_internal {

Scope& Loader::NewScope(const Scope* parent, const std::string& path, const std::string& what) {
  scopes_.push_back(std::make_unique<Scope>());
  Scope& s = *scopes_.back();
  s.parent = parent;
  s.path = path;
  s.what = what;
  return s;
}

Status Loader::ParseEntry(const YAML::Node& n, Scope& scope, bool in_chain, std::vector<RawRef> chain_in,
                          const YAML::Node& windowing) {
  if (!n.IsMap()) return Err(n, "a transform must be a mapping with at least 'type'");
  if (!n["type"].IsDefined() || !n["type"].IsScalar()) return Err(n, "transform: 'type' is required (e.g. ReadFromJson)");
  Entry e;
  e.type = n["type"].Scalar();
  e.name = n["name"].IsDefined() ? (n["name"].IsScalar() ? n["name"].Scalar() : "") : e.type;
  if (e.name.empty()) return Err(n["name"], "transform 'name' must be a non-empty string");
  e.node = n;
  if (e.type == "composite" || e.type == "chain") {
    RETURN_IF_ERROR(ParseComposite(n, scope, in_chain, std::move(chain_in), windowing, e));
  } else {
    if (n["transforms"].IsDefined()) {
      return Err(n["transforms"], fmt::format("'transforms' belongs to a transform of type composite or chain, not {}", e.type));
    }
    RETURN_IF_ERROR(ParseLeaf(n, scope, in_chain, windowing, e));
    std::vector<RawRef>& refs = leaves_[static_cast<std::size_t>(e.leaf)].refs;
    refs.insert(refs.begin(), chain_in.begin(), chain_in.end());
    RETURN_IF_ERROR(AddOutputSchema(n, e));
  }
  scope.entries.push_back(std::move(e));
  return Status::OK();
}

Status Loader::ParseCompositeInputs(const YAML::Node& n, const Scope& outer, Scope& inner) const {
  auto add = [&](const std::string& tag, const YAML::Node& v) -> Status {
    std::vector<RawRef>& refs = inner.inputs[tag];
    if (v.IsScalar()) {
      refs.push_back(RawRef{&outer, v.Scalar(), -1, -1, v});
      return Status::OK();
    }
    if (!v.IsSequence() || v.size() == 0) return Err(v, "input: expected a transform name or a non-empty list of names");
    for (const YAML::Node& item : v) {
      if (!item.IsScalar()) return Err(item, "input: list items must be transform names");
      refs.push_back(RawRef{&outer, item.Scalar(), -1, -1, item});
    }
    return Status::OK();
  };
  if (!n.IsMap()) return add("input", n);  // Beam's normalize_inputs_outputs: `input: X` is {input: X}
  for (const auto& kv : n) {
    if (!kv.first.IsScalar() || kv.first.Scalar().empty()) return Err(kv.first, "input: tags must be names");
    if (inner.inputs.count(kv.first.Scalar())) return Err(kv.first, "input: tag '" + kv.first.Scalar() + "' repeats");
    RETURN_IF_ERROR(add(kv.first.Scalar(), kv.second));
  }
  return Status::OK();
}

Status Loader::ParseComposite(const YAML::Node& n, Scope& scope, bool in_chain, std::vector<RawRef> chain_in,
                              const YAML::Node& windowing, Entry& e) {
  const bool chain = e.type == "chain";
  RETURN_IF_ERROR(CheckKeys(n, {"type", "name", "input", "output", "transforms", "source", "sink", "extra_transforms", "windowing"},
                            e.type + " transform '" + e.name + "'",
                            {{"config", "a composite has no config: its transforms have"},
                             {"resource_hints", "put resource_hints on the transforms inside"}}));
  Scope& inner = NewScope(&scope, scope.path + e.name + "/", fmt::format("{} '{}'", e.type, scope.path + e.name));
  e.inner = &inner;
  if (n["input"].IsDefined()) {
    if (in_chain) {
      return Err(n["input"], fmt::format("transform '{}' is part of a chain: inside a chain inputs are implicit; remove "
                                         "'input' (or move the transform to extra_transforms)", e.name));
    }
    RETURN_IF_ERROR(ParseCompositeInputs(n["input"], scope, inner));
  } else if (!chain_in.empty()) {
    inner.inputs["input"] = std::move(chain_in);
  }
  const YAML::Node own = n["windowing"];
  const YAML::Node effective = Given(own) ? own : windowing;
  YAML::Node pass_down;  // a chain windows its first transform (Beam's preprocess_windowing)
  if (Given(effective)) {
    if (chain && inner.inputs.empty()) {
      pass_down = effective;
    } else if (inner.inputs.empty()) {
      return Refuse(effective, fmt::format("windowing on {} '{}', which has no inputs, is not supported: put it on its "
                                           "sources or add a WindowInto", e.type, e.name));
    } else {
      for (auto& [tag, refs] : inner.inputs) {  // a WindowInto on each input
        int w = AddWindowInto(effective, fmt::format("{}WindowInto[{}]", inner.path, tag), std::move(refs), effective);
        refs = {RawRef{nullptr, "", -1, w, effective}};
      }
    }
  }
  RETURN_IF_ERROR(ParseMembers(n, inner, chain, pass_down, &e));
  const YAML::Node out = n["output"];
  if (out.IsDefined()) {
    e.implicit_outputs = false;
    if (out.IsScalar()) {
      e.outputs["output"] = RawRef{&inner, out.Scalar(), -1, -1, out};
    } else if (out.IsMap() && out.size() > 0) {
      for (const auto& kv : out) {
        if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
          return Err(kv.first, "output: each tag maps to one output of a transform inside, e.g. output: {good: Parse}");
        }
        e.outputs[kv.first.Scalar()] = RawRef{&inner, kv.second.Scalar(), -1, -1, kv.second};
      }
    } else {
      return Err(out, "output: expected the name of a transform inside, or a mapping of tag to such a name");
    }
  }
  return Status::OK();
}

Status Loader::ParseMembers(const YAML::Node& n, Scope& inner, bool chain, const YAML::Node& windowing, Entry* composite) {
  const YAML::Node list = n["transforms"];
  if (list.IsDefined() && !list.IsSequence()) return Err(list, "'transforms:' must be a list of transforms");
  // Beam's normalize_source_sink: the source first, the sink last.
  std::vector<YAML::Node> members;
  if (n["source"].IsDefined()) members.push_back(n["source"]);
  if (list.IsDefined()) for (const YAML::Node& t : list) members.push_back(t);
  if (n["sink"].IsDefined()) members.push_back(n["sink"]);
  if (members.empty()) return Err(list.IsDefined() ? list : n, inner.what + " has no transforms");
  if (!chain) {
    if (n["extra_transforms"].IsDefined()) return Err(n["extra_transforms"], "'extra_transforms' is only allowed with 'type: chain'");
    for (const YAML::Node& m : members) RETURN_IF_ERROR(ParseEntry(m, inner, false, {}, YAML::Node()));
    return Status::OK();
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    std::vector<RawRef> in;
    if (i > 0) {
      in.push_back(RawRef{&inner, "", static_cast<int>(i - 1), -1, members[i]});
    } else {
      for (const auto& kv : inner.inputs) in.push_back(RawRef{&inner, kv.first, -1, -1, members[i]});
    }
    const bool has_input = !in.empty();
    RETURN_IF_ERROR(ParseEntry(members[i], inner, true, std::move(in), i == 0 ? windowing : YAML::Node()));
    const Entry& e = inner.entries.back();
    if (e.leaf < 0) continue;
    const TransformSpec& t = leaves_[static_cast<std::size_t>(e.leaf)].spec;
    if (i == 0 && !has_input && !t.traits.is_source) {
      return Err(members[i], fmt::format("a chain starts with a source (ReadFrom..., Create); '{}' ({}) needs an input",
                                         t.config.name, t.config.type));
    }
    if (i > 0 && t.traits.is_source) {
      return Err(members[i], fmt::format("'{}' is a source: only the first transform of a chain may be one", t.config.name));
    }
    if (i > 0 && inner.entries[i - 1].leaf >= 0) {
      const TransformSpec& prev = leaves_[static_cast<std::size_t>(inner.entries[i - 1].leaf)].spec;
      if (prev.traits.is_sink) {
        return Err(members[i], fmt::format("'{}' follows the sink '{}', which has no output", t.config.name, prev.config.name));
      }
      if (prev.traits.no_main_output) {
        return Err(members[i], fmt::format("'{}' follows '{}' ({}) in a chain, but {} has only named outputs; move the "
                                           "transforms that read them to extra_transforms with input: {}.<output>",
                                           t.config.name, prev.config.name, prev.config.type, prev.config.type,
                                           inner.entries[i - 1].name));
      }
    }
  }
  if (composite != nullptr) {
    composite->implicit_outputs = true;
    composite->last = static_cast<int>(members.size()) - 1;
  }
  const YAML::Node extra = n["extra_transforms"];
  if (extra.IsDefined()) {
    if (!extra.IsSequence()) return Err(extra, "'extra_transforms:' must be a list of transforms");
    for (const YAML::Node& m : extra) RETURN_IF_ERROR(ParseEntry(m, inner, false, {}, YAML::Node()));
  }
  return Status::OK();
}

}  // namespace dfw::loader_internal
