// Reads arbitrary bytes as a committed Join shuffle file (both inputs of an outer Join read the same
// file) through the real merge source (Join/merge: its layout and schemas, then every range it
// plans). Any outcome but a crash, a hang or a sanitizer report is fine: a damaged file must be a
// clear error, never a read past its end.
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
    char pattern[] = "/tmp/dfw-join-fuzz-XXXXXX";
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
  c.name = "J";
  c.type = "Join/merge";
  c.input_names = {"u", "o"};
  c.config = dfw::ConfigNodeFromYaml(YAML::Load("{type: outer, equalities: [{u: uid, o: uid}]}"));
  c.shuffle.partitions = 256;
  c.shuffle.join_dirs = {Dir(), Dir()};
  auto stage = registry->Find("Join/merge")->factory(c);
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
