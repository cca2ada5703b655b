#include "dfw/pipeline/dependencies.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <utility>

namespace dfw {

std::string DependencyListProblem(const YAML::Node& value) {
  constexpr const char* kExample = "; write e.g. dependencies: [numpy, 'pyarrow>=14']";
  if (!value.IsSequence()) return std::string("'dependencies' must be a list of pip requirements") + kExample;
  if (value.size() == 0) return std::string("'dependencies' is an empty list") + kExample;
  for (const YAML::Node& item : value) {
    if (!item.IsScalar() || item.Scalar().empty()) {
      return std::string("every entry of 'dependencies' must be one requirement string") + kExample;
    }
  }
  return "";
}

Result<std::vector<std::string>> PythonDependencies(const std::string& yaml, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const std::exception&) {
    return std::vector<std::string>{};  // the loader says what is wrong with the file
  }
  std::vector<std::string> out;
  // Only transforms: `pipeline:` and, at any depth, a composite's or chain's source, sink, transforms
  // and extra_transforms (a Create's elements may hold any mapping). Iterative, and capped: aliases
  // can make a small file a huge tree.
  std::vector<YAML::Node> stack;
  if (root.IsMap() && root["pipeline"].IsMap()) stack.push_back(root["pipeline"]);
  if (root.IsMap() && root["pipeline"].IsSequence()) {  // a bare list of transforms
    for (const YAML::Node& t : root["pipeline"]) stack.push_back(t);
  }
  int64_t visited = 0;
  while (!stack.empty() && ++visited < (int64_t{1} << 22)) {
    const YAML::Node n = std::move(stack.back());
    stack.pop_back();
    if (!n.IsMap()) continue;
    const YAML::Node config = n["config"];
    if (config.IsDefined() && config.IsMap() && config["dependencies"].IsDefined()) {
      const YAML::Node deps = config["dependencies"];
      if (std::string problem = DependencyListProblem(deps); !problem.empty()) {
        const YAML::Mark m = deps.Mark();
        return InvalidArgument(file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + problem);
      }
      for (const YAML::Node& item : deps) {
        if (std::find(out.begin(), out.end(), item.Scalar()) == out.end()) out.push_back(item.Scalar());
      }
    }
    for (const char* key : {"source", "sink"}) {
      if (n[key].IsDefined()) stack.push_back(n[key]);
    }
    for (const char* key : {"transforms", "extra_transforms"}) {
      if (n[key].IsDefined() && n[key].IsSequence()) {
        for (const YAML::Node& t : n[key]) stack.push_back(t);
      }
    }
  }
  return out;
}

}  // namespace dfw
