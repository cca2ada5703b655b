// Running a loaded pipeline: bundle planning, running one bundle through the TBB flow graph,
// committing and finalising sink outputs. This is what the launcher (multi-process) and
// `dfworker run` (single process) drive.
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
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"

namespace dfw {

// One unit of work: a split of one source. Ids are stable: PlanBundles over the same spec and the
// same input files returns the same bundles with the same ids (0..n-1), so another process can
// re-plan and run "bundle 7" without the bundle being serialised.
struct Bundle {
  int64_t id = 0;
  int source = 0;     // index of the source transform in PipelineSpec::transforms
  SourceSplit split;  // the byte range it covers
};

// A running bundle cut in two: the primary (kept by the running attempt) and the residual.
struct SplitHalves {
  SourceSplit primary;
  SourceSplit residual;
};

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

// Renames <staging>/<sink>/bundle-<id>.done for each id (in the given order) to
// <prefix>-SSSSS-of-NNNNN<suffix>; with no ids, writes one empty shard. Sinks without a `path`
// (test collectors) are skipped. With a `journal_path` the renames are one journaled, redoable
// step (dfw/job/journaled_moves.h): a run killed part-way is finished by calling this again.
// Missing .done files before the journal exists are kFailedPrecondition naming the bundle.
Status FinalizeOutputs(const PipelineSpec& spec, const std::string& staging_dir, const std::vector<int64_t>& bundle_ids,
                       const std::string& journal_path);

// The job-sized bundle plan for `processes` SDK processes, without making the pipeline: only the
// source stages are instantiated (no model is loaded), so the dry run can show it.
struct BundlePreview {
  int64_t bundles = 0;
  BundleTarget target;
};
Result<BundlePreview> PreviewBundles(const PipelineSpec& spec, const StageRegistry& registry, int processes);

// The bundles themselves, planned the same way (source stages only: no model is loaded, no backend
// made, no BLAS pool sized): what the launcher writes into job.json. `bundle_bytes` > 0 fixes the
// bundle size (a test hook); 0 sizes bundles to the job (job/bundle_size.h).
struct SourcePlan {
  std::vector<Bundle> bundles;
  BundleTarget target;
};
Result<SourcePlan> PlanSourceBundles(const PipelineSpec& spec, const StageRegistry& registry, int processes,
                                     int64_t bundle_bytes = 0);

// Creates every file sink's output folder and writes and removes a probe file there, so a run that
// could not deliver its output fails before doing the work (kIoError naming the transform and path).
Status CheckSinksWritable(const PipelineSpec& spec);

// Marks each Combine partial sink's shuffle of a finished stage as complete (CommitShuffle over
// <committed_dir>/<name> with the stage's committed bundle ids), before the next stage reads it.
Status CommitShuffles(const PipelineSpec& stage, const std::string& committed_dir, const std::vector<int64_t>& bundle_ids);

// Finalize of one (fused) stage, the one sequence every run uses — the launcher's pipeline jobs and
// RunAllBundles alike: the error thresholds over `total`, the Combine shuffles' commit, then the
// journaled moves of committed outputs to their shard names (FinalizeOutputs with
// `journal_path`). Redoable from any point with the same arguments.
Status FinalizeStage(const PipelineSpec& stage, const MetricsSnapshot& total, const std::string& committed_dir,
                     const std::vector<int64_t>& bundle_ids, const std::string& journal_path);

// Single-process run of the whole pipeline: plan, run every bundle, finalize, check the error
// thresholds across the run. A pipeline with a Combine runs its fused stages one after the other
// (dfw/pipeline/fused_stages.h), each finalized by FinalizeStage with its journal
// `<staging_dir>/finalize-<k>.json`. Metrics go to `metrics`.
struct RunSummary {
  int64_t bundles = 0;
  Accounting accounting;
};
Result<RunSummary> RunAllBundles(const PipelineSpec& spec, const StageRegistry& registry, const RunnerOptions& options,
                                 const std::string& staging_dir, MetricsRegistry* metrics);

}  // namespace dfw

namespace dfw {

// kAborted naming the transform and the counts when a transform's error fraction (errors over
// records in) exceeds its error_handling threshold. Works on merged snapshots (launcher).
Status CheckErrorThresholds(const PipelineSpec& spec, const MetricsSnapshot& snapshot);

}  // namespace dfw
