// The SDK process main loop (`dfworker sdk_harness`): connect to the job's coordinator, then
// lease a bundle, run it, commit it — until the coordinator says done.
//
// A heartbeat thread tells the coordinator the process is alive every job.json `heartbeat_ms`;
// a process that stops heartbeating (hung) has its lease expired and is killed by the launcher.
// Exit: OK when told done; kUnavailable when the coordinator is gone (the launcher died).
#pragma once

#include <sys/types.h>

#include <string>

#include "dfw/common/status.h"
#include "dfw/worker/bundle_executor.h"

namespace dfw {

struct SdkHarnessOptions {
  std::string job_dir;  // the job dir the launcher created (--job_dir)
  int index = 0;        // this process's slot (--index), for logs and metrics
  int threads = 1;      // harness threads (--threads), passed to the executor
  std::string coordinator_socket;  // --coordinator_socket from the launcher; "" = the job dir's SocketPath()
  ModelProcessContext model_process;  // how model loads meet the job's device (the entry point builds it)
  int sdk_processes = 0;  // --sdk_processes: the launcher's count when it grew the job (ExecutorContext)
  // The launcher's pid (the parent at start; 0 = not checked, as in tests that run the loop in
  // process). When the parent is no longer this pid the launcher is gone: the process takes no
  // more bundles, and when the coordinator connection closes it exits at once (a second line of
  // defence beside PR_SET_PDEATHSIG, which the launcher sets right after fork).
  pid_t launcher_pid = 0;
};

// Runs the loop with `executor` (tests pass a fake; the CLI passes MakeExecutorForJob's).
Status RunSdkHarness(const SdkHarnessOptions& options, const JobDir& dir, BundleExecutor& executor);

// Opens the job dir, builds the executor from job.json and runs the loop.
Status RunSdkHarnessMain(const SdkHarnessOptions& options);

}  // namespace dfw
