// The Beam YAML loader's parts (loader*.cc): a file's nested composites and chains become scopes
// of named entries; every leaf transform becomes one TransformSpec of the flat graph the runner
// runs, its inputs resolved through the scopes as Beam's yaml_transform.Scope resolves them.
//
//   loader.cc            the entry points, the top level (`pipeline:`), shared key checks
//   loader_transform.cc  one leaf transform: type, config, error_handling, resource_hints, windowing
//   loader_scopes.cc     composites and chains at any depth: inputs, outputs, source/sink, extra_transforms
//   loader_wire.cc       references resolved to InputRefs, errors consumed, topological order, names
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "dfw/common/status.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"

namespace dfw::loader_internal {

struct Scope;

// A node that holds something: yaml-cpp's YAML::Node() is a (defined) null node, and a missing key
// gives an undefined one; both mean "not given" here.
inline bool Given(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

// One input reference as written, resolved by Wire in the scope it was written in: a name
// ("Parse", "Split.small", a composite's input tag), or (entry >= 0) the main output of that entry
// of `scope` (a chain's previous transform), or (leaf >= 0) the main output of that leaf directly.
struct RawRef {
  const Scope* scope = nullptr;
  std::string name;
  int entry = -1;
  int leaf = -1;
  YAML::Node at;  // where it was written, for messages
};

// One leaf transform of the flat graph.
struct Leaf {
  TransformSpec spec;
  YAML::Node node;
  std::vector<RawRef> refs;  // its inputs; for named inputs, one per config.input_names entry
  YAML::Node windowing;      // its `windowing:` still to apply (WindowInto leaves, ApplyWindowing)
  Scope* scope = nullptr;    // where it is a member, and as which entry
  int entry = -1;
};

// A named member of a scope: a leaf transform, or a composite (a chain is one) with a scope of its own.
struct Entry {
  std::string name;  // `name`, or the type when absent
  std::string type;
  YAML::Node node;
  int leaf = -1;       // >= 0: a leaf
  int main_leaf = -1;  // a leaf's main output is this leaf's (its output_schema's check, a source's WindowInto)
  int schema_leaf = -1;  // the ValidateWithSchema leaf of its `output_schema:` (AddOutputSchema)
  Scope* inner = nullptr;                 // a composite's scope
  std::map<std::string, RawRef> outputs;  // a composite's `output:` tags, references in `inner`
  bool implicit_outputs = false;          // a chain without `output:`: its last transform's outputs
  int last = -1;                          // that transform (an entry of `inner`)
};

struct Scope {
  const Scope* parent = nullptr;
  std::string path;  // "" at the top; "Outer/Inner/" inside composites (the flat names' prefix)
  std::string what;  // "the pipeline" or "composite 'Outer/Inner'", for messages
  std::vector<Entry> entries;
  // A composite's inputs by tag (`input: X` is tag "input"), references in `parent`.
  std::map<std::string, std::vector<RawRef>> inputs;
};

class Loader {
 public:
  Loader(const StageRegistry& registry, std::string file, std::string base_dir)
      : registry_(registry), file_(std::move(file)), base_dir_(std::move(base_dir)) {}

  Result<PipelineSpec> Load(const YAML::Node& root);

  // Messages: "file:line:col: ...".
  std::string Loc(const YAML::Node& n) const;
  Status Err(const YAML::Node& n, const std::string& msg) const { return InvalidArgument(Loc(n) + ": " + msg); }
  Status Refuse(const YAML::Node& n, const std::string& msg) const { return Unimplemented(Loc(n) + ": " + msg); }
  Status CheckKeys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& what,
                   const std::map<std::string, std::string>& refused) const;

 private:
  // loader_transform.cc
  Status ParseLeaf(const YAML::Node& n, Scope& scope, bool in_chain, const YAML::Node& windowing, Entry& entry);
  Status ParseConfig(const YAML::Node& n, const StageTypeInfo& info, StageConfig& cfg) const;
  // `error_handling: {output: NAME, threshold: R}` into cfg.error_output / error_threshold.
  Status ParseErrorHandling(const YAML::Node& eh, const std::string& what, StageConfig& cfg) const;
  // A leaf's `output_schema:` (in its config, on any transform, as Beam's expand_output_schema_transform):
  // a ValidateWithSchema leaf after it that its main output then is; the rows that fail go to the
  // transform's error output (its own error_handling's, or one given inside output_schema).
  Status AddOutputSchema(const YAML::Node& n, Entry& entry);
  Status ParseResourceHints(const YAML::Node& n, const std::string& what, std::vector<ResourceHintSpec>& out) const;
  Status ParseLeafInputs(const YAML::Node& n, const Scope& scope, Leaf& out) const;
  // A WindowInto leaf for a transform's `windowing:` (Beam's preprocess_windowing), reading `refs`.
  int AddWindowInto(const YAML::Node& windowing, const std::string& name, std::vector<RawRef> refs, const YAML::Node& at);
  std::vector<std::string> UserTypes() const;
  // loader_join_steps.cc: a Join of 3+ inputs keyed on different fields per step as two-input
  // Joins, left-deep; false (nothing added) when it cannot be split.
  Result<bool> SplitJoin(Leaf& join, Entry& entry, const StageTypeInfo& info);
  // Every leaf's pending `windowing:` as WindowInto leaves: before it (one per input) or, on a
  // source, after it (its entry's main output then is the WindowInto's).
  Status ApplyWindowing();

  // loader_scopes.cc
  // One member of `scope` (a leaf, a composite or a chain); `windowing`: inherited from a chain.
  // `chain_in`: inside a chain, what the chain feeds it (the previous member, or the chain's inputs).
  Status ParseEntry(const YAML::Node& n, Scope& scope, bool in_chain, std::vector<RawRef> chain_in,
                    const YAML::Node& windowing);
  Status ParseComposite(const YAML::Node& n, Scope& scope, bool in_chain, std::vector<RawRef> chain_in,
                        const YAML::Node& windowing, Entry& entry);
  Status ParseCompositeInputs(const YAML::Node& n, const Scope& outer, Scope& inner) const;
  // The members of a composite or chain (or of the pipeline): source, transforms, sink, extra_transforms.
  Status ParseMembers(const YAML::Node& n, Scope& inner, bool chain, const YAML::Node& windowing, Entry* composite);
  Scope& NewScope(const Scope* parent, const std::string& path, const std::string& what);

  // loader_wire.cc
  Result<std::vector<InputRef>> Resolve(const RawRef& ref, int depth);
  Result<std::vector<InputRef>> ResolveEntry(const Entry& e, const std::string& output,
                                             const RawRef& ref, int depth);
  Result<PipelineSpec> Wire();

  const StageRegistry& registry_;
  std::string file_;
  std::string base_dir_;  // StageConfig::base_dir of every transform
  std::vector<Leaf> leaves_;
  std::vector<std::unique_ptr<Scope>> scopes_;
  std::vector<bool> error_consumed_;
};

}  // namespace dfw::loader_internal
