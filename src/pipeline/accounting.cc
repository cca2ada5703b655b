// The balance of a run's records and the error_handling thresholds (dfw/pipeline/accounting.h).
#include "dfw/pipeline/accounting.h"

#include <fmt/format.h>

namespace dfw {

std::string Accounting::ToString() const {
  std::string lhs = fanned_out == 0 ? fmt::format("read {}", read) : fmt::format("read {} + fanned out {}", read, fanned_out);
  std::string rhs = fmt::format("written {} + dead-lettered {} + filtered {}", written, dead_lettered, filtered);
  if (unconsumed != 0) rhs += fmt::format(" + unconsumed {}", unconsumed);
  int64_t gap = read + fanned_out - written - dead_lettered - filtered - unconsumed;
  return fmt::format("{} = {}{}", lhs, rhs, Balanced() ? "" : fmt::format(" (UNBALANCED by {})", gap));
}

Accounting ComputeAccounting(const PipelineSpec& spec, const MetricsSnapshot& snap) {
  Accounting a;
  for (const TransformSpec& t : spec.transforms) {
    const std::string& ns = t.config.name;
    a.read += snap.CounterOr(ns, "elements_read");
    a.written += snap.CounterOr(ns, "elements_written");
    a.dead_lettered += snap.CounterOr(ns, "errors");
    a.filtered += snap.CounterOr(ns, "elements_filtered");
    a.fanned_out += snap.CounterOr(ns, "elements_fanned_out");
    a.unconsumed += snap.CounterOr(ns, "elements_unconsumed");
  }
  return a;
}

Status CheckErrorThresholds(const PipelineSpec& spec, const MetricsSnapshot& snap) {
  for (const TransformSpec& t : spec.transforms) {
    if (t.config.error_output.empty()) continue;
    const std::string& ns = t.config.name;
    int64_t errors = snap.CounterOr(ns, "errors");
    int64_t total = t.traits.is_source ? snap.CounterOr(ns, "elements_read") : snap.CounterOr(ns, "elements_in");
    if (errors == 0 || total == 0) continue;
    double fraction = static_cast<double>(errors) / static_cast<double>(total);
    if (fraction > t.config.error_threshold) {
      return Aborted(fmt::format("{}: {} of {} records failed ({:.1f}%), above error_handling threshold {}",
                                 t.config.Where(), errors, total, 100.0 * fraction, t.config.error_threshold));
    }
  }
  return Status::OK();
}

}  // namespace dfw
