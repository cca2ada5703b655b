// Running a loaded pipeline: every stage instantiated once, one bundle at a time through the TBB
// flow graph, each sink's output committed per bundle. Bundles are planned in dfw/pipeline/bundle.h,
// outputs finalized in dfw/pipeline/finalize.h, stages sequenced in dfw/pipeline/staged_run.h.
//
// Exactly-once contract for sinks: RunBundle writes each sink's output for the bundle to
//   <staging_dir>/<sink name>/bundle-<id>.tmp
// and, only when the whole bundle succeeded, renames it to
//   <staging_dir>/<sink name>/bundle-<id>.done
// A failed or killed attempt leaves at most .tmp files, which the next attempt overwrites.
// FinalizeOutputs then renames the committed files of the chosen bundle ids to Beam's sharded names
// <prefix>-SSSSS-of-NNNNN<suffix> (one shard per bundle, in bundle-id order; empty shards are kept).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/job/bundle_size.h"
#include "dfw/metrics/metrics.h"
#include "dfw/pipeline/accounting.h"
#include "dfw/pipeline/bundle.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"

namespace dfw {

struct RunnerOptions {
  int threads = 1;                 // TBB arena size (harness threads); >= 1
  std::size_t batch_size = 1024;   // rows per message between stages; >= 1
  int max_in_flight_batches = 0;   // source batches alive at once (backpressure); 0 = 2 * threads + 2
  // Target bundle size for file sources. 0 (the default) sizes bundles to the job
  // (dfw/job/bundle_size.h: several per SDK process, within a floor and a ceiling; in-memory
  // sources such as Create are then cut by element count too); > 0 cuts files at that size and
  // keeps each in-memory source one bundle.
  int64_t bundle_bytes = 0;
  // CPU inference policy (dfw/backend/registry.h), set when the runner is made, before stages
  // load models. inference_lanes: concurrent CPU models per RunInference stage, 0 =
  // DefaultInferenceLanes(sdk_processes, threads). blas_threads: OpenBLAS threads for this
  // process, 0 = DefaultBlasThreads(sdk_processes, lanes). Together they never oversubscribe the
  // machine. A RunInference stage's model_handler.config.blas_threads overrides the pool (and that
  // stage then runs one lane).
  int inference_lanes = 0;
  int blas_threads = 0;
  int sdk_processes = 1;           // SDK processes sharing this machine (1 per vCPU on Dataflow); >= 1
  // How this process's model loads meet the job's device (the SDK process's entry point builds it;
  // the default loads privately and charges nothing). Passed to every stage (StageRunContext).
  ModelProcessContext model_process = {};
};

struct BundleStats {
  SourceSplit read;                 // the range the bundle covered: its own, cut by accepted splits
  int64_t rows_read = 0;            // rows produced by the source (including dead-lettered reads)
  int max_in_flight_batches = 0;    // high-water mark of source batches alive at once
  int in_flight_limit = 0;          // the limit in force
};

// A pipeline ready to run: every stage instantiated (configs validated, expressions compiled) once.
class PipelineRunner {
 public:
  // `metrics` must outlive the runner. `registry` is only used during Make.
  static Result<std::unique_ptr<PipelineRunner>> Make(const PipelineSpec& spec, const StageRegistry& registry,
                                                      RunnerOptions options, MetricsRegistry* metrics);
  ~PipelineRunner();

  // Splits every source into bundles (see Bundle, RunnerOptions::bundle_bytes). A source glob that
  // matches nothing is kNotFound.
  Result<std::vector<Bundle>> PlanBundles();
  // What the last PlanBundles aimed at (for the dry run and job.json).
  const BundleTarget& bundle_target() const;

  // Runs exactly one bundle through the flow graph and commits each sink's output for it.
  // Not reentrant: one bundle at a time per runner (the graph itself is parallel).
  // Errors: a stage failure (record error without error_handling, I/O error) or an exceeded
  // error_handling threshold, naming the transform.
  Result<BundleStats> RunBundle(const Bundle& bundle, const std::string& staging_dir);

  // Dynamic work rebalancing, callable from another thread while RunBundle runs: the position of
  // the running bundle's reader, and splitting off its unread part (SplitReader::TrySplit). nullopt
  // when no bundle is being read or the reader refuses. After a split, RunBundle stops at the cut
  // and reports the primary half as BundleStats::read.
  std::optional<SplitProgress> Progress() const;
  std::optional<SplitHalves> TrySplit(double fraction);

  const PipelineSpec& spec() const;

 private:
  struct Impl;
  explicit PipelineRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dfw
