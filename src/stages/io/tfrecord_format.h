// TFRecord framing: each record is
//   uint64 length (little endian) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data
// (the format TensorFlow's TFRecordWriter and Beam's tfrecordio write). The CRCs come from crc32c.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "compressed_stream.h"
#include "dfw/common/status.h"

namespace dfw::stages_io {

// Appends one framed record to `out`.
void AppendTfRecordFrame(std::string& out, std::string_view data);

// A record longer than this is refused (memory stays bounded whatever a length field claims).
inline constexpr uint64_t kMaxTfRecordBytes = uint64_t{1} << 30;

// Reads the frames of one file in order. Not thread-safe.
class TfRecordReader {
 public:
  // `file_size`: the file's size when it is read uncompressed (a length past the end is then
  // refused before anything is read), -1 when compressed.
  TfRecordReader(std::unique_ptr<CompressedReader> in, std::string path, int64_t file_size)
      : in_(std::move(in)), path_(std::move(path)), file_size_(file_size) {}

  // The next record into `record`: true; false at the end of the file (which must fall between
  // records). A data CRC that does not match still returns true, with `*data_error` saying so
  // (the frame itself was sound, so reading can go on); it is cleared otherwise. A truncated frame,
  // a length whose CRC does not match, or a length too large is kDataLoss naming the record and
  // its offset in the (uncompressed) stream: nothing after it can be trusted.
  Result<bool> Next(std::string& record, std::string* data_error);

  int64_t records() const { return records_; }

 private:
  // Reads exactly n bytes unless the stream ends first; returns how many were read.
  Result<std::size_t> ReadFull(char* dst, std::size_t n);

  std::unique_ptr<CompressedReader> in_;
  std::string path_;
  int64_t file_size_;
  int64_t offset_ = 0;
  int64_t records_ = 0;
};

}  // namespace dfw::stages_io
