// Prices: Dataflow's per-hour rates for worker vCPUs, memory and GPUs, per region, each with where
// it came from. Read from `prices:` in configs/prices.yaml (the list prices, with their sources), or
// from a user's own file of the same format (`dfworker plan --prices FILE`, negotiated rates).
// Immutable after parsing; safe to share between threads.
//
// Format (YAML; every rate is per hour in the region's currency, "(unverified)" after a figure
// marks one no stored source confirmed):
//   prices:
//     - region: us-central1
//       currency: USD                        # optional, default USD
//       source: https://cloud.google.com/dataflow/pricing
//       read: "2026-12-02"                   # the date the source was read (YYYY-MM-DD)
//       batch: {vcpu_hour: 0.056, memory_gb_hour: 0.003557}
//       streaming: {vcpu_hour: "0.069 (unverified)", memory_gb_hour: 0.003557}   # optional
//       gpu_hour: {nvidia-tesla-t4: 0.35, nvidia-l4: "0.56 (unverified)"}
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

// One rate: currency units per hour of one vCPU, one GB of memory or one GPU.
struct Rate {
  double per_hour = 0;
  bool verified = true;  // false when the file marks it "(unverified)"
  std::string where;     // "configs/prices.yaml:12:18"
};

// vCPU and memory rates of one worker type (batch or streaming).
struct WorkerRates {
  Rate vcpu_hour;
  Rate memory_gb_hour;
};

struct RegionPrices {
  std::string region;    // "us-central1"
  std::string currency;  // "USD"
  std::string source;    // URL (or "negotiated", for a user's file)
  std::string read;      // YYYY-MM-DD the source was read
  WorkerRates batch;
  std::optional<WorkerRates> streaming;  // absent: the file gives no streaming rates
  std::map<std::string, Rate> gpu_hour;  // GPU type -> rate per GPU-hour
};

class PriceTable {
 public:
  // `text` is one YAML document named `name` in errors ("prices.yaml:3:7: ..."). Refused with
  // kInvalidArgument naming file:line:col, the region and the field: a missing or non-positive
  // rate, a malformed date, a region given twice, an unknown key. At most 4 MiB and 1,000 regions.
  static Result<PriceTable> Parse(const std::string& name, const std::string& text);
  // Reads `path` (at most 4 MiB) and parses it.
  static Result<PriceTable> Load(const std::string& path);

  const RegionPrices* Find(std::string_view region) const;
  std::vector<std::string> Regions() const;
  bool empty() const { return regions_.empty(); }
  const std::string& origin() const { return origin_; }  // the file name given to Parse

 private:
  friend class PriceParser;
  std::vector<RegionPrices> regions_;
  std::string origin_;
};

}  // namespace dfw
