#include "compressed_stream.h"

#include <cerrno>
#include <climits>

#include <fmt/format.h>

namespace dfw::stages_io {
namespace {

constexpr std::size_t kCompressedChunk = 1 << 16;

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int WindowBits(Compression c) { return c == Compression::kGzip ? 15 + 16 : 15; }

}  // namespace

Result<Compression> ParseCompression(const std::string& name) {
  if (name == "UNCOMPRESSED") return Compression::kUncompressed;
  if (name == "GZIP") return Compression::kGzip;
  if (name == "DEFLATE") return Compression::kDeflate;
  if (name == "BZIP2" || name == "ZSTD" || name == "LZMA" || name == "SNAPPY") {
    return InvalidArgument(fmt::format("'{}' is a Beam compression type dfworker does not read or write; use AUTO, "
                                       "UNCOMPRESSED, GZIP or DEFLATE", name));
  }
  return InvalidArgument(fmt::format("'{}' is not a compression type; use AUTO, UNCOMPRESSED, GZIP or DEFLATE", name));
}

Compression CompressionFromPath(const std::string& path) {
  if (EndsWith(path, ".gz")) return Compression::kGzip;
  if (EndsWith(path, ".deflate")) return Compression::kDeflate;
  return Compression::kUncompressed;
}

Result<std::unique_ptr<CompressedReader>> CompressedReader::Open(const std::string& path, Compression compression) {
  std::unique_ptr<CompressedReader> r(new CompressedReader());
  r->path_ = path;
  r->compression_ = compression;
  r->file_ = std::fopen(path.c_str(), "rb");
  if (r->file_ == nullptr) return ErrnoError("open '" + path + "'", errno);
  if (compression != Compression::kUncompressed) {
    if (inflateInit2(&r->z_, WindowBits(compression)) != Z_OK) return Internal("zlib inflateInit2 failed");
    r->z_open_ = true;
    r->in_.resize(kCompressedChunk);
  }
  return r;
}

CompressedReader::~CompressedReader() {
  if (z_open_) inflateEnd(&z_);
  if (file_ != nullptr) std::fclose(file_);
}

Result<std::size_t> CompressedReader::Read(char* dst, std::size_t n) {
  if (compression_ != Compression::kUncompressed) return Inflate(dst, n);
  const std::size_t got = std::fread(dst, 1, n, file_);
  if (got < n && std::ferror(file_)) return ErrnoError("read '" + path_ + "'", errno);
  return got;
}

Result<std::size_t> CompressedReader::Inflate(char* dst, std::size_t n) {
  if (z_end_ || n == 0) return std::size_t{0};
  z_.next_out = reinterpret_cast<Bytef*>(dst);
  z_.avail_out = static_cast<uInt>(n > UINT_MAX ? UINT_MAX : n);
  const uInt want = z_.avail_out;
  while (z_.avail_out == want) {
    if (z_.avail_in == 0) {
      const std::size_t got = std::fread(in_.data(), 1, in_.size(), file_);
      if (got == 0) {
        if (std::ferror(file_)) return ErrnoError("read '" + path_ + "'", errno);
        // The input ended inside a compressed stream.
        return DataLoss(fmt::format("'{}': the compressed data is truncated", path_));
      }
      z_.next_in = reinterpret_cast<Bytef*>(in_.data());
      z_.avail_in = static_cast<uInt>(got);
    }
    const int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (Beam's readers accept concatenated members).
      if (z_.avail_in == 0) {
        const int c = std::fgetc(file_);
        if (c == EOF) {
          z_end_ = true;
          break;
        }
        in_[0] = static_cast<char>(c);
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = 1;
      }
      if (inflateReset(&z_) != Z_OK) return Internal("zlib inflateReset failed");
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return DataLoss(fmt::format("'{}': damaged compressed data ({})", path_, z_.msg != nullptr ? z_.msg : "zlib error"));
    }
  }
  return static_cast<std::size_t>(want - z_.avail_out);
}

Compressor::~Compressor() {
  if (z_open_) deflateEnd(&z_);
}

void Compressor::Reset() {
  if (z_open_) deflateEnd(&z_);
  z_open_ = false;
}

Status Compressor::Append(std::string_view in, std::string& out) {
  if (compression_ == Compression::kUncompressed) {
    out.append(in);
    return Status::OK();
  }
  return Run(in, Z_NO_FLUSH, out);
}

Status Compressor::Finish(std::string& out) {
  if (compression_ == Compression::kUncompressed) return Status::OK();
  RETURN_IF_ERROR(Run({}, Z_FINISH, out));
  deflateEnd(&z_);
  z_open_ = false;
  return Status::OK();
}

Status Compressor::Run(std::string_view in, int flush, std::string& out) {
  if (!z_open_) {
    z_ = z_stream{};
    if (deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, WindowBits(compression_), 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      return Internal("zlib deflateInit2 failed");
    }
    z_open_ = true;
  }
  std::size_t pos = 0;
  char chunk[kCompressedChunk];
  while (true) {
    const std::size_t take = std::min<std::size_t>(in.size() - pos, UINT_MAX / 2);
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + pos));
    z_.avail_in = static_cast<uInt>(take);
    const bool last_piece = pos + take == in.size();
    do {
      z_.next_out = reinterpret_cast<Bytef*>(chunk);
      z_.avail_out = sizeof(chunk);
      const int rc = deflate(&z_, last_piece ? flush : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR) return Internal("zlib deflate failed");
      out.append(chunk, sizeof(chunk) - z_.avail_out);
    } while (z_.avail_out == 0);
    pos += take;
    if (last_piece) break;
  }
  return Status::OK();
}

}  // namespace dfw::stages_io
