// Reads arbitrary bytes as a committed Combine shuffle file through the real merge source
// (Combine/merge: its layout, then every range it plans). Any outcome but a crash, a hang or a sanitizer report is fine:
// a damaged file must be a clear error, never a read past its end.
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

const std::string& Dir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/dfw-shuffle-fuzz-XXXXXX";
    std::string d = ::mkdtemp(pattern) ? pattern : "/tmp";
    FILE* f = std::fopen((d + "/shuffle.index").c_str(), "wb");
    if (f) {
      std::fputs("dfworker shuffle v1\n0\n", f);
      std::fclose(f);
    }
    return d;
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
  FILE* f = std::fopen((Dir() + "/bundle-0.done").c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  dfw::StageConfig c;
  c.name = c.type = "Combine/merge";
  c.config = dfw::ConfigNodeFromYaml(YAML::Load("{language: python, group_by: k, combine: {s: {value: x, fn: sum}, m: {value: x, fn: mean}, "
                        "t: {value: x, fn: {type: top_largest, config: {n: 2}}}}}"));
  c.shuffle.partitions = 4;
  c.shuffle.dir = Dir();
  auto stage = registry->Find("Combine/merge")->factory(c);
  if (!stage.ok()) std::abort();
  auto splits = (*stage)->Split(1);  // one range per non-empty partition
  if (!splits.ok()) return 0;
  for (const dfw::SourceSplit& split : *splits) {
    auto reader = (*stage)->OpenSplit(split);
    if (!reader.ok()) continue;
    dfw::StageOutput out(&c);
    for (int batches = 0; batches < 1000; ++batches) {
      auto more = (*reader)->Next(out, 64);
      if (!more.ok() || !*more) break;
    }
  }
  return 0;
}
