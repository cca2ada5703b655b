// Strict safetensors reader. Every check here guards a later pointer computation: a tensor
// accepted by ParseSafetensorsHeader can be read as num_elements() × dtype size bytes at
// data + begin without leaving the mapping.
#include "dfw/inference/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>

#include "dfw/common/strings.h"

namespace dfw {
namespace {

struct DTypeEntry {
  TensorDType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeEntry, 15> kDTypes = {{
    {TensorDType::kBool, "BOOL", 1},   {TensorDType::kU8, "U8", 1},       {TensorDType::kI8, "I8", 1},
    {TensorDType::kF8E5M2, "F8_E5M2", 1}, {TensorDType::kF8E4M3, "F8_E4M3", 1}, {TensorDType::kI16, "I16", 2},
    {TensorDType::kU16, "U16", 2},     {TensorDType::kF16, "F16", 2},     {TensorDType::kBF16, "BF16", 2},
    {TensorDType::kI32, "I32", 4},     {TensorDType::kU32, "U32", 4},     {TensorDType::kF32, "F32", 4},
    {TensorDType::kF64, "F64", 8},     {TensorDType::kI64, "I64", 8},     {TensorDType::kU64, "U64", 8},
}};

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

Result<TensorDType> ParseDType(const std::string& tensor, const nlohmann::json& v) {
  if (!v.is_string()) return InvalidArgument("tensor " + Quote(tensor) + ": \"dtype\" must be a string");
  const std::string& s = v.get_ref<const std::string&>();
  std::vector<std::string> names;
  for (const DTypeEntry& e : kDTypes) {
    if (e.name == s) return e.dtype;
    names.emplace_back(e.name);
  }
  return InvalidArgument("tensor " + Quote(tensor) + ": unknown dtype " + Quote(s) + DidYouMeanSuffix(s, names) +
                         "; safetensors dtypes are " + Join(names, ", "));
}

Result<uint64_t> ParseUnsigned(const std::string& tensor, std::string_view what, const nlohmann::json& v) {
  if (!v.is_number_unsigned()) {
    return InvalidArgument("tensor " + Quote(tensor) + ": " + std::string(what) + " must be a non-negative integer, got " +
                           v.dump());
  }
  return v.get<uint64_t>();
}

Result<TensorInfo> ParseTensor(const std::string& name, const nlohmann::json& entry) {
  if (!entry.is_object()) return InvalidArgument("tensor " + Quote(name) + ": entry must be an object");
  for (const auto& [key, unused] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return InvalidArgument("tensor " + Quote(name) + ": unknown key " + Quote(key) +
                             "; allowed: dtype, shape, data_offsets");
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) return InvalidArgument("tensor " + Quote(name) + ": missing \"" + key + "\"");
  }
  TensorInfo t;
  t.name = name;
  ASSIGN_OR_RETURN(t.dtype, ParseDType(name, entry["dtype"]));
  const auto& shape = entry["shape"];
  if (!shape.is_array()) return InvalidArgument("tensor " + Quote(name) + ": \"shape\" must be an array");
  uint64_t elements = 1;
  for (const auto& d : shape) {
    ASSIGN_OR_RETURN(uint64_t dim, ParseUnsigned(name, "shape dimension", d));
    if (dim > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(elements, dim, &elements)) {
      return InvalidArgument("tensor " + Quote(name) + ": shape " + shape.dump() + " overflows");
    }
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  const auto& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    return InvalidArgument("tensor " + Quote(name) + ": \"data_offsets\" must be [begin, end], got " + offsets.dump());
  }
  ASSIGN_OR_RETURN(t.begin, ParseUnsigned(name, "data_offsets begin", offsets[0]));
  ASSIGN_OR_RETURN(t.end, ParseUnsigned(name, "data_offsets end", offsets[1]));
  if (t.end < t.begin) {
    return InvalidArgument("tensor " + Quote(name) + ": data_offsets end " + std::to_string(t.end) +
                           " is before begin " + std::to_string(t.begin));
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(TensorDTypeSize(t.dtype)), &bytes)) {
    return InvalidArgument("tensor " + Quote(name) + ": shape " + t.ShapeString() + " overflows");
  }
  if (bytes != t.end - t.begin) {
    return InvalidArgument("tensor " + Quote(name) + ": shape " + t.ShapeString() + " of " +
                           std::string(TensorDTypeName(t.dtype)) + " needs " + std::to_string(bytes) +
                           " bytes but data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                           "] span " + std::to_string(t.end - t.begin));
  }
  return t;
}

Result<SafetensorsHeader> ParseJsonHeader(std::string_view text, uint64_t data_bytes) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("header is not valid JSON: ") + e.what());
  }
  if (!root.is_object()) return InvalidArgument("header must be a JSON object, got " + std::string(root.type_name()));
  SafetensorsHeader h;
  h.data_bytes = data_bytes;
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return InvalidArgument("\"__metadata__\" must be an object of strings");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) return InvalidArgument("\"__metadata__\" value for " + Quote(k) + " must be a string");
        h.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    ASSIGN_OR_RETURN(TensorInfo t, ParseTensor(name, entry));
    h.tensors.push_back(std::move(t));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  for (const TensorInfo& t : h.tensors) {
    if (t.begin < expected) {
      return InvalidArgument("tensor " + Quote(t.name) + ": data_offsets [" + std::to_string(t.begin) + ", " +
                             std::to_string(t.end) + "] overlap the previous tensor, which ends at " +
                             std::to_string(expected));
    }
    if (t.begin > expected) {
      return InvalidArgument("tensor " + Quote(t.name) + ": data_offsets begin " + std::to_string(t.begin) +
                             " leaves a hole after byte " + std::to_string(expected) + " of the data section");
    }
    if (t.end > data_bytes) {
      return InvalidArgument("tensor " + Quote(t.name) + ": data_offsets end " + std::to_string(t.end) +
                             " is past the end of the data section (" + std::to_string(data_bytes) + " bytes)");
    }
    expected = t.end;
  }
  if (expected != data_bytes) {
    return InvalidArgument("the data section has " + std::to_string(data_bytes) + " bytes but the tensors cover " +
                           std::to_string(expected) + " (trailing bytes are not allowed)");
  }
  return h;
}

Result<uint64_t> ReadHeaderLength(std::string_view prefix, uint64_t file_size) {
  if (file_size < 8 || prefix.size() < 8) {
    return InvalidArgument("file is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(prefix[i]);
  if (n > kMaxSafetensorsHeaderBytes) {
    return InvalidArgument("header length " + std::to_string(n) + " exceeds the limit of " +
                           std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  if (n > file_size - 8) {
    return InvalidArgument("header length " + std::to_string(n) + " runs past the end of the file (" +
                           std::to_string(file_size) + " bytes)");
  }
  if (n < 2) return InvalidArgument("header length " + std::to_string(n) + " is too short for a JSON object");
  return n;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Result<uint64_t> FileSize(const Fd& fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("stat '" + path + "'", errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgument("model file '" + path + "' is not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

std::string_view TensorDTypeName(TensorDType t) {
  for (const DTypeEntry& e : kDTypes)
    if (e.dtype == t) return e.name;
  return "?";
}

std::size_t TensorDTypeSize(TensorDType t) {
  for (const DTypeEntry& e : kDTypes)
    if (e.dtype == t) return e.size;
  return 0;
}

uint64_t TensorInfo::num_elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::string TensorInfo::ShapeString() const {
  std::vector<std::string> dims;
  for (int64_t d : shape) dims.push_back(std::to_string(d));
  return "[" + Join(dims, ", ") + "]";
}

const TensorInfo* SafetensorsHeader::Find(std::string_view name) const {
  for (const TensorInfo& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view prefix, uint64_t file_size) {
  ASSIGN_OR_RETURN(uint64_t n, ReadHeaderLength(prefix, file_size));
  if (prefix.size() - 8 < n) return InvalidArgument("header truncated: need " + std::to_string(n) + " bytes");
  auto header = ParseJsonHeader(prefix.substr(8, n), file_size - 8 - n);
  if (!header.ok()) return header.status();
  header->header_bytes = n;
  return header;
}

SafetensorsFile::SafetensorsFile(std::string path, void* map, std::size_t map_bytes, SafetensorsHeader header)
    : path_(std::move(path)),
      map_(map),
      map_bytes_(map_bytes),
      data_(static_cast<const uint8_t*>(map) + 8 + header.header_bytes),
      header_(std::move(header)) {}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

namespace {

// The first element of a floating-point tensor that is NaN or infinite, as an error naming the
// tensor and the index: weights like that load fine and then give the same (or NaN) prediction for
// every record, with exit 0. Checked once per model load (not by the dry run, which reads headers
// only). Bit tests, no conversions:
// all exponent bits set means Inf or NaN in F32, F16 and BF16 alike.
Status CheckFinite(const TensorInfo& t, const uint8_t* data, const std::string& path) {
  auto fail = [&](uint64_t i) {
    return InvalidArgument("model file '" + path + "': tensor '" + t.name + "' " + t.ShapeString() + " has a non-finite value (NaN or Inf) at flat index " +
                           std::to_string(i) + "; the weights are corrupt or came from a diverged training run");
  };
  // Blocks of a fixed size without an early exit (so the compiler vectorises them at -O2), the
  // first bad index looked for again in the block that has one; the last, partial block element by
  // element.
  const uint64_t n = t.num_elements();
  auto scan = [&]<typename Bits>(Bits mask) -> Status {
    constexpr uint64_t kBlock = 4096;
    for (uint64_t start = 0; start < n; start += kBlock) {
      const uint64_t end = std::min(n, start + kBlock);
      Bits any = 0;
      if (end - start == kBlock) {
        const uint8_t* block = data + sizeof(Bits) * start;
        for (uint64_t i = 0; i < kBlock; ++i) {
          Bits bits;
          std::memcpy(&bits, block + sizeof(Bits) * i, sizeof(Bits));
          any |= static_cast<Bits>((bits & mask) == mask);
        }
      } else {
        any = 1;  // look element by element
      }
      if (any == 0) continue;
      for (uint64_t i = start; i < end; ++i) {
        Bits bits;
        std::memcpy(&bits, data + sizeof(Bits) * i, sizeof(Bits));
        if ((bits & mask) == mask) return fail(i);
      }
    }
    return Status::OK();
  };
  switch (t.dtype) {
    case TensorDType::kF32: return scan(uint32_t{0x7f800000u});
    case TensorDType::kF16: return scan(uint16_t{0x7c00u});
    case TensorDType::kBF16: return scan(uint16_t{0x7f80u});
    case TensorDType::kF64: return scan(uint64_t{0x7ff0000000000000ull});
    default: return Status::OK();
  }
}

}  // namespace

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));  // a FIFO in its place never blocks: FileSize refuses it
  if (fd.get() < 0) return ErrnoError("open model file '" + path + "'", errno);
  ASSIGN_OR_RETURN(uint64_t size, FileSize(fd, path));
  if (size < 8) return InvalidArgument("model file '" + path + "': file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  // Read-only and MAP_SHARED: every process mapping the same file (SDK processes attached to one
  // shared model copy) uses the same page-cache pages, and nothing is ever copied on write.
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return ErrnoError("mmap model file '" + path + "'", errno);
  auto header = ParseSafetensorsHeader(std::string_view(static_cast<const char*>(map), size), size);
  if (!header.ok()) {
    ::munmap(map, size);
    return header.status().WithContext("model file '" + path + "'");
  }
  return std::unique_ptr<SafetensorsFile>(new SafetensorsFile(path, map, size, std::move(header).value()));
}

Status SafetensorsFile::CheckFiniteTensors() const {
  for (const TensorInfo& t : header_.tensors) RETURN_IF_ERROR(CheckFinite(t, Data(t), path_));
  return Status::OK();
}

Result<uint64_t> ModelBytesFromHeader(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));  // a FIFO in its place never blocks: FileSize refuses it
  if (fd.get() < 0) return ErrnoError("open model file '" + path + "'", errno);
  ASSIGN_OR_RETURN(uint64_t size, FileSize(fd, path));
  char len[8] = {};
  if (size < 8 || ::pread(fd.get(), len, 8, 0) != 8) {
    return InvalidArgument("model file '" + path + "': file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  }
  auto n = ReadHeaderLength(std::string_view(len, 8), size);
  if (!n.ok()) return n.status().WithContext("model file '" + path + "'");
  std::string prefix(8 + *n, '\0');
  std::memcpy(prefix.data(), len, 8);
  std::size_t got = 8;
  while (got < prefix.size()) {
    const ssize_t r = ::pread(fd.get(), prefix.data() + got, prefix.size() - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return ErrnoError("read model file '" + path + "'", r < 0 ? errno : EIO);
    got += static_cast<std::size_t>(r);
  }
  auto header = ParseSafetensorsHeader(prefix, size);
  if (!header.ok()) return header.status().WithContext("model file '" + path + "'");
  return header->loaded_bytes();
}

uint64_t LoadedBytes(const TensorInfo& t) {
  const bool widened = t.dtype == TensorDType::kF16 || t.dtype == TensorDType::kBF16;
  return widened ? t.num_elements() * 4 : t.num_bytes();
}

uint64_t SafetensorsHeader::loaded_bytes() const {
  uint64_t n = data_bytes;
  for (const TensorInfo& t : tensors) n += LoadedBytes(t) - t.num_bytes();
  return n;
}

}  // namespace dfw
