// The launcher's side of shared model copies: starts one `dfworker model_host` process per shared
// copy before any SDK process starts, and stops them on every exit path of `dfworker run`.
//
// Each host is started through a ProcessLauncher (fork+exec by default, so it starts clean of the
// launcher's threads), stays in the launcher's process group, gets PR_SET_PDEATHSIG(SIGTERM) so it
// stops if the launcher dies (even by SIGKILL), and writes its stderr to <job_dir>/logs/<name>.log. Start() waits for each
// host's "ready" line; a host that reports an error (e.g. the ledger's out-of-memory message) or
// does not answer in time fails the start, and the hosts already started are stopped.
//
// A host that dies during the run (its copy is gone; SDK processes attached to it fail over to a
// live copy) is restarted by the group's watchdog thread, at most `max_restarts` times per host:
// the new host republishes the copy under the same name, so SDK processes whose copy it was attach
// to it again at their next batch. Each death and restart is one line on stderr.
//
// Threading: call Start() from the launcher's main thread. PR_SET_PDEATHSIG follows the thread that
// forked, so a restarted host (forked by the watchdog) gets SIGTERM when the watchdog exits — in
// Stop(), which stops the hosts anyway — or when the launcher dies. Stop() is idempotent; the
// destructor calls it. pids() and restarts() may be called from any thread. A given
// process_launcher is used from the watchdog thread as well as the caller's.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dfw/common/process_launcher.h"
#include "dfw/common/status.h"

namespace dfw {

struct ModelHostSpec {
  std::string weights_path;  // the model's safetensors file
  int copy = 0;              // which copy of it
  std::string name;          // "model-host-3" (unique in the job)
  std::string device = "CPU";  // the model's device in the pipeline ("GPU": the host exports a CUDA copy)
};

struct ModelHostGroupOptions {
  std::string self_exe;               // the dfworker binary (argv: model_host ...)
  std::string models_dir;             // SharedModelsDirForJob(job dir)
  std::string log_dir;                // where <name>.log goes
  std::vector<std::string> extra_env; // "K=V" added to the hosts' environment (MPS dirs, ledger path)
  std::vector<std::string> default_env;  // "K=V" for keys the launcher's environment lacks
  int timeout_ms = 60000;             // per host: publishing a multi-GiB copy takes a while
  int max_restarts = 3;               // per host, after deaths during the run; 0 = never restart
  int watch_interval_ms = 200;        // how often the watchdog looks for dead hosts
  // The process seam, used for the hosts only (it reaps every child it started); null = fork+exec
  // (MakePosixProcessLauncher). Must outlive the group.
  ProcessLauncher* process_launcher = nullptr;
};

class ModelHostGroup {
 public:
  static Result<std::unique_ptr<ModelHostGroup>> Start(const ModelHostGroupOptions& options,
                                                       const std::vector<ModelHostSpec>& hosts);
  ~ModelHostGroup();
  ModelHostGroup(const ModelHostGroup&) = delete;
  ModelHostGroup& operator=(const ModelHostGroup&) = delete;

  // Stops the watchdog, then SIGTERM to every host, wait up to 5 s each, then SIGKILL; always
  // reaps. OK when none runs. Every host death during the run is reported (a copy was lost for a
  // while, or for good when it was not restarted), kUnavailable with one clause per death.
  Status Stop();
  // Current hosts' pids, in spec order (0 once stopped, or while a dead host awaits its restart).
  std::vector<pid_t> pids() const;
  // Restarts so far, all hosts together.
  int restarts() const;

 private:
  struct Host {
    ModelHostSpec spec;
    pid_t pid = 0;
    int restarts = 0;
  };
  explicit ModelHostGroup(ModelHostGroupOptions options);
  // Starts one host and waits for its ready line; its pid.
  Result<pid_t> Spawn(const ModelHostSpec& spec);
  void Watch();
  // With mu_ held (or from Stop() once the watchdog is gone): the launcher's exits so far, and the
  // one of `pid` among them.
  void CollectExits();
  std::optional<ChildExit> TakeExit(pid_t pid);

  const ModelHostGroupOptions options_;
  std::unique_ptr<ProcessLauncher> owned_launcher_;  // when options_ named none
  ProcessLauncher& launcher_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<Host> hosts_;
  std::vector<ProcessExit> exits_;  // reaped, not yet matched to their host
  std::vector<std::string> deaths_;  // "model host 'x' (pid N) killed by signal 9 during the run ..."
  std::thread watchdog_;
};

}  // namespace dfw
