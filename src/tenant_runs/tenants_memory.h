// Per-tenant GPU-memory monitoring in a tenants run (tenants.md "Memory"): sampled during the run
// (about every 100 ms, the tenant group's tick), attributed to tenants, kept as a timeline (a point
// where the figure changed) and a peak per tenant and per process; a warning, once per tenant, when
// it passes 90% of its budget; written into tenants_report.json and <job>/tenants.prom.
//
// Where the figures come from is a seam (GpuMemorySource). Emulated GPU: the run's GPU-memory
// ledger (every client's bytes, with its tenant). Real GPU: NVML's per-process figures
// (nvmlDeviceGetComputeRunningProcesses) mapped to tenants by pid would go here; that source is not
// written (NVML is not available on this machine), so on a real GPU nothing is sampled and the
// report says so.
//
// Threading: used from the tenants run's main thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/common/status.h"
#include "dfw/device/memory_ledger.h"

namespace dfw {

// One reading: bytes held per tenant, and per process ("<tenant>/<client name>").
struct GpuMemoryReading {
  std::map<std::string, uint64_t> tenants;
  std::map<std::string, uint64_t> processes;
};

class GpuMemorySource {
 public:
  virtual ~GpuMemorySource() = default;
  virtual std::string_view name() const = 0;  // for the report: "ledger (emulated GPU)"
  virtual Result<GpuMemoryReading> Read() = 0;
};

// The emulated GPU's ledger at `path`.
Result<std::unique_ptr<GpuMemorySource>> MakeLedgerMemorySource(const std::string& path);
// Real GPU: NVML per-PID. Not written: kUnimplemented, naming what is missing.
Result<std::unique_ptr<GpuMemorySource>> MakeNvmlMemorySource();

class TenantMemoryMonitor {
 public:
  struct Budget {
    std::string name;
    uint64_t budget_bytes = 0;
  };
  // `source` null: nothing is sampled (`why_not` says why, for the report).
  TenantMemoryMonitor(std::unique_ptr<GpuMemorySource> source, std::vector<Budget> budgets, std::string why_not = "");

  static constexpr std::chrono::milliseconds kInterval{100};
  static constexpr std::size_t kMaxPoints = 2048;  // per tenant; past it every other point goes

  // One sample now (the tenant group's on_tick). A failed read is counted, not fatal.
  void Sample();
  // Per tenant: {"gpu_memory_sampled_peak_bytes", "gpu_memory_timeline": [[t_s, bytes], ...],
  // "gpu_memory_process_peaks": {"sdk-0": bytes, ...}}.
  nlohmann::json TenantJson(const std::string& name) const;
  // {"source", "interval_ms", "samples", "failed_reads"} (or {"source": null, "why"}).
  nlohmann::json SamplingJson() const;
  // Whether `name` was warned about during the run (past 90% of its budget).
  bool warned(const std::string& name) const;
  // A gauge per tenant that the caller adds (borrowed processes).
  struct Gauge {
    std::string name, help;
    std::map<std::string, double> by_tenant;
  };
  // Prometheus gauges per tenant (peak, last, budget, over 90%), the number of samples, and `extra`.
  std::string Prometheus(const std::vector<Gauge>& extra) const;

 private:
  struct Series {
    uint64_t budget = 0;
    uint64_t peak = 0, last = 0;
    bool warned = false;
    std::vector<std::pair<double, uint64_t>> points;
    std::map<std::string, uint64_t> process_peaks;
  };
  std::unique_ptr<GpuMemorySource> source_;
  std::string why_not_;
  std::vector<std::string> order_;
  std::map<std::string, Series> series_;
  int samples_ = 0, failed_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace dfw
