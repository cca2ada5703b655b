// Reads arbitrary bytes as a TFRecord file through ReadFromTFRecord; the first byte picks the
// compression (UNCOMPRESSED, GZIP, DEFLATE through zlib). Any outcome but a crash, a hang or a
// sanitizer report is fine: a damaged frame must become an error row with its reason.
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

const std::string& TfRecordFuzzDir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/dfw-tfrecord-fuzz-XXXXXX";
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
  if (size == 0) return 0;
  static const char* const kModes[] = {"UNCOMPRESSED", "GZIP", "DEFLATE"};
  const char* mode = kModes[data[0] % 3];
  const std::string path = TfRecordFuzzDir() + "/in.tfrecord";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);
  dfw::StageConfig c;
  c.name = c.type = "ReadFromTFRecord";
  c.error_output = "errors";
  c.config = dfw::ConfigNodeFromYaml(
      YAML::Load("{file_pattern: '" + path + "', compression_type: " + mode + "}"));
  auto stage = registry->Find("ReadFromTFRecord")->factory(c);
  if (!stage.ok()) std::abort();
  auto splits = (*stage)->Split(1 << 20);
  if (!splits.ok()) return 0;
  for (const dfw::SourceSplit& split : *splits) {
    auto reader = (*stage)->OpenSplit(split);
    if (!reader.ok()) continue;
    for (int batches = 0; batches < 1000; ++batches) {
      dfw::StageOutput out(&c);
      auto more = (*reader)->Next(out, 64);
      if (!more.ok() || !*more) break;
    }
  }
  return 0;
}
