#include "tenant_runs/tenants_memory.h"

#include "dfw/common/logging.h"
#include "dfw/common/strings.h"
#include "dfw/metrics/prometheus.h"

namespace dfw {
namespace {

class LedgerSource final : public GpuMemorySource {
 public:
  explicit LedgerSource(device::MemoryLedger ledger) : ledger_(std::move(ledger)) {}
  std::string_view name() const override { return "ledger (emulated GPU)"; }
  Result<GpuMemoryReading> Read() override {
    ASSIGN_OR_RETURN(device::LedgerSnapshot snap, ledger_.Snapshot());
    GpuMemoryReading r;
    for (const device::LedgerTenant& t : snap.tenants) r.tenants[t.name] = t.used_bytes;
    for (const device::LedgerEntry& e : snap.entries) {
      if (e.tenant.empty()) continue;
      // The registry name is "<tenant>/sdk-N" (DFW_TENANT prefixes it); keep the part after it.
      std::string who = e.name.rfind(e.tenant + "/", 0) == 0 ? e.name.substr(e.tenant.size() + 1) : e.name;
      r.processes[e.tenant + "/" + who] += e.allocated_bytes;
    }
    return r;
  }

 private:
  device::MemoryLedger ledger_;
};

}  // namespace

Result<std::unique_ptr<GpuMemorySource>> MakeLedgerMemorySource(const std::string& path) {
  ASSIGN_OR_RETURN(device::MemoryLedger ledger, device::MemoryLedger::Open(path));
  return std::unique_ptr<GpuMemorySource>(new LedgerSource(std::move(ledger)));
}

Result<std::unique_ptr<GpuMemorySource>> MakeNvmlMemorySource() {
  return Status(StatusCode::kUnimplemented,
                "per-process GPU memory from NVML (nvmlDeviceGetComputeRunningProcesses, by pid) is not implemented; "
                "on a real GPU the tenants' memory is not sampled");
}

TenantMemoryMonitor::TenantMemoryMonitor(std::unique_ptr<GpuMemorySource> source, std::vector<Budget> budgets,
                                         std::string why_not)
    : source_(std::move(source)), why_not_(std::move(why_not)) {
  for (const Budget& b : budgets) {
    order_.push_back(b.name);
    series_[b.name].budget = b.budget_bytes;
  }
}

void TenantMemoryMonitor::Sample() {
  if (!source_) return;
  Result<GpuMemoryReading> r = source_->Read();
  if (!r.ok()) {
    ++failed_;
    return;
  }
  ++samples_;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  for (const std::string& name : order_) {
    Series& s = series_[name];
    auto it = r->tenants.find(name);
    const uint64_t used = it == r->tenants.end() ? 0 : it->second;
    if (s.points.empty() || s.points.back().second != used) {
      if (s.points.size() >= kMaxPoints) {  // halve the resolution, keeping the first point
        std::vector<std::pair<double, uint64_t>> kept;
        for (std::size_t k = 0; k < s.points.size(); k += 2) kept.push_back(s.points[k]);
        s.points = std::move(kept);
      }
      s.points.push_back({t, used});
    }
    s.last = used;
    s.peak = std::max(s.peak, used);
    if (!s.warned && s.budget > 0 && used * 10 > s.budget * 9) {
      s.warned = true;
      ReportLine("warning: tenant '{}' holds {} of GPU memory at {:.1f} s, over 90% of its budget {}", name, HumanBytes(used),
                 t, HumanBytes(s.budget));
    }
  }
  for (const auto& [who, bytes] : r->processes) {
    const std::size_t slash = who.find('/');
    auto it = series_.find(who.substr(0, slash));
    if (it == series_.end()) continue;
    uint64_t& peak = it->second.process_peaks[who.substr(slash + 1)];
    peak = std::max(peak, bytes);
  }
}

nlohmann::json TenantMemoryMonitor::TenantJson(const std::string& name) const {
  nlohmann::json j = nlohmann::json::object();
  auto it = series_.find(name);
  if (!source_ || it == series_.end()) return j;
  const Series& s = it->second;
  j["gpu_memory_sampled_peak_bytes"] = s.peak;
  nlohmann::json points = nlohmann::json::array();
  for (const auto& [t, bytes] : s.points) points.push_back({t, bytes});
  j["gpu_memory_timeline"] = points;
  j["gpu_memory_process_peaks"] = s.process_peaks;
  return j;
}

nlohmann::json TenantMemoryMonitor::SamplingJson() const {
  if (!source_) return {{"source", nullptr}, {"why", why_not_}};
  return {{"source", source_->name()}, {"interval_ms", kInterval.count()}, {"samples", samples_}, {"failed_reads", failed_}};
}

bool TenantMemoryMonitor::warned(const std::string& name) const {
  auto it = series_.find(name);
  return it != series_.end() && it->second.warned;
}

std::string TenantMemoryMonitor::Prometheus(const std::vector<Gauge>& extra) const {
  PrometheusWriter w;
  for (const std::string& name : order_) {
    const Series& s = series_.at(name);
    const PrometheusWriter::Labels labels = {{"tenant", name}};
    w.Add("dfworker_tenant_gpu_memory_budget_bytes", "gauge", "GPU-memory budget of the tenant", labels,
          static_cast<double>(s.budget));
    if (source_) {
      w.Add("dfworker_tenant_gpu_memory_peak_bytes", "gauge", "largest GPU memory the tenant held in a sample", labels,
            static_cast<double>(s.peak));
      w.Add("dfworker_tenant_gpu_memory_last_bytes", "gauge", "GPU memory the tenant held in the last sample", labels,
            static_cast<double>(s.last));
      w.Add("dfworker_tenant_gpu_memory_over_90pct", "gauge", "1 when the tenant passed 90% of its budget", labels,
            s.warned ? 1.0 : 0.0);
    }
  }
  if (source_) {
    w.Add("dfworker_tenants_gpu_memory_samples", "counter", "GPU-memory samples taken during the run", {},
          static_cast<double>(samples_));
  }
  for (const Gauge& g : extra) {
    for (const auto& [tenant, value] : g.by_tenant) w.Add(g.name, "gauge", g.help, {{"tenant", tenant}}, value);
  }
  return w.Text();
}

}  // namespace dfw
