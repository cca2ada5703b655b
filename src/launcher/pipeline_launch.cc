#include "dfw/launcher/pipeline_launch.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "dfw/common/logging.h"
#include "dfw/common/process.h"
#include "dfw/job/job_dir.h"
#include "dfw/launcher/pipeline_job_plan.h"

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
};

Status WriteStagedJob(const StagedJob& job) {
  nlohmann::json j;
  j["stages"] = job.stage.count;
  j["shuffle_partitions"] = job.stage.partitions;
  j["sdk_processes"] = job.processes;
  j["pipeline_path"] = job.pipeline_path;
  j["pipeline_yaml"] = job.pipeline_yaml;
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

// Runs the stages of a pipeline with a Combine one after the other, each a job dir of its own
// under `root`, with the same launcher options. A stage with a job.json is resumed (a finished one
// is skipped by the launcher at once); the others are planned when their turn comes, after the
// stage before has committed its shuffle.
int RunStages(const StagedJob& job, LauncherOptions opts) {
  // The run's services (emulated GPU ledger, MPS daemon, model hosts) start once, for the first
  // stage that runs, and serve every stage.
  std::optional<Result<std::vector<std::string>>> started;
  if (opts.before_start) {
    auto first = opts.before_start;
    opts.before_start = [first, &started](const JobDir& dir) -> Result<std::vector<std::string>> {
      if (!started) started = first(dir);
      return *started;
    };
  }
  for (int k = 0; k < job.stage.count; ++k) {
    LauncherOptions stage_opts = opts;
    const std::string dir = job.stage.JobDirOf(k);
    ReportLine("stage {}/{} ({})", k + 1, job.stage.count,
               k == 0 ? "reading the input" : "reading the shuffle of the stage before");
    if (Exists(dir + "/job.json")) {
      stage_opts.resume_dir = dir;
    } else {
      // A stage dir without job.json is one a killed run was creating: nothing in it was
      // committed (no bundle is leased before job.json exists), so it is made again.
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      if (ec) return Stop("clear the unfinished stage dir '" + dir + "': " + ec.message(), ExitCode::kRunFailed);
      JobStage stage = job.stage;
      stage.index = k;
      auto planned = PlanPipelineJob(job.pipeline_path, job.pipeline_yaml, job.processes, &stage);
      if (!planned.ok()) return Stop(planned.status().message(), ExitCodeFor(planned.status()));
      planned->params["sdk_processes"] = std::to_string(job.processes);
      stage_opts.job = std::move(*planned);
      stage_opts.job_dir = dir;
      stage_opts.resume_dir.clear();
    }
    LaunchResult r = RunLauncher(stage_opts);
    if (r.code != ExitCode::kSuccess) {
      std::string message = r.message.empty() ? "stage " + std::to_string(k + 1) + " did not finish" : r.message;
      PrintRunStopped("stage " + std::to_string(k + 1) + "/" + std::to_string(job.stage.count) + ": " + message);
      ReportLine("finish the whole job with --resume '{}'", job.stage.root);
      return static_cast<int>(r.code);
    }
  }
  ReportLine("job dir {}: {} stages finished", job.stage.root, job.stage.count);
  return 0;
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
  opts.sdk_env = o.sdk_env;
  opts.sdk_env_defaults = o.sdk_env_defaults;
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
  opts.finalize = [](const JobDir& dir, const MetricsSnapshot& total, const std::vector<std::string>& bundles) {
    return FinalizePipelineJob(dir, total, bundles);
  };
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
    auto staged = ReadStagedJob(o.resume_dir);
    if (!staged.ok()) return Stop(staged.status().message(), ExitCodeFor(staged.status()));
    return RunStages(*staged, opts);
  }
  if (o.resume_dir.empty()) {
    auto stages = PlanPipelineStages(o.pipeline_path, o.pipeline_yaml, o.processes);
    if (!stages.ok()) return Stop(stages.status().message(), ExitCodeFor(stages.status()));
    if (stages->count > 1) {
      StagedJob staged;
      staged.pipeline_path = o.pipeline_path;
      staged.pipeline_yaml = o.pipeline_yaml;
      staged.processes = o.processes;
      staged.stage.count = stages->count;
      staged.stage.partitions = stages->partitions;
      std::error_code ec;
      std::string root = o.job_dir.empty() ? std::string(kDefaultJobsDir) + "/" + NewJobId() : o.job_dir;
      if (Status made = MakeFolders(root, kPrivateFolderMode); !made.ok()) {
        return Stop("create job dir '" + root + "': " + made.message(), ExitCode::kRunFailed);
      }
      if (Status owned = CheckJobDirOwner(root); !owned.ok()) return Stop(owned.message(), ExitCodeFor(owned));
      if (auto unstarted = IsUnstartedJobDir(root); unstarted.ok() && *unstarted) {
        if (Status s = ReclaimUnstartedJobDir(root); !s.ok()) return Stop(s.message(), ExitCodeFor(s));
      }
      if (!std::filesystem::is_empty(root, ec)) {
        return Stop("job dir '" + root + "' already exists and is not empty; finish it with --resume '" + root +
                        "' or choose another --job_dir",
                    ExitCode::kRunFailed);  // as JobDir::Create says it for a one-stage job
      }
      if (::chmod(root.c_str(), kPrivateFolderMode) != 0) {
        return Stop("chmod 0700 job dir '" + root + "': " + std::strerror(errno), ExitCode::kRunFailed);
      }
      staged.stage.root = std::filesystem::absolute(root).lexically_normal().string();
      while (staged.stage.root.size() > 1 && staged.stage.root.back() == '/') staged.stage.root.pop_back();
      Status wrote = WriteStagedJob(staged);
      if (!wrote.ok()) return Stop(wrote.message(), ExitCodeFor(wrote));
      ReportLine("job dir {}: {} fused stages (a Combine's shuffle between them, {} partitions)", root, staged.stage.count,
                 staged.stage.partitions);
      return RunStages(staged, opts);
    }
    auto job = PlanPipelineJob(o.pipeline_path, o.pipeline_yaml, o.processes);
    if (!job.ok()) return Stop(job.status().message(), ExitCodeFor(job.status()));
    // SDK processes size their BLAS threads from it (DefaultBlasThreads): never oversubscribe.
    job->params["sdk_processes"] = std::to_string(o.processes);
    opts.job = std::move(*job);
  }
  LaunchResult r = RunLauncher(opts);
  if (!r.message.empty()) return Stop(r.message, r.code);
  return static_cast<int>(r.code);
}

}  // namespace dfw
