// safetensors: the Hugging Face weights format, read without copying.
//
// File layout: 8-byte little-endian header length N, N bytes of JSON header, then the data
// section. The header maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the data section) plus an optional "__metadata__" string map.
//
// Parsing is strict, because the file is untrusted input: N must fit in the file and be at most
// 100 MB; the header must be a JSON object of well-formed entries; every dtype must be a known
// safetensors dtype; shape × dtype size must equal end − begin (with overflow checks); tensors
// must not overlap, must lie inside the data section, and must cover it without holes (the
// format's rule against polyglot files). Every failure is kInvalidArgument naming the file (when
// known), the tensor and the offending value.
//
// Threading: a SafetensorsFile is immutable after Open() and may be read from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

// Every dtype the safetensors format defines; handlers say which ones they accept.
enum class TensorDType : uint8_t { kBool, kU8, kI8, kF8E5M2, kF8E4M3, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kF64, kI64, kU64 };

std::string_view TensorDTypeName(TensorDType t);  // the header spelling, e.g. "BF16"
std::size_t TensorDTypeSize(TensorDType t);       // bytes per element

struct TensorInfo {
  std::string name;
  TensorDType dtype = TensorDType::kF32;
  std::vector<int64_t> shape;  // empty = scalar
  uint64_t begin = 0;          // byte offsets relative to the data section
  uint64_t end = 0;
  uint64_t num_elements() const;
  uint64_t num_bytes() const { return end - begin; }
  std::string ShapeString() const;  // "[64, 30]"
};

// Bytes a loaded model holds for tensor t: F16/BF16 are widened to F32 on load (every backend does),
// other dtypes as stored.
uint64_t LoadedBytes(const TensorInfo& t);

struct SafetensorsHeader {
  uint64_t header_bytes = 0;  // N
  uint64_t data_bytes = 0;    // size of the data section
  std::vector<TensorInfo> tensors;  // in data order (sorted by begin)
  std::map<std::string, std::string> metadata;
  const TensorInfo* Find(std::string_view name) const;
  // data_bytes with every F16/BF16 tensor counted as F32: what the loaded model occupies.
  uint64_t loaded_bytes() const;
};

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull * 1000 * 1000;

// Parses the header from the first bytes of a file whose total size is `file_size`.
// `prefix` must hold at least 8 + N bytes (more is ignored). Pure: no I/O (this is the fuzz target).
Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view prefix, uint64_t file_size);

// An open, read-only mmapped safetensors file. Tensor data pointers stay valid while it lives.
class SafetensorsFile {
 public:
  static Result<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // kInvalidArgument naming the tensor, its shape and the flat index of the first NaN or Inf in a
  // floating-point tensor (F32, F16, BF16, F64). Reads every weight: called when a model is loaded.
  Status CheckFiniteTensors() const;
  const SafetensorsHeader& header() const { return header_; }
  // The tensor's bytes inside the mapping (aligned only as the file aligns them).
  const uint8_t* Data(const TensorInfo& t) const { return data_ + t.begin; }
  // The whole data section (every tensor's bytes; TensorInfo offsets are relative to its start).
  const uint8_t* data_section() const { return data_; }
  std::size_t data_section_bytes() const { return map_bytes_ - static_cast<std::size_t>(data_ - static_cast<const uint8_t*>(map_)); }

 private:
  SafetensorsFile(std::string path, void* map, std::size_t map_bytes, SafetensorsHeader header);
  std::string path_;
  void* map_;
  std::size_t map_bytes_;
  const uint8_t* data_;
  SafetensorsHeader header_;
};

// The bytes the file's tensors occupy once loaded (SafetensorsHeader::loaded_bytes: the data
// section, F16/BF16 counted as the F32 they become), read from the header alone: reads 8 + N
// bytes, never the weights. The planner uses it to size GPU memory before launch, so a
// half-precision model is planned at the size its model host and SDK processes really hold.
Result<uint64_t> ModelBytesFromHeader(const std::string& path);

}  // namespace dfw
