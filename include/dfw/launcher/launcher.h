// The launcher: the worker VM's parent process. Creates (or resumes) a job dir, runs the
// coordinator on its UNIX socket, starts N SDK processes and keeps them running, commits bundle
// outputs exactly once, finalizes outputs, writes metrics.json and prints a summary.
//
// Exit codes (design.md): 0 done · 1 the job failed (a bundle failed max_attempts times, a commit
// could not be written, the job dir is unusable) · 130/143 stopped by SIGINT/SIGTERM (the job dir
// is left resumable). The first SIGINT/SIGTERM stops leasing and gives in-flight bundles `grace`;
// a second one stops every process at once.
//
// Threading: call from the main thread of a process with no other SignalWatcher; it installs
// handlers for SIGINT, SIGTERM and SIGCHLD for the duration of the call.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "dfw/common/exit_code.h"
#include "dfw/job/job_dir.h"
#include "dfw/launcher/coordinator.h"
#include "dfw/common/process_launcher.h"
#include "dfw/metrics/metrics.h"

namespace dfw {

// Where job dirs go by default: one hidden folder in the working directory, not one loose folder
// per run. Beside the pipeline's relative paths (a job records the working directory it started
// in), visible with `ls .dfworker/jobs`, and one line in a .gitignore.
inline constexpr const char* kDefaultJobsDir = "./.dfworker/jobs";

struct LauncherOptions {
  // New job: the job dir to create; empty = "<kDefaultJobsDir>/<job id>".
  std::string job_dir;
  // --resume: an existing job dir to finish (then `job` and `job_dir` are ignored).
  std::string resume_dir;
  // New job: what to run. An empty job_id gets NewJobId().
  JobInfo job;
  // Number of SDK processes (>= 1) and harness threads per process (>= 1).
  int processes = 1;
  int threads = 1;
  // argv prefix of an SDK process, e.g. {"/usr/bin/dfworker", "sdk_harness"}; the launcher
  // appends --job_dir DIR --index I --threads T --coordinator_socket PATH.
  std::vector<std::string> sdk_command;
  // "KEY=VALUE" entries for SDK processes that replace the launcher's, and defaults used only where
  // the launcher's environment lacks the key (dfw/common/child_env.h).
  std::vector<std::string> sdk_env;
  std::vector<std::string> sdk_env_defaults;
  // The job's memory cgroup (memory_cgroup.h; "" none): each SDK process started is moved into it
  // at once (MoveIntoMemoryCgroup), overlapping the kernel's wait with the process's start-up.
  std::string memory_cgroup;
  // Called for each SDK process that ends while the job runs: what to add to the line that
  // reports it (and to the bundle's error), e.g. that the kernel ended it for memory. Null = nothing.
  std::function<std::string()> death_note;
  // Lease expiry and attempts (a silent process's lease expires and the process is killed).
  CoordinatorOptions coordinator;
  // After the first SIGINT/SIGTERM: how long in-flight bundles may still commit.
  std::chrono::milliseconds grace{10000};
  // Plain progress lines (not a TTY) at this interval.
  std::chrono::milliseconds progress_interval{2000};
  // Runs once every bundle is committed, with the job's merged metrics (every committed bundle,
  // including ones committed before a resume): checks thresholds and turns committed/<sink>/
  // files into final outputs (Beam's sharded names). Null = leave them in committed/.
  // `bundles`: every bundle id, residuals of splits included, in data order (the shard order).
  std::function<Status(const JobDir&, const MetricsSnapshot& total, const std::vector<std::string>& bundles)> finalize;
  // Runs once the job dir is created (or reopened) and locked, before any SDK process starts:
  // starts what the SDK processes share (the MPS daemon) and returns extra "KEY=VALUE" entries
  // for their environment. What it starts is owned by the caller, which stops it after
  // RunLauncher returns (every exit path). An error fails the run before any process starts.
  std::function<Result<std::vector<std::string>>(const JobDir&)> before_start;
  // Process seam; null = fork+exec (MakePosixProcessLauncher).
  ProcessLauncher* process_launcher = nullptr;
  // End-of-run report with every metric (--report=full) instead of the summary.
  bool full_report = false;
  // Growing while it runs (a tenant borrowing the slots of finished tenants, tenants.md): a folder
  // (the tenant's job dir) where someone else writes `processes.want` atomically — one line, the
  // number of SDK processes wanted — and then sends this process SIGUSR1. The launcher starts the
  // missing ones with the next indices through the same spawn path (it never stops processes for a
  // lower number) and answers in `processes.now` (JSON: processes, guaranteed, added [{index,
  // at_s}]). Protocol: `processes.now` is first written once SIGUSR1 is handled (SIGUSR1 is
  // ignored from then on outside the loop, for the rest of the process), and only then is
  // `processes.want` read, so a writer that signals only when `processes.now` exists never kills
  // the process and never has its request missed. Each run (a stage, a --resume) reads it again at
  // its start. Empty = off.
  std::string processes_control_dir;
  // Set by RunLauncher, not by callers: the private socket the SDK processes connect to.
  std::string coordinator_socket;
};

struct LaunchResult {
  ExitCode code = ExitCode::kSuccess;
  std::string job_dir;  // the job dir used (empty if it could not be created)
  std::string message;  // "" on success; the "run stopped: ..." reason otherwise
};

// Runs the job to its end. Every outcome is a LaunchResult; nothing throws.
LaunchResult RunLauncher(const LauncherOptions& options);

}  // namespace dfw
