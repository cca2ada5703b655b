// The Beam YAML loader: file → checked, wired, topologically sorted PipelineSpec (its parts:
// loader_internal.h). Every error starts with "file:line:column: " and says what is allowed.
#include <algorithm>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "dfw/common/yaml_document.h"
#include "dfw/pipeline/spec.h"
#include "loader_internal.h"

namespace dfw {
namespace loader_internal {

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

std::string Loader::Loc(const YAML::Node& n) const {
  if (!n.IsDefined() || n.Mark().is_null()) return fmt::format("{}:1:1", file_);
  return fmt::format("{}:{}:{}", file_, n.Mark().line + 1, n.Mark().column + 1);
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
    if (type != "chain" && type != "composite") {
      return Err(p["type"], fmt::format("pipeline type '{}' is not allowed; allowed: chain, composite (or omit it: composite)", type));
    }
    chain = type == "chain";
  }
  Scope& root_scope = NewScope(nullptr, "", "the pipeline");
  RETURN_IF_ERROR(ParseMembers(p, root_scope, chain, YAML::Node(), nullptr));
  RETURN_IF_ERROR(ApplyWindowing());
  ASSIGN_OR_RETURN(PipelineSpec spec, Wire());
  spec.resource_hints = std::move(pipeline_hints);
  return spec;
}

}  // namespace loader_internal

namespace {

using loader_internal::Loader;

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
