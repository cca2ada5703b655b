// Fuzzes the Beam YAML loader: any bytes must give a spec or a Status, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string>

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
  return 0;
}
