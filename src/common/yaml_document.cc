#include "dfw/common/yaml_document.h"

#include <unordered_map>
#include <vector>

namespace dfw {

std::optional<YamlProblem> FindYamlProblem(const YAML::Node& root, const YamlLimits& limits) {
  int64_t visited = 0;
  std::vector<YAML::Node> todo{root};
  while (!todo.empty()) {
    if (++visited > limits.max_nodes) {
      return YamlProblem{-1, -1,
                         "more than " + std::to_string(limits.max_nodes) + " YAML nodes (aliases expanding?); refusing to load it"};
    }
    YAML::Node n = todo.back();
    todo.pop_back();
    if (n.IsSequence()) {
      for (const YAML::Node& child : n) todo.push_back(child);
    } else if (n.IsMap()) {
      std::unordered_map<std::string, YAML::Mark> seen;
      for (const auto& kv : n) {
        if (kv.first.IsScalar()) {
          auto [it, fresh] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
          if (!fresh) {
            const YAML::Mark& m = kv.first.Mark();
            return YamlProblem{m.line, m.column,
                               "duplicate key '" + kv.first.Scalar() + "' (first at line " + std::to_string(it->second.line + 1) +
                                   ", column " + std::to_string(it->second.column + 1) +
                                   "); keys of a mapping must be unique, or the first value would silently win"};
          }
        }
        todo.push_back(kv.second);
      }
    }
  }
  return std::nullopt;
}

}  // namespace dfw
