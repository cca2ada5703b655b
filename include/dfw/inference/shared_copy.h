// Shared model copies (Beam's `model_copies: k` / `large_model`) on the CPU and the emulated device.
//
// A shared copy lives in a model-host process (`dfworker model_host`, one per copy, started by
// `dfworker run`): the host validates the model's safetensors file, converts F16/BF16 tensors to
// F32 and publishes the result as a read-only safetensors file under <job_dir>/models/, then writes
// a host record (its pid, start time and name) beside it. SDK processes mmap the published file
// read-only (PROT_READ, MAP_SHARED): every process attached to one copy uses the same physical
// pages of the page cache, and an SDK process crash loses nothing (the host and its file stay).
//
// Which copy an SDK process attaches to: ROUND ROBIN BY SDK INDEX (copy = index mod copies),
// decided at load. Why not least loaded: on the CPU/emulated device a copy is read-only memory
// with no execution queue of its own — each SDK process computes on its own threads — so there is
// no per-copy load to balance; a static choice keeps each process's working set to one copy (one
// set of page-cache pages; on CUDA it would be one IPC mapping), spreads processes evenly (counts
// per copy differ by at most one), needs no shared counter, and is deterministic (testable).
// If the chosen copy's host is not running, the next copy in round-robin order whose host runs
// is used; with none running, attaching fails naming the hosts.
//
// Layout: <models_dir>/<key>-copy<c>.safetensors and <key>-copy<c>.host, where key is derived
// from the canonical path of the model's weights (so a host and an SDK process that name the same
// file by different relative paths agree).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "dfw/common/status.h"
#include "dfw/inference/safetensors.h"

namespace dfw {

// <job_dir>/models
std::string SharedModelsDirForJob(std::string_view job_dir);

struct SharedCopyFiles {
  std::string weights;  // the published F32 safetensors file
  std::string host;     // the host record
};
// The files of copy `copy` of the model whose weights are `weights_path` (which must exist: its
// canonical path names the model). kNotFound when it does not.
Result<SharedCopyFiles> SharedCopyFilesFor(const std::string& models_dir, const std::string& weights_path, int copy);

// Reads and validates `weights_path` (strict safetensors parsing), converts F16/BF16 tensors to F32
// (other dtypes are copied as they are), and writes the result to `out_path` atomically (a
// temporary file renamed into place) with the data section starting on a 4096-byte boundary, so
// every F32 tensor is usable in place from a mapping. Returns the bytes of the published data
// section (what the copy occupies). Errors name the file.
Result<uint64_t> PublishF32Copy(const std::string& weights_path, const std::string& out_path);

// Who holds a copy.
struct CopyHostRecord {
  CopyHostRecord() = default;
  CopyHostRecord(pid_t p, uint64_t start, std::string n) : pid(p), start_time(start), name(std::move(n)) {}

  pid_t pid = 0;
  uint64_t start_time = 0;  // /proc start time (device::ProcessStartTime); names the process across pid reuse
  std::string name;         // "model-host-0"
  // Set when the host also holds the copy in GPU memory (a `device: GPU` model and a CUDA backend):
  // the CUDA IPC handle of that allocation (raw bytes, InferenceBackend::ExportBuffer) and its size
  // — the published file's data section, byte for byte, so TensorInfo offsets apply to it. SDK
  // processes with a CUDA backend open it and launch their kernels on the host's weights; the
  // others (and every process on the CPU/emulated device) map the file. Empty/0 otherwise.
  std::string cuda_ipc_handle;
  uint64_t cuda_ipc_bytes = 0;
};
// Written atomically; read back by SDK processes. Format: "PID START_TIME NAME\n", then
// "cuda-ipc HEX BYTES\n" when the host exported GPU memory. A malformed record is kDataLoss naming
// the file.
Status WriteCopyHostRecord(const std::string& path, const CopyHostRecord& record);
Result<CopyHostRecord> ReadCopyHostRecord(const std::string& path);
// True while the host process runs (not a zombie, same start time).
bool CopyHostAlive(const CopyHostRecord& record);

struct AttachedCopy {
  int copy = 0;                           // which copy (0-based)
  bool first_choice = true;               // false when the round-robin choice's host was gone
  CopyHostRecord host;
  std::unique_ptr<SafetensorsFile> file;  // the published weights, mapped read-only and shared
};
// Attaches to a published copy of the model at `weights_path` among `copies` (>= 1): copy
// sdk_index mod copies, or the next one whose host runs. kUnavailable when no host runs (the
// message names each copy and why it is unusable).
Result<AttachedCopy> AttachSharedCopy(const std::string& models_dir, const std::string& weights_path, int copies,
                                      int sdk_index);

}  // namespace dfw
