// Publishing and attaching shared model copies (layout and round-robin rule in shared_copy.h).
#include "dfw/inference/shared_copy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "dfw/common/file.h"
#include "dfw/common/strings.h"
#include "dfw/device/process_info.h"
#include "inference/weights/dtype_convert.h"

namespace dfw {
namespace {

constexpr uint64_t kDataAlignment = 4096;
constexpr FileKind kCopyHostRecordFile{"model host record", 64 * 1024};  // two short lines

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// FNV-1a: a stable, dependency-free name for a path (not a security boundary).
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Owns a file descriptor and writes all of a buffer or says why not.
class OutFile {
 public:
  explicit OutFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    open_errno_ = errno;
  }
  ~OutFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  Status status() const { return fd_ >= 0 ? Status::OK() : ErrnoError("create '" + path_ + "'", open_errno_); }
  Status Write(const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      ssize_t n = ::write(fd_, p, bytes);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError("write '" + path_ + "'", errno);
      p += n;
      bytes -= static_cast<std::size_t>(n);
    }
    return Status::OK();
  }
  Status Close() {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoError("close '" + path_ + "'", errno);
    return Status::OK();
  }

 private:
  std::string path_;
  int fd_ = -1;
  int open_errno_ = 0;
};

bool Converted(TensorDType d) { return d == TensorDType::kF16 || d == TensorDType::kBF16; }


// Writes tensor `t` (from `src`) as it appears in the published file: F16/BF16 widened to F32 in
// bounded chunks, so a multi-GiB model needs no second in-memory copy.
Status WriteTensor(OutFile& out, const TensorInfo& t, const uint8_t* src) {
  if (!Converted(t.dtype)) return out.Write(src, t.num_bytes());
  std::vector<float> chunk(std::min<uint64_t>(t.num_elements(), 1 << 16));
  for (uint64_t i = 0, n = t.num_elements(); i < n;) {
    const uint64_t m = std::min<uint64_t>(chunk.size(), n - i);
    RETURN_IF_ERROR(WidenToFloat32(t.dtype, src + 2 * i, m, chunk.data()));
    RETURN_IF_ERROR(out.Write(chunk.data(), m * sizeof(float)));
    i += m;
  }
  return Status::OK();
}

}  // namespace

std::string SharedModelsDirForJob(std::string_view job_dir) {
  std::string base(job_dir);
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/models";
}

Result<SharedCopyFiles> SharedCopyFilesFor(const std::string& models_dir, const std::string& weights_path, int copy) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(weights_path, ec);
  if (ec) return NotFound("model weights '" + weights_path + "': " + ec.message());
  const std::string base = models_dir + "/m" + Hex64(Fnv1a(canonical.string())) + "-copy" + std::to_string(copy);
  return SharedCopyFiles{base + ".safetensors", base + ".host"};
}

Result<uint64_t> PublishF32Copy(const std::string& weights_path, const std::string& out_path) {
  ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(weights_path));
  const SafetensorsHeader& h = file->header();
  nlohmann::json header = nlohmann::json::object();
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [k, v] : h.metadata) meta[k] = v;
  meta["dfworker_shared_copy_of"] = weights_path;
  header["__metadata__"] = meta;
  uint64_t offset = 0;
  for (const TensorInfo& t : h.tensors) {  // data order: the published tensors stay back to back
    const uint64_t bytes = LoadedBytes(t);
    header[t.name] = {{"dtype", Converted(t.dtype) ? "F32" : std::string(TensorDTypeName(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // Pad with spaces (allowed by the format) so the data section starts on a page boundary.
  text.append((kDataAlignment - (8 + text.size()) % kDataAlignment) % kDataAlignment, ' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>((static_cast<uint64_t>(text.size()) >> (8 * i)) & 0xff);

  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(out_path).parent_path(), ec);
  if (ec) return IoError("create the directory of '" + out_path + "': " + ec.message());
  const std::string tmp = out_path + ".tmp." + std::to_string(::getpid());
  Status written = [&]() -> Status {
    OutFile out(tmp);
    RETURN_IF_ERROR(out.status());
    RETURN_IF_ERROR(out.Write(len, sizeof len));
    RETURN_IF_ERROR(out.Write(text.data(), text.size()));
    for (const TensorInfo& t : h.tensors) RETURN_IF_ERROR(WriteTensor(out, t, file->Data(t)));
    return out.Close();
  }();
  if (written.ok() && ::rename(tmp.c_str(), out_path.c_str()) != 0) {
    written = ErrnoError("rename '" + tmp + "' to '" + out_path + "'", errno);
  }
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return written.WithContext("publish a shared F32 copy of '" + weights_path + "'");
  }
  return offset;
}

Status WriteCopyHostRecord(const std::string& path, const CopyHostRecord& r) {
  std::string text = std::to_string(r.pid) + " " + std::to_string(r.start_time) + " " + r.name + "\n";
  if (!r.cuda_ipc_handle.empty()) text += "cuda-ipc " + HexEncode(r.cuda_ipc_handle) + " " + std::to_string(r.cuda_ipc_bytes) + "\n";
  // No fsync: the record names a live process, which a crash of the machine ends anyway.
  return WriteFileAtomically(path, text, /*sync=*/false).WithContext("write model host record");
}

Result<CopyHostRecord> ReadCopyHostRecord(const std::string& path) {
  Result<std::optional<std::string>> text = ReadFileIfPresent(path, kCopyHostRecordFile);
  if (!text.ok()) return text.status().WithContext("model host record");
  if (!*text) return NotFound("model host record '" + path + "' does not exist");
  std::vector<std::string> lines = Split(**text, '\n');
  std::string line = lines[0];
  std::vector<std::string> words = Split(Trim(line), ' ');
  std::optional<int64_t> pid = words.size() == 3 ? ParseInt64(words[0]) : std::nullopt;
  std::optional<int64_t> start = words.size() == 3 ? ParseInt64(words[1]) : std::nullopt;
  if (!pid || !start || *pid <= 0 || *start < 0) {
    return DataLoss("model host record '" + path + "' is malformed: '" + line + "' (expected 'PID START_TIME NAME')");
  }
  CopyHostRecord record{static_cast<pid_t>(*pid), static_cast<uint64_t>(*start), words[2]};
  if (lines.size() > 1 && !Trim(lines[1]).empty()) {
    line = lines[1];
    std::vector<std::string> ipc = Split(Trim(line), ' ');
    const bool shaped = ipc.size() == 3 && ipc[0] == "cuda-ipc";
    std::string handle = shaped ? HexDecode(ipc[1]).value_or("") : "";
    const int64_t bytes = shaped ? ParseInt64(ipc[2]).value_or(0) : 0;
    if (handle.empty() || bytes <= 0) {
      return DataLoss("model host record '" + path + "' is malformed: second line '" + line +
                      "' (expected 'cuda-ipc HEX_HANDLE BYTES')");
    }
    record.cuda_ipc_handle = std::move(handle);
    record.cuda_ipc_bytes = static_cast<uint64_t>(bytes);
  }
  return record;
}

bool CopyHostAlive(const CopyHostRecord& r) { return device::ProcessAlive(r.pid, r.start_time); }

Result<AttachedCopy> AttachSharedCopy(const std::string& models_dir, const std::string& weights_path, int copies,
                                      int sdk_index) {
  if (copies < 1) return InvalidArgument("shared model copies must be >= 1, got " + std::to_string(copies));
  if (sdk_index < 0) return InvalidArgument("SDK index must be >= 0, got " + std::to_string(sdk_index));
  std::vector<std::string> unusable;
  for (int step = 0; step < copies; ++step) {
    const int copy = (sdk_index + step) % copies;
    ASSIGN_OR_RETURN(SharedCopyFiles files, SharedCopyFilesFor(models_dir, weights_path, copy));
    Result<CopyHostRecord> host = ReadCopyHostRecord(files.host);
    if (!host.ok()) {
      unusable.push_back("copy " + std::to_string(copy) + ": " + host.status().message());
      continue;
    }
    if (!CopyHostAlive(*host)) {
      unusable.push_back("copy " + std::to_string(copy) + ": model host '" + host->name + "' (pid " +
                         std::to_string(host->pid) + ") is not running");
      continue;
    }
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(files.weights));
    return AttachedCopy{copy, step == 0, *host, std::move(file)};
  }
  return Unavailable("no shared copy of model '" + weights_path + "' is available under '" + models_dir +
                     "': " + Join(unusable, "; "));
}

}  // namespace dfw
