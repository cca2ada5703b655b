// libFuzzer target for the price-table parser (dfw/catalog/prices.h): any bytes as a --prices file.
// Invariants beyond "no crash" (yaml-cpp throws; nothing may escape): an error names the file
// first; a table that parses has unique regions, each with a source, a YYYY-MM-DD date, and only
// positive, finite rates that say where they were written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "dfw/catalog/prices.h"

namespace {

void CheckRate(const dfw::Rate& r) {
  if (!std::isfinite(r.per_hour) || !(r.per_hour > 0) || r.where.rfind("p.yaml", 0) != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dfw::Result<dfw::PriceTable> table = dfw::PriceTable::Parse("p.yaml", text);
  if (!table.ok()) {
    if (table.status().message().rfind("p.yaml", 0) != 0) std::abort();
    return 0;
  }
  std::set<std::string> regions;
  for (const std::string& name : table->Regions()) {
    const dfw::RegionPrices* r = table->Find(name);
    if (!r || !regions.insert(name).second || r->source.empty() || r->read.size() != 10) std::abort();
    CheckRate(r->batch.vcpu_hour);
    CheckRate(r->batch.memory_gb_hour);
    if (r->streaming) {
      CheckRate(r->streaming->vcpu_hour);
      CheckRate(r->streaming->memory_gb_hour);
    }
    for (const auto& [gpu, rate] : r->gpu_hour) {
      if (gpu.empty()) std::abort();
      CheckRate(rate);
    }
  }
  return 0;
}
