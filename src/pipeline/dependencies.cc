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
  // Iterative, with a cap on nodes visited: aliases can make a small file a huge tree.
  std::vector<YAML::Node> stack = {root};
  int64_t visited = 0;
  while (!stack.empty() && ++visited < (int64_t{1} << 22)) {
    const YAML::Node n = std::move(stack.back());
    stack.pop_back();
    if (n.IsSequence()) {
      for (const YAML::Node& child : n) stack.push_back(child);
      continue;
    }
    if (!n.IsMap()) continue;
    const YAML::Node config = n["type"].IsDefined() ? n["config"] : YAML::Node();
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
    for (const auto& kv : n) stack.push_back(kv.second);
  }
  return out;
}

}  // namespace dfw
