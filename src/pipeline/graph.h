// The per-bundle TBB flow graph (internal to the pipeline module).
//
// Shape: input_node (the bundle's source reader) → limiter_node (max in-flight source batches) →
// router → one function_node per transform. Nodes forward batches with explicit try_put to their
// consumers (main or error output), copying a batch only when an output has several consumers, so
// every batch has exactly one owner and stages may mutate it.
//
// Backpressure: each source batch that passes the limiter gets an InFlight token shared by every
// batch derived from it; when the last of them is destroyed the limiter is decremented. So at most
// `limit` source batches (and what was derived from them) exist at once, however slow a sink is.
//
// Metrics, namespace = transform name: elements_read (sources: rows + unparseable records),
// elements_in, elements_out (main output), errors (records sent to the error output),
// elements_filtered, elements_written / errors_written (sinks: data rows / dead-letter rows),
// elements_fanned_out (extra rows: Explode's n - 1 per record, and a main output read by k > 1
// transforms counts (k - 1) x rows), elements_unconsumed (main-output rows no transform reads).
// Fan-out and unconsumed are counted on data flows only (not on dead-letter rows, already counted
// as errors), so for every pipeline:
//   read + fanned_out = written + dead-lettered (errors) + filtered + unconsumed.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dfw/metrics/metrics.h"
#include "dfw/pipeline/runner.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"

namespace dfw::pipeline_internal {

struct StageCounters {
  CounterCell* read = nullptr;
  CounterCell* in = nullptr;
  CounterCell* out = nullptr;
  CounterCell* errors = nullptr;
  CounterCell* filtered = nullptr;
  CounterCell* written = nullptr;
  CounterCell* errors_written = nullptr;
  CounterCell* fanned_out = nullptr;
  CounterCell* unconsumed = nullptr;
  // Wall time inside the stage's calls (Process/FinishBundle; a source's reads), summed over
  // concurrent calls: Beam's pardo_execution_time process_bundle_msecs, in µs because one batch
  // often takes less than a millisecond. `dfworker bench` names the bottleneck from it.
  CounterCell* busy_usecs = nullptr;
};

// One transform, instantiated once per runner.
struct StageRuntime {
  std::unique_ptr<Stage> stage;
  const TransformSpec* spec = nullptr;
  std::vector<int> main_consumers;   // transforms reading the main output
  std::vector<int> error_consumers;  // transforms reading the error output
  std::vector<std::vector<int>> tagged_consumers;  // per named output (TransformSpec::outputs)
  StageCounters counters;
};

// The reader of the bundle being run, published so that another thread can watch its progress and
// split it (dynamic work rebalancing). Attach/Detach bracket the reader's life inside the graph.
class LiveSource {
 public:
  void Attach(SplitReader* reader, const SourceSplit& range);
  // Returns the range the reader covered (its bundle's range, cut by every accepted split), or
  // kInternal when a reader returned an impossible split (the attempt then fails).
  Result<SourceSplit> Detach();
  std::optional<SplitProgress> Progress() const;
  std::optional<SplitHalves> TrySplit(double fraction);

 private:
  mutable std::mutex mu_;
  SplitReader* reader_ = nullptr;
  SourceSplit range_;
  std::string broken_;
};

// Runs `bundle` through the graph on the calling thread's arena. Calls StartBundle/FinishBundle on
// every stage (so every sink commits a file, possibly empty). `live` (may be null) gets the reader.
Result<BundleStats> RunBundleGraph(std::vector<StageRuntime>& stages, const Bundle& bundle,
                                   const std::string& staging_dir, const RunnerOptions& options, LiveSource* live);

}  // namespace dfw::pipeline_internal
