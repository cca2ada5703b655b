// Shared body of the fuzz targets that feed arbitrary bytes to a file reader stage (ReadFromAvro,
// ReadFromParquet, ReadFromTFRecord): the bytes go to a file in a private temporary folder, the
// stage splits it and reads every split batch by batch. Any outcome but a crash, a hang, a leak or a
// sanitizer report is fine: a damaged file must become an error row.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <yaml-cpp/yaml.h>

#include "dfw/stages/config_yaml.h"
#include "dfw/stages/stage.h"

namespace dfw::fuzzing {

// `/tmp/dfw-<tag>-fuzz-XXXXXX/<file>`, the folder made once per process.
inline std::string FuzzFile(const char* tag, const char* file) {
  static const std::string dir = [tag] {
    std::string pattern = std::string("/tmp/dfw-") + tag + "-fuzz-XXXXXX";
    return std::string(::mkdtemp(pattern.data()) ? pattern : "/tmp");
  }();
  return dir + "/" + file;
}

// Writes `data` to `path`, then runs the reader stage `type` with the YAML `config` over every split.
// `stop_when_unopened`: a split that cannot open means the reader cannot run here at all (pyarrow
// absent), so the input is done.
inline int ReadThroughStage(const std::string& path, const uint8_t* data, size_t size, const char* type,
                            const std::string& config, bool stop_when_unopened) {
  static dfw::StageRegistry* registry = [] {
    auto* r = new dfw::StageRegistry();
    dfw::RegisterBuiltinStages(*r);
    return r;
  }();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  dfw::StageConfig c;
  c.name = c.type = type;
  c.error_output = "errors";
  c.config = dfw::ConfigNodeFromYaml(YAML::Load(config));
  auto stage = registry->Find(type)->factory(c);
  if (!stage.ok()) std::abort();
  auto splits = (*stage)->Split(1 << 20);
  if (!splits.ok()) return 0;
  for (const dfw::SourceSplit& split : *splits) {
    auto reader = (*stage)->OpenSplit(split);
    if (!reader.ok()) {
      if (stop_when_unopened) return 0;
      continue;
    }
    for (int batches = 0; batches < 1000; ++batches) {
      dfw::StageOutput out(&c);  // per batch, so memory stays that of one batch
      auto more = (*reader)->Next(out, 64);
      if (!more.ok() || !*more) break;
    }
  }
  return 0;
}

}  // namespace dfw::fuzzing
