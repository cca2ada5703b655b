// The model-host process main (`dfworker model_host`, started by `dfworker run`, one per shared copy):
// holds one shared copy of a model for the SDK processes of a job (shared_copy.h), so that an SDK
// process crash loses nothing.
//
// Start-up: registers with the job's emulated MPS daemon when CUDA_MPS_PIPE_DIRECTORY names one,
// publishes the F32 copy, charges its bytes to the job's ledger under its own name (emulated
// device; DFW_GPU_MEMORY_LEDGER), writes its host record, then reports "ready <bytes>" on ready_fd
// — or "error: <why>" (e.g. the ledger's out-of-memory message) and exits non-zero. It then waits
// for SIGTERM or SIGHUP (the launcher's stop, or PR_SET_PDEATHSIG when the launcher dies; SIGINT
// is ignored: a terminal's Ctrl-C reaches the whole process group, and the launcher stops the
// hosts only after in-flight bundles had their grace period) and removes its copy and record on
// the way out; its ledger entry and MPS registration go with it.
//
// GPU models (`--device GPU`) with a working CUDA backend: the host also uploads the published
// data section to GPU memory once and writes that allocation's CUDA IPC handle into its record;
// SDK processes with a CUDA backend open it (cudaIpcOpenMemHandle) and launch their own kernels on
// those weights — one device copy per shared copy, not one per process. Without CUDA (no GPU, the
// emulated device, a CPU model) only the file is published.
#pragma once

#include <string>

namespace dfw {

struct ModelHostOptions {
  std::string weights_path;     // the model's safetensors file (resolved as the pipeline resolves it)
  std::string models_dir;       // where to publish (SharedModelsDirForJob)
  int copy = 0;                 // which copy of the model this host holds (>= 0)
  std::string name = "model-host-0";  // its client name in the ledger, the MPS daemon and logs (no spaces)
  int ready_fd = -1;            // where to report ready/error; -1 = stderr only
  std::string device = "CPU";   // the model's `device` in the pipeline: "GPU" also exports a CUDA copy
};

// Runs the host until it is told to stop. Returns the process exit code (0 after a clean stop).
// It blocks SIGTERM/SIGHUP in the calling thread and waits for them; threads the process started
// earlier (OpenBLAS starts its pool when the binary loads) must have them blocked too, so the
// launcher blocks them before exec (launcher/model_hosts.cc) — otherwise a SIGTERM kills the host before
// it removes its copy.
int RunModelHost(const ModelHostOptions& options);

}  // namespace dfw
