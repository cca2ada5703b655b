// The launcher's side of shared model copies: starts one `dfworker model_host` process per shared
// copy before any SDK process starts, and stops them on every exit path of `dfworker run`.
//
// Each host is fork+exec'd from the launcher (so it starts clean of the launcher's threads), stays
// in the launcher's process group, gets PR_SET_PDEATHSIG(SIGTERM) so it stops if the launcher dies
// (even by SIGKILL), and writes its stderr to <job_dir>/logs/<name>.log. Start() waits for each
// host's "ready" line; a host that reports an error (e.g. the ledger's out-of-memory message) or
// does not answer in time fails the start, and the hosts already started are stopped.
//
// Threading: call Start() from the launcher's main thread (PR_SET_PDEATHSIG follows the thread
// that forked). Stop() is idempotent; the destructor calls it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "dfw/common/status.h"

namespace dfw::cli {

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
  int timeout_ms = 60000;             // per host: publishing a multi-GiB copy takes a while
};

class ModelHostGroup {
 public:
  static Result<std::unique_ptr<ModelHostGroup>> Start(const ModelHostGroupOptions& options,
                                                       const std::vector<ModelHostSpec>& hosts);
  ~ModelHostGroup();
  ModelHostGroup(const ModelHostGroup&) = delete;
  ModelHostGroup& operator=(const ModelHostGroup&) = delete;

  // SIGTERM to every host, wait up to 5 s each, then SIGKILL; always reaps. OK when none runs.
  // A host that already died is reported (its copy was lost during the run).
  Status Stop();
  // Live hosts' pids, in spec order (0 once stopped).
  std::vector<pid_t> pids() const;

 private:
  ModelHostGroup() = default;
  Status StartOne(const ModelHostGroupOptions& options, const ModelHostSpec& spec);
  std::vector<std::pair<pid_t, std::string>> hosts_;  // pid, name
};

}  // namespace dfw::cli
