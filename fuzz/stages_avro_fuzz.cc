// Reads arbitrary bytes as an Avro container file through ReadFromAvro (avro-c under the reader's
// memory budget). Any outcome but a crash, a hang, a leak or a sanitizer report is fine: a damaged
// file must become an error row, never a read past its end or an allocation a length field asked for.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <yaml-cpp/yaml.h>

#include "dfw/stages/config_yaml.h"
#include "dfw/stages/stage.h"

namespace {

const std::string& AvroFuzzDir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/dfw-avro-fuzz-XXXXXX";
    return std::string(::mkdtemp(pattern) ? pattern : "/tmp");
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static dfw::StageRegistry* registry = [] {
    auto* r = new dfw::StageRegistry();
    dfw::RegisterBuiltinStages(*r);
    return r;
  }();
  const std::string path = AvroFuzzDir() + "/in.avro";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  dfw::StageConfig c;
  c.name = c.type = "ReadFromAvro";
  c.error_output = "errors";
  c.config = dfw::ConfigNodeFromYaml(YAML::Load("{path: '" + path + "'}"));
  auto stage = registry->Find("ReadFromAvro")->factory(c);
  if (!stage.ok()) std::abort();
  auto splits = (*stage)->Split(1 << 20);
  if (!splits.ok()) return 0;
  for (const dfw::SourceSplit& split : *splits) {
    auto reader = (*stage)->OpenSplit(split);
    if (!reader.ok()) continue;
    for (int batches = 0; batches < 1000; ++batches) {
      dfw::StageOutput out(&c);  // per batch, so memory stays that of one batch
      auto more = (*reader)->Next(out, 64);
      if (!more.ok() || !*more) break;
    }
  }
  return 0;
}
