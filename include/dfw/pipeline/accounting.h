// What a run's metrics say about every record: the balance of rows read, written, dead-lettered,
// filtered and fanned out, and the error_handling thresholds over them.
#pragma once

#include <cstdint>
#include <string>

#include "dfw/common/status.h"
#include "dfw/metrics/metrics.h"
#include "dfw/pipeline/spec.h"

namespace dfw {

// Per-pipeline accounting from a metrics snapshot (counters described in pipeline/graph.h).
struct Accounting {
  int64_t read = 0;           // rows produced by sources (rows + unparseable records)
  int64_t written = 0;        // non-error rows written by sinks
  int64_t dead_lettered = 0;  // records sent to an error output
  int64_t filtered = 0;       // records dropped by Filter (and Explode rows with only empty lists)
  int64_t fanned_out = 0;     // extra rows made: Explode's n - 1 per record, k - 1 copies for k consumers
  int64_t unconsumed = 0;     // main-output rows no transform reads (warned about when the runner is made)
  // Exact for every pipeline the loader accepts (see pipeline/graph.h for the counters).
  bool Balanced() const { return read + fanned_out == written + dead_lettered + filtered + unconsumed; }
  std::string ToString() const;
};
Accounting ComputeAccounting(const PipelineSpec& spec, const MetricsSnapshot& snapshot);

// kAborted naming the transform and the counts when a transform's error fraction (errors over
// records in) exceeds its error_handling threshold. Works on merged snapshots (launcher).
Status CheckErrorThresholds(const PipelineSpec& spec, const MetricsSnapshot& snapshot);

}  // namespace dfw
