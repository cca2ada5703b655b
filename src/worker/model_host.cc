#include "dfw/worker/model_host.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "dfw/backend/registry.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/logging.h"
#include "dfw/common/strings.h"
#include "dfw/device/mps_client.h"
#include "dfw/device/process_info.h"
#include "dfw/inference/device_memory.h"
#include "dfw/inference/shared_copy.h"

namespace dfw {
namespace {

void Report(int fd, const std::string& line) {
  if (fd < 0) return;
  std::string text = line + "\n";
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) return;  // the launcher stopped listening: nothing else to tell
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// Everything the host holds while it runs; released in reverse order when it goes.
struct Holdings {
  std::optional<device::MpsClientSession> mps;
  SharedCopyFiles files;
  std::unique_ptr<SafetensorsFile> copy;  // the published weights, mapped
  std::unique_ptr<DeviceMemoryCharge> charge;
  uint64_t bytes = 0;
  // GPU models: the copy in device memory, exported to the SDK processes. The backend outlives
  // its buffer (members go in reverse order).
  std::unique_ptr<InferenceBackend> backend;
  std::unique_ptr<DeviceBuffer> device_copy;
};

// Uploads the published data section to the GPU and exports it (CopyHostRecord::cuda_ipc_*). No
// CUDA backend is not an error: the SDK processes then use the file, as on the CPU.
Status ExportToGpu(const ModelHostOptions& o, Holdings& h, CopyHostRecord& record) {
  Result<std::unique_ptr<InferenceBackend>> cuda = CreateBackend("cuda");
  if (!cuda.ok()) {
    ReportLineAs(o.name, "GPU model, but no CUDA backend ({}): SDK processes map the copy from host memory",
                 cuda.status().message());
    return Status::OK();
  }
  const std::size_t bytes = h.copy->data_section_bytes();
  if (bytes == 0) return Status::OK();
  h.backend = std::move(cuda).value();
  ASSIGN_OR_RETURN(h.device_copy, h.backend->UploadWeights(h.copy->data_section(), bytes));
  ASSIGN_OR_RETURN(record.cuda_ipc_handle, h.backend->ExportBuffer(*h.device_copy));
  record.cuda_ipc_bytes = bytes;
  ReportLineAs(o.name, "shared copy {} uploaded to {} ({}) and exported through CUDA IPC", o.copy, h.backend->description(),
               HumanBytes(bytes));
  return Status::OK();
}

Status Start(const ModelHostOptions& o, Holdings& h) {
  if (o.copy < 0) return InvalidArgument("model_host --copy must be >= 0, got " + std::to_string(o.copy));
  if (o.name.empty() || o.name.find(' ') != std::string::npos) {
    return InvalidArgument("model_host --name '" + o.name + "' must be non-empty without spaces");
  }
  ASSIGN_OR_RETURN(ModelProcessContext context, ModelProcessContextFromEnv(o.name, 0));
  ASSIGN_OR_RETURN(h.mps, device::MpsClientSession::RegisterFromEnv(o.name));
  if (h.mps) ApplyDaemonPinnedLimit(context, h.mps->pinned_mem_limit_bytes());
  ASSIGN_OR_RETURN(h.files, SharedCopyFilesFor(o.models_dir, o.weights_path, o.copy));
  ASSIGN_OR_RETURN(h.bytes, PublishF32Copy(o.weights_path, h.files.weights));
  ASSIGN_OR_RETURN(h.copy, SafetensorsFile::Open(h.files.weights));
  RETURN_IF_ERROR(h.copy->CheckFiniteTensors());  // refused once here, before any SDK process attaches
  ASSIGN_OR_RETURN(h.charge, DeviceMemoryCharge::Open(context));
  if (h.charge) {
    RETURN_IF_ERROR(h.charge->Charge(h.bytes, "shared copy " + std::to_string(o.copy) + " of model '" +
                                                  o.weights_path + "' (" + HumanBytes(h.bytes) + ")"));
  }
  const std::optional<uint64_t> start = device::ProcessStartTime(::getpid());
  CopyHostRecord record{::getpid(), start.value_or(0), o.name};
  if (o.device == "GPU") RETURN_IF_ERROR(ExportToGpu(o, h, record).WithContext("export shared copy to the GPU"));
  return WriteCopyHostRecord(h.files.host, record);
}

void RemoveFiles(const Holdings& h) {
  if (!h.files.host.empty()) ::unlink(h.files.host.c_str());  // first: SDK processes stop choosing this copy
  if (!h.files.weights.empty()) ::unlink(h.files.weights.c_str());
}

}  // namespace

int RunModelHost(const ModelHostOptions& o) {
  // Ctrl-C reaches the whole process group; the launcher decides when the hosts go (it gives
  // in-flight bundles a grace period first), so SIGINT is ignored and SIGTERM/SIGHUP stop the host.
  ::signal(SIGINT, SIG_IGN);
  sigset_t stop;
  sigemptyset(&stop);
  for (int s : {SIGTERM, SIGHUP}) sigaddset(&stop, s);
  ::sigprocmask(SIG_BLOCK, &stop, nullptr);

  Holdings h;
  Status started = Start(o, h);
  if (!started.ok()) {
    RemoveFiles(h);
    ReportLineAs(o.name, "error: {}", started.message());
    Report(o.ready_fd, "error: " + started.message());
    return static_cast<int>(ExitCodeFor(started));
  }
  ReportLineAs(o.name, "holding shared copy {} of '{}' ({}) in {}", o.copy, o.weights_path, HumanBytes(h.bytes),
               h.files.weights);
  Report(o.ready_fd, "ready " + std::to_string(h.bytes));
  if (o.ready_fd >= 0) ::close(o.ready_fd);

  int sig = 0;
  while (::sigwait(&stop, &sig) != 0) {
  }
  ReportLineAs(o.name, "stopping (signal {})", sig);
  RemoveFiles(h);
  return 0;
}

}  // namespace dfw
