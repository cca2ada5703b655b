// The one bridge from yaml-cpp to a transform's ConfigNode. The pipeline loader converts each
// transform's `config:` and `windowing:` with it; tests that build a StageConfig by hand use it too.
// Stages never see a YAML::Node.
#pragma once

#include <yaml-cpp/yaml.h>

#include "dfw/stages/config_node.h"

namespace dfw {

// A deep copy of `node`: scalars keep their text and whether they were quoted, every node its
// position. An undefined YAML node gives an undefined ConfigNode. Does not throw.
ConfigNode ConfigNodeFromYaml(const YAML::Node& node);

}  // namespace dfw
