#include "dfw/worker/pipeline_job.h"

#include <limits.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "dfw/common/strings.h"
#include "dfw/common/test_hooks.h"
#include "dfw/job/protocol.h"
#include "dfw/pipeline/fused_stages.h"
#include "dfw/pipeline/runner.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/combine.h"
#include "dfw/stages/stage.h"
#include "dfw/worker/bundle_table.h"

namespace dfw {
namespace {

// Runs `fn` with the job's working directory as the current one, then restores it.
template <typename Fn>
auto InJobCwd(const JobInfo& job, Fn fn) -> decltype(fn()) {
  auto cwd = job.params.find("cwd");
  char old[PATH_MAX];
  bool moved = false;
  if (cwd != job.params.end() && ::getcwd(old, sizeof old) != nullptr) {
    if (::chdir(cwd->second.c_str()) != 0) {
      return ErrnoError("change to the job's working directory '" + cwd->second + "'", errno);
    }
    moved = true;
  }
  auto result = fn();
  if (moved && ::chdir(old) != 0) return ErrnoError("return to the working directory", errno);
  return result;
}

constexpr const char* kStageParam = "stage";            // k of a fused stage
constexpr const char* kStageRootParam = "stage_root";   // the stages' root dir
constexpr const char* kPartitionsParam = "shuffle_partitions";

FuseOptions FuseFor(const JobStage& stage) {
  FuseOptions o;
  o.partitions = stage.partitions;
  o.committed_dir = [stage](int k) { return stage.JobDirOf(k) + "/committed"; };
  return o;
}

// The job's pipeline: the whole spec, or the fused stage the job runs.
Result<PipelineSpec> LoadJobPipeline(const JobInfo& job, const StageRegistry& registry) {
  auto yaml = job.params.find("pipeline_yaml");
  if (yaml == job.params.end()) return DataLoss("job.json: executor 'pipeline' needs param 'pipeline_yaml'");
  auto path = job.params.find("pipeline_path");
  ASSIGN_OR_RETURN(PipelineSpec spec,
                   LoadPipelineString(yaml->second, registry, path == job.params.end() ? "<job>" : path->second));
  auto k = job.params.find(kStageParam);
  if (k == job.params.end()) {
    if (HasShuffle(spec)) return DataLoss("job.json: a pipeline with a Combine needs param 'stage'");
    return spec;
  }
  JobStage stage;
  auto index = ParseInt64(k->second);
  auto root = job.params.find(kStageRootParam);
  auto partitions = job.params.find(kPartitionsParam);
  auto p = partitions == job.params.end() ? std::nullopt : ParseInt64(partitions->second);
  if (!index || *index < 0 || root == job.params.end() || !p || *p < 1) {
    return DataLoss("job.json: params 'stage', 'stage_root' and 'shuffle_partitions' of a fused stage are malformed");
  }
  stage.index = static_cast<int>(*index);
  stage.root = root->second;
  stage.partitions = *p;
  ASSIGN_OR_RETURN(std::vector<FusedStage> stages, FuseStages(spec, FuseFor(stage)));
  if (static_cast<std::size_t>(stage.index) >= stages.size()) {
    return DataLoss("job.json: stage " + k->second + " of a pipeline with " + std::to_string(stages.size()) + " stages");
  }
  return std::move(stages[static_cast<std::size_t>(stage.index)].spec);
}

// Counter deltas and distribution count/sum/histogram deltas between two snapshots of one registry.
MetricsSnapshot Delta(const MetricsSnapshot& before, const MetricsSnapshot& after) {
  MetricsSnapshot d;
  for (const auto& [key, v] : after.counters) {
    auto it = before.counters.find(key);
    int64_t delta = v - (it == before.counters.end() ? 0 : it->second);
    if (delta != 0) d.counters[key] = delta;
  }
  for (const auto& [key, v] : after.distributions) {
    auto it = before.distributions.find(key);
    DistributionData x = v;
    if (it != before.distributions.end()) x.Subtract(it->second);
    if (x.count > 0) d.distributions[key] = x;
  }
  return d;
}

// Test-only hooks (pipeline_job.h; compiled in only with -DDFW_TEST_HOOKS=ON), read once per process.
struct BundleHooks {
  int64_t delay_ms = 0;
  std::string crash_on;

  static BundleHooks FromEnv() {
    BundleHooks h;
    h.delay_ms = ParseInt64(test_hooks::Get("BUNDLE_DELAY_MS").value_or("0")).value_or(0);
    h.crash_on = test_hooks::Get("CRASH_ON_BUNDLE").value_or("");
    return h;
  }
  void BeforeBundle(const std::string& bundle_id) const {
    if (bundle_id == crash_on) std::abort();
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  }
};

class PipelineExecutor final : public BundleExecutor {
 public:
  Status Init(const JobInfo& job, int threads) {
    job_ = job;
    RegisterBuiltinStages(registry_);
    return InJobCwd(job_, [&]() -> Status {
      ASSIGN_OR_RETURN(spec_, LoadJobPipeline(job_, registry_));
      RunnerOptions options;
      options.threads = threads;
      if (auto it = job_.params.find("sdk_processes"); it != job_.params.end()) {
        auto n = ParseInt64(it->second);
        if (!n || *n < 1) return DataLoss("job.json: sdk_processes '" + it->second + "' is not a positive number");
        options.sdk_processes = static_cast<int>(*n);
      }
      ASSIGN_OR_RETURN(runner_, PipelineRunner::Make(spec_, registry_, options, &metrics_));
      // What Make recorded (model loads: model_byte_size, load_model_latency_milli_secs) belongs to no
      // bundle; it rides with this process's first commit so the job's metrics.json has it.
      load_metrics_ = metrics_.Snapshot();
      ASSIGN_OR_RETURN(auto bundles, JobBundles());
      for (const Bundle& b : bundles) bundles_[std::to_string(b.id)] = b;
      return Status::OK();
    });
  }

  // The launcher's bundle table from job.json; re-planned only for a job dir written without one.
  Result<std::vector<Bundle>> JobBundles() {
    auto table = job_.params.find(kBundleTableParam);
    if (table == job_.params.end()) return runner_->PlanBundles();
    auto decoded = DecodeBundleTable(table->second);
    if (!decoded.ok()) return decoded.status().WithContext("job.json");
    std::vector<Bundle> bundles = std::move(decoded).value();
    if (bundles.size() != job_.bundles.size()) {
      return DataLoss("job.json: the bundle table has " + std::to_string(bundles.size()) + " bundles, the job " +
                      std::to_string(job_.bundles.size()));
    }
    return bundles;
  }

  Status RunBundle(const std::string& bundle_id, const std::string& staging_dir, MetricsSnapshot* metrics) override {
    return RunWork(bundle_id, std::nullopt, staging_dir, metrics).status();
  }

  Result<std::optional<WorkRange>> RunWork(const std::string& bundle_id, const std::optional<WorkRange>& range,
                                           const std::string& staging_dir, MetricsSnapshot* metrics) override {
    Bundle bundle;
    if (range) {  // the coordinator's range: a split residual, or a bundle cut by a split
      auto id = ParseInt64(bundle_id);
      if (!id || *id < 0) return DataLoss("bundle id '" + bundle_id + "' is not a number");
      bundle = FromWorkRange(*id, *range);
    } else {
      auto it = bundles_.find(bundle_id);
      if (it == bundles_.end()) {
        return DataLoss("bundle '" + bundle_id + "' is not in this pipeline's plan (did an input file change?)");
      }
      bundle = it->second;
    }
    hooks_.BeforeBundle(bundle_id);
    source_of_running_.store(bundle.source);
    MetricsSnapshot before = metrics_.Snapshot();
    Result<BundleStats> stats = InJobCwd(job_, [&] { return runner_->RunBundle(bundle, staging_dir); });
    if (!stats.ok()) return stats.status();
    *metrics = Delta(before, metrics_.Snapshot());
    metrics->counters[{kRecordsNamespace, kRecordsCounter}] += stats->rows_read;
    if (!load_metrics_sent_) {
      metrics->Merge(load_metrics_);
      load_metrics_sent_ = true;
    }
    Bundle read = bundle;
    read.split = stats->read;
    return std::optional<WorkRange>(ToWorkRange(read));
  }

  std::optional<SplitProgress> Progress() const override { return runner_ ? runner_->Progress() : std::nullopt; }

  std::optional<std::pair<WorkRange, WorkRange>> TrySplit(double fraction) override {
    if (!runner_) return std::nullopt;
    auto halves = runner_->TrySplit(fraction);
    if (!halves) return std::nullopt;
    Bundle primary, residual;
    primary.source = residual.source = source_of_running_.load();
    primary.split = halves->primary;
    residual.split = halves->residual;
    return std::make_pair(ToWorkRange(primary), ToWorkRange(residual));
  }

 private:
  JobInfo job_;
  StageRegistry registry_;
  PipelineSpec spec_;
  MetricsRegistry metrics_;
  std::unique_ptr<PipelineRunner> runner_;
  std::map<std::string, Bundle> bundles_;
  MetricsSnapshot load_metrics_;  // recorded while the runner was made
  bool load_metrics_sent_ = false;
  std::atomic<int> source_of_running_{0};  // for TrySplit's halves (another thread)
  BundleHooks hooks_ = BundleHooks::FromEnv();
};

}  // namespace

Result<PipelineStages> PlanPipelineStages(const std::string& pipeline_path, const std::string& pipeline_yaml,
                                          int processes) {
  StageRegistry registry;
  RegisterBuiltinStages(registry);
  ASSIGN_OR_RETURN(PipelineSpec spec, LoadPipelineString(pipeline_yaml, registry, pipeline_path));
  JobStage probe;
  probe.root = "/";
  probe.partitions = DefaultShufflePartitions(processes);
  ASSIGN_OR_RETURN(std::vector<FusedStage> stages, FuseStages(spec, FuseFor(probe)));
  PipelineStages out;
  out.count = static_cast<int>(stages.size());
  out.partitions = stages.size() > 1 ? probe.partitions : 0;
  for (const FusedStage& s : stages) {
    std::vector<std::string> names;
    for (const TransformSpec& t : s.spec.transforms) {
      const std::string& type = t.config.type;
      names.push_back(t.config.name + (type == kCombinePartialType ? " (partial combine, shuffle write)"
                                       : type == kCombineMergeType ? " (shuffle read, merge)"
                                                                   : ""));
    }
    out.transforms.push_back(std::move(names));
  }
  return out;
}

Result<JobInfo> PlanPipelineJob(const std::string& pipeline_path, const std::string& pipeline_yaml, int threads,
                                int processes, const JobStage* stage) {
  JobInfo job;
  job.executor = "pipeline";
  job.params["pipeline_yaml"] = pipeline_yaml;
  job.params["pipeline_path"] = pipeline_path;
  if (stage != nullptr) {
    job.params[kStageParam] = std::to_string(stage->index);
    job.params[kStageRootParam] = stage->root;
    job.params[kPartitionsParam] = std::to_string(stage->partitions);
  }
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) != nullptr) job.params["cwd"] = cwd;
  StageRegistry registry;
  RegisterBuiltinStages(registry);
  ASSIGN_OR_RETURN(PipelineSpec spec, LoadJobPipeline(job, registry));
  // Before any SDK process does work it could not deliver (every stage's sinks, before the first).
  if (stage != nullptr && stage->index == 0) {
    ASSIGN_OR_RETURN(PipelineSpec whole, LoadPipelineString(pipeline_yaml, registry, pipeline_path));
    RETURN_IF_ERROR(CheckSinksWritable(whole));
  }
  RETURN_IF_ERROR(CheckSinksWritable(spec));
  MetricsRegistry metrics;
  RunnerOptions options;
  options.threads = std::max(1, threads);
  options.blas_threads = 1;  // the launcher only plans bundles; a bigger pool would spin idle in it
  options.inference_lanes = 1;
  options.sdk_processes = std::max(1, processes);  // bundles are sized for them (job/bundle_size.h)
  // Test hook: a fixed bundle size, so a real-process test can give 8 processes one bundle to share.
  if (auto bytes = ParseInt64(test_hooks::Get("BUNDLE_BYTES").value_or(""))) options.bundle_bytes = *bytes;
  ASSIGN_OR_RETURN(auto runner, PipelineRunner::Make(spec, registry, options, &metrics));
  ASSIGN_OR_RETURN(auto bundles, runner->PlanBundles());
  job.params["bundle_target"] = runner->bundle_target().ToString();
  for (const Bundle& b : bundles) job.bundles.push_back(std::to_string(b.id));
  if (auto table = EncodeBundleTable(bundles)) job.params[kBundleTableParam] = std::move(*table);
  return job;
}

Result<std::unique_ptr<BundleExecutor>> MakePipelineExecutor(const JobInfo& job, int threads) {
  auto executor = std::make_unique<PipelineExecutor>();
  RETURN_IF_ERROR(executor->Init(job, threads));
  return std::unique_ptr<BundleExecutor>(std::move(executor));
}

Status FinalizePipelineJob(const JobDir& dir, const MetricsSnapshot& total, const std::vector<std::string>& bundles) {
  StageRegistry registry;
  RegisterBuiltinStages(registry);
  return InJobCwd(dir.info(), [&]() -> Status {
    ASSIGN_OR_RETURN(PipelineSpec spec, LoadJobPipeline(dir.info(), registry));
    RETURN_IF_ERROR(CheckErrorThresholds(spec, total));
    std::vector<int64_t> ids;
    for (const auto& b : bundles) {
      auto id = ParseInt64(b);
      if (!id) return DataLoss("job.json: pipeline bundle id '" + b + "' is not a number");
      ids.push_back(*id);
    }
    // A Combine's shuffle is complete (the next stage may read it) once every bundle has committed.
    RETURN_IF_ERROR(CommitShuffles(spec, dir.CommittedDir(), ids));
    return FinalizeOutputs(spec, dir.CommittedDir(), ids, dir.FinalizeJournalPath());
  });
}

}  // namespace dfw
