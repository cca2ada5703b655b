// Fuzzes the Beam YAML loader and the `dependencies:` pre-pass that runs before it: any bytes must
// give a spec (a list) or a Status, never a crash or a hang; a file the loader takes has no list the
// pre-pass refuses.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dfw/pipeline/dependencies.h"
#include "dfw/pipeline/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const dfw::StageRegistry* registry = [] {
    auto* r = new dfw::StageRegistry();
    dfw::RegisterBuiltinStages(*r);
    return r;
  }();
  std::string yaml(reinterpret_cast<const char*>(data), size);
  auto spec = dfw::LoadPipelineString(yaml, *registry, "fuzz.yaml");
  if (!spec.ok() && spec.status().message().empty()) __builtin_trap();  // every error says something
  auto deps = dfw::PythonDependencies(yaml, "fuzz.yaml");
  if (!deps.ok() && deps.status().message().empty()) __builtin_trap();
  if (spec.ok() && !deps.ok()) __builtin_trap();  // the loader and the pre-pass check lists alike
  return 0;
}
