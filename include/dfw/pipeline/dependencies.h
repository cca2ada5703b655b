// Beam YAML's `dependencies:` (pip requirements a transform's Python needs), read before the
// pipeline loads: the interpreter that loads its callables must already see the packages.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "dfw/common/status.h"

namespace dfw {

// Every transform's `config: dependencies: [...]` at any depth (composites and chains included),
// without repeats, as Beam's yaml_transform.extract_extra_dependencies reads them (one
// list per transform; dfworker has one interpreter per process, so the union). A file that does
// not parse gives an empty list: the loader reports it. kInvalidArgument "file:line:col: ..." for a
// value that is not a list of requirement strings.
Result<std::vector<std::string>> PythonDependencies(const std::string& yaml, const std::string& file);

// The check both PythonDependencies and the loader make of one `dependencies:` value: a non-empty
// list of non-empty strings. "" when fine, else what is wrong.
std::string DependencyListProblem(const YAML::Node& value);

}  // namespace dfw
