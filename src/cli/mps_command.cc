// `dfworker mps ...` (hidden): inspect and drive a job's MPS daemon.
//   mps status --job_dir D      clients, limits and GPU memory of a running job
//   mps quit --job_dir D        stop the job's emulated daemon
//   mps fault --job_dir D       inject a fatal GPU fault into the job's emulated server
//   mps daemon --job_dir D ...  run the emulated daemon in the foreground (debugging, and what
//                               the launcher execs through MpsDaemonOptions::daemon_command)
#include <iostream>

#include "commands.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/logging.h"
#include "dfw/device/mps_client.h"
#include "dfw/device/mps_controller.h"
#include "dfw/device/mps_env.h"
#include "dfw/device/mps_status.h"

namespace dfw::cli {
namespace {

struct MpsFlags {
  std::string job_dir;
  std::string pipe_dir, log_dir;  // daemon: override <job_dir>/mps/{pipe,log}
  int ready_fd = -1;              // daemon: where to write "ready" (set by the MPS controller)
  int max_clients = 48;
  double thread_percentage = 100;
  std::string pinned_mem_limit;
};

int MpsFailure(const Status& s) {
  std::cerr << "dfworker: error: " << s.message() << "\n";
  return static_cast<int>(ExitCodeFor(s));
}

int Daemon(const MpsFlags& f) {
  device::MpsDaemonOptions o;
  if (f.job_dir.empty() && (f.pipe_dir.empty() || f.log_dir.empty())) {
    return MpsFailure(InvalidArgument("mps daemon needs --job_dir, or both --pipe_dir and --log_dir"));
  }
  if (!f.job_dir.empty()) o.dirs = device::MpsDirsForJob(f.job_dir);
  if (!f.pipe_dir.empty()) o.dirs.pipe_dir = f.pipe_dir;
  if (!f.log_dir.empty()) o.dirs.log_dir = f.log_dir;
  o.max_clients_per_device = f.max_clients;
  if (f.thread_percentage != 100) o.default_active_thread_percentage = f.thread_percentage;
  if (!f.pinned_mem_limit.empty()) {
    Result<uint64_t> bytes = device::ParseMpsSize(f.pinned_mem_limit);
    if (!bytes.ok()) return MpsFailure(bytes.status().WithContext("--pinned_mem_limit"));
    o.default_pinned_mem_limit_bytes = *bytes;
  }
  if (f.ready_fd < 0) {
    std::cerr << "dfworker: emulated MPS daemon on " << o.dirs.pipe_dir << " (log " << o.dirs.log_dir
              << "/control.log); stop it with `dfworker mps quit --job_dir D` or Ctrl-C\n";
  }
  return device::RunEmulatedMpsDaemon(o, f.ready_fd);
}

}  // namespace

void AddMpsCommand(CLI::App& app, CliContext& context) {
  auto flags = std::make_shared<MpsFlags>();
  CLI::App* mps = app.add_subcommand("mps", "Inspect or drive a job's MPS daemon");
  // Listed in --help: `dfworker mps status` is how a user sees the clients of a running job.
  mps->require_subcommand(1);

  CLI::App* status = mps->add_subcommand("status", "List the MPS clients and GPU memory of a running job");
  status->add_option("--job_dir", flags->job_dir, "The job directory")->required();
  status->callback([flags, &context] {
    Result<std::string> text = device::DescribeMpsStatus(flags->job_dir);
    if (!text.ok()) {
      context.exit_code = MpsFailure(text.status());
      return;
    }
    std::cout << *text;
    context.exit_code = 0;
  });

  CLI::App* quit = mps->add_subcommand("quit", "Stop a job's emulated MPS daemon");
  quit->add_option("--job_dir", flags->job_dir, "The job directory")->required();
  quit->callback([flags, &context] {
    Result<std::string> r = device::MpsControlCommand(device::MpsDirsForJob(flags->job_dir).pipe_dir, "quit");
    context.exit_code = r.ok() ? 0 : MpsFailure(r.status());
  });

  CLI::App* fault = mps->add_subcommand(
      "fault", "Inject a fatal GPU fault into a job's emulated MPS server (every client is told; fault-domain tests)");
  fault->add_option("--job_dir", flags->job_dir, "The job directory (of a tenants run: its parent dir)")->required();
  fault->callback([flags, &context] {
    Result<std::string> r = device::MpsControlCommand(device::MpsDirsForJob(flags->job_dir).pipe_dir, "inject_fault");
    context.exit_code = r.ok() ? 0 : MpsFailure(r.status());
  });

  CLI::App* daemon = mps->add_subcommand("daemon", "Run the emulated MPS daemon in the foreground");
  daemon->group("");  // started by the launcher
  daemon->add_option("--job_dir", flags->job_dir, "The job directory (pipe and log dirs go under <job_dir>/mps)");
  daemon->add_option("--pipe_dir", flags->pipe_dir, "CUDA_MPS_PIPE_DIRECTORY (instead of <job_dir>/mps/pipe)");
  daemon->add_option("--log_dir", flags->log_dir, "CUDA_MPS_LOG_DIRECTORY (instead of <job_dir>/mps/log)");
  daemon->add_option("--ready_fd", flags->ready_fd, "File descriptor to report readiness on (set by the launcher)");
  daemon->add_option("--max_clients", flags->max_clients, "MPS clients the device takes (48 Volta+, 16 before)")
      ->check(CLI::Range(1, 1024));
  daemon->add_option("--thread_percentage", flags->thread_percentage, "Default active thread percentage")
      ->check(CLI::Range(0.001, 100.0));
  daemon->add_option("--pinned_mem_limit", flags->pinned_mem_limit, "Default per-client pinned memory, e.g. 2G");
  daemon->callback([flags, &context] { context.exit_code = Daemon(*flags); });
}

}  // namespace dfw::cli
