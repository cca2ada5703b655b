#include "dfw/launcher/pipeline_launch.h"

#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "dfw/common/logging.h"
#include "dfw/common/process.h"
#include "dfw/job/job_dir.h"
#include "dfw/launcher/pipeline_job_plan.h"
#include "dfw/pipeline/finalize.h"
#include "dfw/pipeline/fused_stages.h"
#include "dfw/pipeline/staged_run.h"
#include "dfw/stages/stage.h"

namespace dfw {
namespace {

int Stop(const std::string& message, ExitCode code) {
  PrintRunStopped(message);
  return static_cast<int>(code);
}

constexpr const char* kStagesFile = "stages.json";

// The record of a staged job in its root dir: what --resume needs to run the remaining stages.
struct StagedJob {
  JobStage stage;  // index unused
  std::string pipeline_path, pipeline_yaml;
  int processes = 1;
  std::string cwd;  // the job's working directory: the pipeline's relative paths resolve there
};

Status WriteStagedJob(const StagedJob& job) {
  nlohmann::json j;
  j["stages"] = job.stage.count;
  j["shuffle_partitions"] = job.stage.partitions;
  j["sdk_processes"] = job.processes;
  j["pipeline_path"] = job.pipeline_path;
  j["pipeline_yaml"] = job.pipeline_yaml;
  j["cwd"] = job.cwd;
  return WriteFileAtomically(job.stage.root + "/" + kStagesFile, j.dump(2) + "\n");
}

Result<StagedJob> ReadStagedJob(const std::string& root) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(root + "/" + kStagesFile));
  StagedJob job;
  try {
    auto j = nlohmann::json::parse(text);
    job.stage.count = j.at("stages").get<int>();
    job.stage.partitions = j.at("shuffle_partitions").get<int64_t>();
    job.processes = j.at("sdk_processes").get<int>();
    job.pipeline_path = j.at("pipeline_path").get<std::string>();
    job.pipeline_yaml = j.at("pipeline_yaml").get<std::string>();
    job.cwd = j.value("cwd", std::string());  // (a record written before it was kept: this directory)
  } catch (const std::exception& e) {
    return DataLoss("'" + root + "/" + kStagesFile + "' is malformed: " + e.what());
  }
  if (job.stage.count < 2 || job.stage.partitions < 1 || job.processes < 1) {
    return DataLoss("'" + root + "/" + kStagesFile + "' is malformed: impossible stage, partition or process counts");
  }
  std::error_code ec;
  job.stage.root = std::filesystem::absolute(root, ec).lexically_normal().string();  // (SDK processes change cwd)
  if (ec) job.stage.root = root;
  while (job.stage.root.size() > 1 && job.stage.root.back() == '/') job.stage.root.pop_back();
  return job;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

std::string CurrentDirectory() {
  char cwd[PATH_MAX];
  return ::getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) : std::string();
}

// The launcher's executor of fused stages: stage k is the job dir <root>/stage-<k>, run by
// RunLauncher with the same launcher options. A stage with a job.json is resumed (a finished one
// is skipped by the launcher at once); the others are planned when their turn comes, after the
// stage before has committed its shuffle.
class LauncherStages final : public StageExecutor {
 public:
  LauncherStages(const StagedJob& job, const LoadedPipeline& pipeline, LauncherOptions opts)
      : job_(job), pipeline_(pipeline), opts_(std::move(opts)) {
    // The run's services (emulated GPU ledger, MPS daemon, model hosts) start once, for the first
    // stage that runs, and serve every stage.
    if (opts_.before_start) {
      auto first = opts_.before_start;
      opts_.before_start = [first, this](const JobDir& dir) -> Result<std::vector<std::string>> {
        if (!started_) started_ = first(dir);
        return *started_;
      };
    }
  }

  Status RunStage(int k, int count, const FusedStage& stage, const StageFinalize& finalize) override {
    LauncherOptions stage_opts = opts_;
    const std::string dir = job_.stage.JobDirOf(k);
    ReportLine("stage {}/{} ({})", k + 1, count, k == 0 ? "reading the input" : "reading the shuffle of the stage before");
    if (Exists(dir + "/job.json")) {
      stage_opts.resume_dir = dir;
    } else {
      // A stage dir without job.json is one a killed run was creating: nothing in it was
      // committed (no bundle is leased before job.json exists), so it is made again.
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      if (ec) return Fail("clear the unfinished stage dir '" + dir + "': " + ec.message(), ExitCode::kRunFailed);
      JobStage at = job_.stage;
      at.index = k;
      auto planned = PlanPipelineJob(pipeline_, stage.spec, job_.processes, &at);
      if (!planned.ok()) return Fail(planned.status().message(), ExitCodeFor(planned.status()));
      planned->params["sdk_processes"] = std::to_string(job_.processes);
      stage_opts.job = std::move(*planned);
      stage_opts.job_dir = dir;
      stage_opts.resume_dir.clear();
    }
    stage_opts.finalize = [&finalize](const JobDir& d, const MetricsSnapshot& total,
                                      const std::vector<std::string>& bundles) {
      return FinalizePipelineJob(d, total, bundles, finalize);
    };
    LaunchResult r = RunLauncher(stage_opts);
    if (r.code != ExitCode::kSuccess) {
      std::string message = r.message.empty() ? "stage " + std::to_string(k + 1) + " did not finish" : r.message;
      PrintRunStopped("stage " + std::to_string(k + 1) + "/" + std::to_string(count) + ": " + message);
      ReportLine("finish the whole job with --resume '{}'", job_.stage.root);
      exit_ = r.code;
      return Aborted(message);
    }
    return Status::OK();
  }

  // The exit code of the run: the failing stage's, or kSuccess.
  ExitCode exit_code() const { return exit_; }
  // A failure that stopped the driver before a stage ran (its `run stopped:` line is printed).
  bool printed() const { return printed_; }

 private:
  Status Fail(const std::string& message, ExitCode code) {
    PrintRunStopped(message);
    printed_ = true;
    exit_ = code;
    return Aborted(message);
  }

  const StagedJob& job_;
  const LoadedPipeline& pipeline_;
  LauncherOptions opts_;
  std::optional<Result<std::vector<std::string>>> started_;
  ExitCode exit_ = ExitCode::kSuccess;
  bool printed_ = false;
};

// Runs the fused stages of a staged job through the one driver (dfw/pipeline/staged_run.h).
int RunStages(const StagedJob& job, const LoadedPipeline& pipeline, const std::vector<FusedStage>& stages,
              const LauncherOptions& opts) {
  LauncherStages executor(job, pipeline, opts);
  Status s = RunStagedJob(stages, executor);
  if (!s.ok()) {
    if (executor.exit_code() != ExitCode::kSuccess) return static_cast<int>(executor.exit_code());
    return Stop(s.message(), ExitCodeFor(s));  // the driver's own finding
  }
  ReportLine("job dir {}: {} stages finished", job.stage.root, job.stage.count);
  return 0;
}

// The stages of a staged job's record, loaded once (a --resume: the job's own text, not the
// command's).
Result<LoadedPipeline> LoadStagedPipeline(const StagedJob& job) {
  StageRegistry registry;
  RegisterBuiltinStages(registry, ModelChecks::kConfigOnly);  // SDK processes check models in full
  LoadedPipeline loaded;
  loaded.path = job.pipeline_path;
  loaded.yaml = job.pipeline_yaml;
  loaded.base_dir = BaseDirFor(job.cwd);
  ASSIGN_OR_RETURN(loaded.spec, LoadPipelineString(loaded.yaml, registry, loaded.path, loaded.base_dir));
  return loaded;
}

// FinalizeStage over one spec: the finalize of a job that is not staged.
StageFinalize FinalizeOf(const PipelineSpec& spec) {
  return [&spec](const std::string& committed_dir, const std::string& journal_path, const MetricsSnapshot& total,
                 const std::vector<int64_t>& ids) { return FinalizeStage(spec, total, committed_dir, ids, journal_path); };
}

}  // namespace

int RunPipelineJob(const PipelineLaunchOptions& o) {
  LauncherOptions opts;
  opts.job_dir = o.job_dir;
  opts.resume_dir = o.resume_dir;
  opts.full_report = o.full_report;
  opts.processes = o.processes;
  opts.threads = o.threads;
  opts.sdk_command = {o.self_exe.empty() ? SelfExecutable() : o.self_exe, "sdk_harness"};
  opts.sdk_command.insert(opts.sdk_command.end(), o.sdk_args.begin(), o.sdk_args.end());
  opts.sdk_env = o.sdk_env;
  opts.sdk_env_defaults = o.sdk_env_defaults;
  opts.memory_cgroup = o.memory_cgroup;
  opts.death_note = o.death_note;
  if (o.processes > 1) {
    // With several SDK processes each gets one BLAS thread (DefaultBlasThreads). OpenBLAS starts
    // its pool when the library loads, sized to the CPUs, and a pool thread spins (sched_yield)
    // for a while before it sleeps: N processes x that spin at start-up competes with the real
    // start-up work on a small machine. The variable sizes the pool at load; a model's explicit
    // blas_threads still grows it later. A default: a value the user exported wins.
    opts.sdk_env_defaults.push_back("OPENBLAS_NUM_THREADS=1");
  }
  opts.grace = o.grace;
  opts.before_start = o.before_start;
  opts.processes_control_dir = o.processes_control_dir;
  if (!o.resume_dir.empty() && !Exists(o.resume_dir + "/" + kStagesFile) && !Exists(o.resume_dir + "/job.json")) {
    // Stopped before its first rename (job.json, or a staged job's stages.json): nothing was
    // committed and nothing records the job, so finishing it is running it, here, from the start.
    auto unstarted = IsUnstartedJobDir(o.resume_dir);
    if (unstarted.ok() && *unstarted) {
      ReportLine("job dir {} was stopped before its job was recorded (nothing was committed): starting "
                 "the job afresh in it with this command's pipeline and options",
                 o.resume_dir);
      PipelineLaunchOptions fresh = o;
      fresh.job_dir = o.resume_dir;
      fresh.resume_dir.clear();
      return RunPipelineJob(fresh);
    }
  }
  if (!o.resume_dir.empty() && Exists(o.resume_dir + "/" + kStagesFile)) {
    // The root's lock, as a one-stage job's resume takes its job dir's: one launcher at a time.
    Result<JobLock> lock = JobLock::Acquire(o.resume_dir);
    if (!lock.ok()) return Stop(lock.status().message(), ExitCodeFor(lock.status()));
    auto staged = ReadStagedJob(o.resume_dir);
    if (!staged.ok()) return Stop(staged.status().message(), ExitCodeFor(staged.status()));
    auto loaded = LoadStagedPipeline(*staged);
    if (!loaded.ok()) return Stop(loaded.status().message(), ExitCodeFor(loaded.status()));
    auto stages = FuseStages(loaded->spec, FuseOptionsFor(staged->stage));
    if (!stages.ok()) return Stop(stages.status().message(), ExitCodeFor(stages.status()));
    if (static_cast<int>(stages->size()) != staged->stage.count) {
      return Stop("'" + o.resume_dir + "/" + kStagesFile + "' is malformed: it records " +
                      std::to_string(staged->stage.count) + " stages, its pipeline has " +
                      std::to_string(stages->size()),
                  ExitCode::kRunFailed);
    }
    return RunStages(*staged, *loaded, *stages, opts);
  }
  // The single-stage job's spec: the command's load, or on --resume the job's own, loaded once when
  // the finalize needs it (a resumed job whose bundles are all committed still finalizes).
  std::optional<PipelineSpec> resumed_spec;
  if (o.resume_dir.empty()) {
    if (o.pipeline == nullptr) return Stop("internal: no pipeline to run", ExitCode::kRunFailed);
    const LoadedPipeline& pipeline = *o.pipeline;
    if (HasShuffle(pipeline.spec)) {
      StagedJob staged;
      staged.pipeline_path = pipeline.path;
      staged.pipeline_yaml = pipeline.yaml;
      staged.processes = o.processes;
      staged.cwd = pipeline.base_dir.empty() ? CurrentDirectory() : pipeline.base_dir;
      staged.stage.partitions = DefaultShufflePartitions(o.processes);
      std::error_code ec;
      std::string root = o.job_dir.empty() ? std::string(kDefaultJobsDir) + "/" + NewJobId() : o.job_dir;
      staged.stage.root = std::filesystem::absolute(root, ec).lexically_normal().string();
      if (ec) return Stop("job dir '" + root + "': " + ec.message(), ExitCode::kRunFailed);
      while (staged.stage.root.size() > 1 && staged.stage.root.back() == '/') staged.stage.root.pop_back();
      // Cut before the job dir exists: a pipeline that cannot be cut leaves nothing behind.
      auto stages = FuseStages(pipeline.spec, FuseOptionsFor(staged.stage));
      if (!stages.ok()) return Stop(stages.status().message(), ExitCodeFor(stages.status()));
      staged.stage.count = static_cast<int>(stages->size());
      // Made and locked as JobDir::Create makes a job dir; the lock is held while the stages run.
      Result<JobLock> lock = JobDir::CreateRoot(root);
      if (!lock.ok()) return Stop(lock.status().message(), ExitCodeFor(lock.status()));
      Status wrote = WriteStagedJob(staged);
      if (!wrote.ok()) return Stop(wrote.message(), ExitCodeFor(wrote));
      ReportLine("job dir {}: {} fused stages (a Combine's or Join's shuffle between each two, {} partitions)", root, staged.stage.count,
                 staged.stage.partitions);
      return RunStages(staged, pipeline, *stages, opts);
    }
    auto job = PlanPipelineJob(pipeline, pipeline.spec, o.processes);
    if (!job.ok()) return Stop(job.status().message(), ExitCodeFor(job.status()));
    // SDK processes size their BLAS threads from it (DefaultBlasThreads): never oversubscribe.
    job->params["sdk_processes"] = std::to_string(o.processes);
    opts.job = std::move(*job);
    const StageFinalize finalize = FinalizeOf(pipeline.spec);
    opts.finalize = [finalize](const JobDir& dir, const MetricsSnapshot& total, const std::vector<std::string>& bundles) {
      return FinalizePipelineJob(dir, total, bundles, finalize);
    };
  } else {
    opts.finalize = [&resumed_spec](const JobDir& dir, const MetricsSnapshot& total,
                                    const std::vector<std::string>& bundles) -> Status {
      if (!resumed_spec) {
        StageRegistry registry;
        RegisterBuiltinStages(registry, ModelChecks::kConfigOnly);  // SDK processes check models in full
        ASSIGN_OR_RETURN(PipelineSpec spec, LoadJobPipeline(dir.info(), registry));
        resumed_spec = std::move(spec);
      }
      return FinalizePipelineJob(dir, total, bundles, FinalizeOf(*resumed_spec));
    };
  }
  LaunchResult r = RunLauncher(opts);
  if (!r.message.empty()) return Stop(r.message, r.code);
  return static_cast<int>(r.code);
}

}  // namespace dfw
