// Test helpers: write safetensors files and MLP model directories from in-memory tensors.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace dfw::testing_util {

struct RawTensor {
  std::string name;
  std::string dtype;           // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;
  std::string bytes;           // little-endian data
};

// Header JSON for `tensors`, laid out back to back in order; padded with spaces to 8 bytes.
inline std::string SafetensorsHeaderJson(const std::vector<RawTensor>& tensors) {
  std::string json = "{";
  uint64_t off = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const RawTensor& t = tensors[i];
    json += (i ? "," : "") + std::string("\"") + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (std::size_t d = 0; d < t.shape.size(); ++d) json += (d ? "," : "") + std::to_string(t.shape[d]);
    json += "],\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + t.bytes.size()) + "]}";
    off += t.bytes.size();
  }
  json += "}";
  while (json.size() % 8 != 0) json += ' ';
  return json;
}

inline std::string SafetensorsFromHeader(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

inline std::string SafetensorsBytes(const std::vector<RawTensor>& tensors) {
  std::string data;
  for (const RawTensor& t : tensors) data += t.bytes;
  return SafetensorsFromHeader(SafetensorsHeaderJson(tensors), data);
}

inline std::string F32Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// The temp dir and file writer every test shares (tests/test_util.h).
using dfw::testing::TempDir;
using dfw::testing::WriteFile;

}  // namespace dfw::testing_util
