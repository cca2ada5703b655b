#include "dfw/worker/pipeline_job.h"

#include <limits.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "dfw/common/strings.h"
#include "dfw/common/test_hooks.h"
#include "dfw/job/protocol.h"
#include "dfw/pipeline/job_pipeline.h"
#include "dfw/pipeline/runner.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/combine.h"
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "dfw/worker/bundle_table.h"

namespace dfw {
namespace {

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
  int64_t gate_from = -1;  // DFW_TEST_BUNDLE_GATE=K:PATH: bundles with id >= K wait for PATH
  std::string gate_file;

  static BundleHooks FromEnv() {
    BundleHooks h;
    h.delay_ms = ParseInt64(test_hooks::Get("BUNDLE_DELAY_MS").value_or("0")).value_or(0);
    h.crash_on = test_hooks::Get("CRASH_ON_BUNDLE").value_or("");
    const std::string gate = test_hooks::Get("BUNDLE_GATE").value_or("");
    if (const auto colon = gate.find(':'); colon != std::string::npos) {
      h.gate_from = ParseInt64(gate.substr(0, colon)).value_or(-1);
      h.gate_file = gate.substr(colon + 1);
    }
    return h;
  }
  void BeforeBundle(const std::string& bundle_id) const {
    if (bundle_id == crash_on) std::abort();
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (gate_from >= 0) {
      const std::optional<int64_t> id = ParseInt64(bundle_id);
      if (id && *id >= gate_from) test_hooks::WaitForFile(gate_file);
    }
  }
};

class PipelineExecutor final : public BundleExecutor {
 public:
  Status Init(const JobInfo& job, const ExecutorContext& context) {
    job_ = job;
    base_dir_ = JobBaseDir(job_);
    // The launcher checked every model at start-up; here RunInference's factory makes the handler
    // (checking the files again, as they are now) and loads the model, so the load-time check
    // parses the config only: each model file is opened twice in an SDK process, not three times.
    RegisterBuiltinStages(registry_, ModelChecks::kConfigOnly);
    ASSIGN_OR_RETURN(spec_, LoadJobPipeline(job_, registry_));
    RunnerOptions options;
    options.threads = context.threads;
    options.model_process = context.model_process;
    if (auto it = job_.params.find("sdk_processes"); it != job_.params.end()) {
      auto n = ParseInt64(it->second);
      if (!n || *n < 1) return DataLoss("job.json: sdk_processes '" + it->second + "' is not a positive number");
      options.sdk_processes = static_cast<int>(*n);
    }
    const int planned = options.sdk_processes;
    if (context.sdk_processes > 0) options.sdk_processes = context.sdk_processes;  // the job grew
    spdlog::info("pipeline for {} SDK process{} on this machine{}", options.sdk_processes,
                 options.sdk_processes == 1 ? "" : "es",
                 options.sdk_processes != planned ? " (grown from " + std::to_string(planned) + ")" : "");
    ASSIGN_OR_RETURN(runner_, PipelineRunner::Make(spec_, registry_, options, &metrics_));
    // What Make recorded (model loads: model_byte_size, load_model_latency_milli_secs) belongs to no
    // bundle; it rides with this process's first commit so the job's metrics.json has it.
    load_metrics_ = metrics_.Snapshot();
    ASSIGN_OR_RETURN(auto bundles, JobBundles());
    for (const Bundle& b : bundles) bundles_[std::to_string(b.id)] = b;
    return Status::OK();
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
    // The plan names input files as the launcher saw them; this process opens them against the
    // job's working directory, and speaks of them to the coordinator as planned (a split's halves
    // must name the file the coordinator knows).
    const std::string planned_path = bundle.split.path;
    {
      std::lock_guard<std::mutex> lock(running_mu_);
      running_path_ = planned_path;
    }
    bundle.split.path = ResolveAgainst(base_dir_, planned_path);
    MetricsSnapshot before = metrics_.Snapshot();
    Result<BundleStats> stats = runner_->RunBundle(bundle, staging_dir);
    if (!stats.ok()) return stats.status();
    *metrics = Delta(before, metrics_.Snapshot());
    metrics->counters[{kRecordsNamespace, kRecordsCounter}] += stats->rows_read;
    if (!load_metrics_sent_) {
      metrics->Merge(load_metrics_);
      load_metrics_sent_ = true;
    }
    Bundle read = bundle;
    read.split = stats->read;
    read.split.path = planned_path;
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
    {
      std::lock_guard<std::mutex> lock(running_mu_);
      primary.split.path = residual.split.path = running_path_;
    }
    return std::make_pair(ToWorkRange(primary), ToWorkRange(residual));
  }


 private:
  JobInfo job_;
  std::string base_dir_;  // JobBaseDir(job_)
  StageRegistry registry_;
  PipelineSpec spec_;
  MetricsRegistry metrics_;
  std::unique_ptr<PipelineRunner> runner_;
  std::map<std::string, Bundle> bundles_;
  MetricsSnapshot load_metrics_;  // recorded while the runner was made
  bool load_metrics_sent_ = false;
  std::atomic<int> source_of_running_{0};  // for TrySplit's halves (another thread)
  std::mutex running_mu_;
  std::string running_path_;  // the running bundle's input file as planned (TrySplit's halves)
  BundleHooks hooks_ = BundleHooks::FromEnv();
};

}  // namespace

Result<std::unique_ptr<BundleExecutor>> MakePipelineExecutor(const JobInfo& job, const ExecutorContext& context) {
  auto executor = std::make_unique<PipelineExecutor>();
  RETURN_IF_ERROR(executor->Init(job, context));
  return std::unique_ptr<BundleExecutor>(std::move(executor));
}

}  // namespace dfw
