// Whole-file compression of the record files (Beam's CompressionTypes), through zlib: GZIP (gzip
// members, concatenated members read as one stream) and DEFLATE (the zlib format, as Python's zlib
// writes it for Beam). Other Beam types (BZIP2, ZSTD, LZMA, SNAPPY) are refused where the option
// is read.
#pragma once

#include <zlib.h>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw::stages_io {

enum class Compression { kUncompressed, kGzip, kDeflate };

// Beam's compression_type option: AUTO, UNCOMPRESSED, GZIP or DEFLATE (case as Beam spells them).
// AUTO is kept as nullopt by the caller; this returns kInvalidArgument naming the allowed values.
Result<Compression> ParseCompression(const std::string& name);
// AUTO: by the file name's extension, as Beam detects it (.gz -> GZIP, .deflate -> DEFLATE).
Compression CompressionFromPath(const std::string& path);

// Reads a file's bytes, decompressing as it goes. Not thread-safe.
class CompressedReader {
 public:
  // kIoError when the file cannot be opened.
  static Result<std::unique_ptr<CompressedReader>> Open(const std::string& path, Compression compression);
  ~CompressedReader();
  // Up to `n` bytes into `dst`; 0 at the end. kDataLoss for a damaged or truncated stream.
  Result<std::size_t> Read(char* dst, std::size_t n);

 private:
  CompressedReader() = default;
  Result<std::size_t> Inflate(char* dst, std::size_t n);
  std::string path_;
  Compression compression_ = Compression::kUncompressed;
  FILE* file_ = nullptr;
  z_stream z_{};
  bool z_open_ = false;
  bool z_end_ = false;  // the last member ended and the file has no more input
  std::vector<char> in_;
};

// Compresses a stream of bytes written in pieces. Not thread-safe.
class Compressor {
 public:
  explicit Compressor(Compression compression) : compression_(compression) {}
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
  // Appends `in`, compressed (or as is), to `out`.
  Status Append(std::string_view in, std::string& out);
  // Ends the stream (the trailer) into `out`; the compressor can then start again.
  Status Finish(std::string& out);
  // Drops a stream that was not finished (a bundle that failed part-way).
  void Reset();

 private:
  Status Run(std::string_view in, int flush, std::string& out);
  Compression compression_;
  z_stream z_{};
  bool z_open_ = false;
};

}  // namespace dfw::stages_io
