// Reads arbitrary bytes as a Parquet file through ReadFromParquet (pyarrow in the embedded
// CPython). Where the worker's Python has no pyarrow every input returns at once (the reader's
// error is the setup's, not the file's). Any outcome but a crash, a hang or a sanitizer report is
// fine: a damaged file must become an error row.
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

const std::string& ParquetFuzzDir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/dfw-parquet-fuzz-XXXXXX";
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
  const std::string path = ParquetFuzzDir() + "/in.parquet";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  dfw::StageConfig c;
  c.name = c.type = "ReadFromParquet";
  c.error_output = "errors";
  c.config = dfw::ConfigNodeFromYaml(YAML::Load("{path: '" + path + "'}"));
  auto stage = registry->Find("ReadFromParquet")->factory(c);
  if (!stage.ok()) std::abort();
  auto splits = (*stage)->Split(1 << 20);
  if (!splits.ok()) return 0;
  for (const dfw::SourceSplit& split : *splits) {
    auto reader = (*stage)->OpenSplit(split);
    if (!reader.ok()) return 0;  // no pyarrow here
    for (int batches = 0; batches < 1000; ++batches) {
      dfw::StageOutput out(&c);
      auto more = (*reader)->Next(out, 64);
      if (!more.ok() || !*more) break;
    }
  }
  return 0;
}
