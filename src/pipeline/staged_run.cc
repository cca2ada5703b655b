// The one driver of fused stages (dfw/pipeline/staged_run.h) and its in-process executor.
#include "dfw/pipeline/staged_run.h"

#include <memory>

#include "dfw/common/file.h"
#include "dfw/pipeline/bundle.h"
#include "dfw/pipeline/finalize.h"

namespace dfw {

Status RunStagedJob(const std::vector<FusedStage>& stages, StageExecutor& executor) {
  const int count = static_cast<int>(stages.size());
  for (int k = 0; k < count; ++k) {
    const PipelineSpec& spec = stages[static_cast<std::size_t>(k)].spec;
    StageFinalize finalize = [&spec](const std::string& committed_dir, const std::string& journal_path,
                                     const MetricsSnapshot& total, const std::vector<int64_t>& ids) {
      return FinalizeStage(spec, total, committed_dir, ids, journal_path);
    };
    RETURN_IF_ERROR(executor.RunStage(k, count, stages[static_cast<std::size_t>(k)], finalize));
  }
  return Status::OK();
}

namespace {

// Every stage in this process, one bundle after another, all committing into one staging folder
// (transform names are unique, so the stages' outputs and shuffles do not meet).
class InProcessStages final : public StageExecutor {
 public:
  InProcessStages(const StageRegistry& registry, const RunnerOptions& options, std::string staging_dir,
                  MetricsRegistry* metrics)
      : registry_(registry), options_(options), staging_dir_(std::move(staging_dir)), metrics_(metrics) {}

  Status RunStage(int k, int count, const FusedStage& stage, const StageFinalize& finalize) override {
    (void)count;
    ASSIGN_OR_RETURN(std::unique_ptr<PipelineRunner> runner,
                     PipelineRunner::Make(stage.spec, registry_, options_, metrics_));
    ASSIGN_OR_RETURN(std::vector<Bundle> bundles, runner->PlanBundles());
    std::vector<int64_t> ids;
    for (const Bundle& b : bundles) {
      RETURN_IF_ERROR(runner->RunBundle(b, staging_dir_).status());
      ids.push_back(b.id);
    }
    bundles_ += static_cast<int64_t>(bundles.size());
    return finalize(staging_dir_, staging_dir_ + "/finalize-" + std::to_string(k) + ".json", metrics_->Snapshot(), ids);
  }

  int64_t bundles() const { return bundles_; }

 private:
  const StageRegistry& registry_;
  const RunnerOptions& options_;
  const std::string staging_dir_;
  MetricsRegistry* metrics_;
  int64_t bundles_ = 0;
};

}  // namespace

Result<RunSummary> RunAllBundles(const PipelineSpec& spec, const StageRegistry& registry, const RunnerOptions& options,
                                 const std::string& staging_dir, MetricsRegistry* metrics) {
  RETURN_IF_ERROR(CheckSinksWritable(spec));  // fail before reading anything
  RETURN_IF_ERROR(MakeFolders(staging_dir, kPrivateFolderMode));  // the finalize journals live there
  FuseOptions fuse;
  fuse.partitions = DefaultShufflePartitions(options.sdk_processes);
  fuse.committed_dir = [&](int) { return staging_dir; };  // one folder: transform names are unique
  ASSIGN_OR_RETURN(std::vector<FusedStage> stages, FuseStages(spec, fuse));
  InProcessStages executor(registry, options, staging_dir, metrics);
  RETURN_IF_ERROR(RunStagedJob(stages, executor));
  RunSummary summary;
  summary.bundles = executor.bundles();
  // Over the whole pipeline: a Combine's counters hold its partial sink's rows written and its
  // merge source's rows read, so the original spec balances across the stages.
  summary.accounting = ComputeAccounting(spec, metrics->Snapshot());
  return summary;
}

}  // namespace dfw
