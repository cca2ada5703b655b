#include "tfrecord_format.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "crc32c.h"

namespace dfw::stages_io {
namespace {

void PutLe32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutLe64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t GetLe32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t GetLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

constexpr std::size_t kTfRecordChunk = 1 << 20;

}  // namespace

void AppendTfRecordFrame(std::string& out, std::string_view data) {
  char header[12];
  PutLe64(header, data.size());
  PutLe32(header + 8, MaskedCrc32c(std::string_view(header, 8)));
  out.append(header, sizeof(header));
  out.append(data);
  char footer[4];
  PutLe32(footer, MaskedCrc32c(data));
  out.append(footer, sizeof(footer));
}

Result<std::size_t> TfRecordReader::ReadFull(char* dst, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    ASSIGN_OR_RETURN(std::size_t got, in_->Read(dst + done, n - done));
    if (got == 0) break;
    done += got;
  }
  return done;
}

Result<bool> TfRecordReader::Next(std::string& record, std::string* data_error) {
  if (data_error != nullptr) data_error->clear();
  const int64_t start = offset_;
  const int64_t index = records_ + 1;
  auto broken = [&](const std::string& why) {
    return DataLoss(fmt::format("'{}': TFRecord record {} at byte {}: {}", path_, index, start, why));
  };
  char header[12];
  ASSIGN_OR_RETURN(std::size_t got, ReadFull(header, sizeof(header)));
  if (got == 0) return false;
  if (got < sizeof(header)) return broken(fmt::format("truncated header ({} of 12 bytes)", got));
  offset_ += 12;
  const uint64_t length = GetLe64(header);
  if (GetLe32(header + 8) != MaskedCrc32c(std::string_view(header, 8))) return broken("the length's CRC does not match");
  if (length > kMaxTfRecordBytes) return broken(fmt::format("length {} exceeds the {} bytes a record may have", length, kMaxTfRecordBytes));
  if (file_size_ >= 0 && length + 4 > static_cast<uint64_t>(file_size_ - offset_)) {
    return broken(fmt::format("length {} runs past the end of the file ({} bytes)", length, file_size_));
  }
  // Grown as the bytes arrive, so a compressed stream that ends early never costs the full length.
  record.clear();
  while (record.size() < length) {
    const std::size_t have = record.size();
    const std::size_t want = static_cast<std::size_t>(std::min<uint64_t>(length - have, kTfRecordChunk));
    record.resize(have + want);
    ASSIGN_OR_RETURN(std::size_t n, ReadFull(record.data() + have, want));
    if (n < want) return broken(fmt::format("truncated data ({} of {} bytes)", have + n, length));
  }
  offset_ += static_cast<int64_t>(length);
  char footer[4];
  ASSIGN_OR_RETURN(got, ReadFull(footer, sizeof(footer)));
  if (got < sizeof(footer)) return broken("truncated data CRC");
  offset_ += 4;
  ++records_;
  if (GetLe32(footer) != MaskedCrc32c(record) && data_error != nullptr) {
    *data_error = fmt::format("'{}': TFRecord record {} at byte {}: the data's CRC does not match", path_, index, start);
  }
  return true;
}

}  // namespace dfw::stages_io
