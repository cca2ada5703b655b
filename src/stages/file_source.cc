#include "file_source.h"

#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <simdjson.h>

namespace dfw::stages_internal {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { if (f) std::fclose(f); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

}  // namespace

Result<std::vector<std::string>> ExpandGlob(const StageConfig& c, const std::string& pattern) {
  glob_t g{};
  // No GLOB_ERR: an unreadable or missing directory is simply "no match", reported below by pattern.
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> files;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && files.empty())) {
    return NotFound(c.Where() + ": path '" + pattern + "' matches no files");
  }
  if (rc != 0) return IoError(c.Where() + ": cannot expand path '" + pattern + "' (glob error " + std::to_string(rc) + ")");
  std::sort(files.begin(), files.end());
  return files;
}

Result<std::vector<SourceSplit>> SplitFiles(const std::vector<std::string>& files, int64_t target_bytes,
                                            bool csv_quotes) {
  std::vector<SourceSplit> out;
  if (target_bytes < 1) target_bytes = 1;
  std::vector<char> buf(1 << 20);
  for (const std::string& path : files) {
    FilePtr f(std::fopen(path.c_str(), "rb"));
    if (!f) return ErrnoError("open '" + path + "'", errno);
    SourceSplit cur{path, 0, 0, 1};
    int64_t offset = 0, line = 1;
    bool in_quotes = false;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
      for (size_t i = 0; i < n; ++i) {
        char ch = buf[i];
        if (csv_quotes && ch == '"') in_quotes = !in_quotes;  // "" toggles twice: escapes stay balanced
        if (ch != '\n') continue;
        ++line;
        if (in_quotes) continue;
        int64_t end = offset + static_cast<int64_t>(i) + 1;
        if (end - cur.begin >= target_bytes) {
          cur.end = end;
          out.push_back(cur);
          cur = SourceSplit{path, end, end, line};
        }
      }
      offset += static_cast<int64_t>(n);
    }
    if (std::ferror(f.get())) return ErrnoError("read '" + path + "'", errno);
    if (offset > cur.begin) {
      cur.end = offset;
      out.push_back(cur);
    }
  }
  return out;
}

Result<std::string> ReadRange(const SourceSplit& split, std::size_t padding) {
  FilePtr f(std::fopen(split.path.c_str(), "rb"));
  if (!f) return ErrnoError("open '" + split.path + "'", errno);
  if (std::fseek(f.get(), static_cast<long>(split.begin), SEEK_SET) != 0) return ErrnoError("seek '" + split.path + "'", errno);
  size_t size = static_cast<size_t>(split.end - split.begin);
  std::string data(size + padding, '\0');
  size_t got = std::fread(data.data(), 1, size, f.get());
  if (got != size) {
    if (std::ferror(f.get())) return ErrnoError("read '" + split.path + "'", errno);
    return DataLoss("'" + split.path + "' shrank while reading: expected " + std::to_string(size) + " bytes at offset " +
                    std::to_string(split.begin) + ", got " + std::to_string(got));
  }
  data.resize(size);  // keeps capacity (and the zeroed padding bytes behind size())
  return data;
}

bool LineCursor::Next(std::string_view& line) {
  if (pos_ >= data_.size()) return false;
  const char* start = data_.data() + pos_;
  const void* nl = std::memchr(start, '\n', data_.size() - pos_);
  size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : data_.size() - pos_;
  pos_ += len + (nl ? 1 : 0);
  if (len > 0 && start[len - 1] == '\r') --len;
  line = std::string_view(start, len);
  ++line_;
  return true;
}

bool IsValidUtf8(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

}  // namespace dfw::stages_internal

namespace dfw::stages_internal {

Result<std::unique_ptr<SplitReader>> LineSplitReader::Open(const SourceSplit& split, std::size_t padding, LineFn fn,
                                                           bool check_utf8) {
  ASSIGN_OR_RETURN(std::string data, ReadRange(split, padding));
  return std::unique_ptr<SplitReader>(new LineSplitReader(split, std::move(data), std::move(fn), check_utf8));
}

Result<bool> LineSplitReader::Next(StageOutput& out, std::size_t max_rows) {
  std::string_view line;
  for (std::size_t n = 0; n < max_rows; ++n) {
    if (!cursor_.Next(line)) return false;
    if (line.empty()) continue;
    if (check_utf8_ && !IsValidUtf8(line)) {
      RETURN_IF_ERROR(out.FailRaw(std::string(line), "line " + std::to_string(cursor_.line_number()) + " of '" +
                                                         split_.path + "': not valid UTF-8"));
      continue;
    }
    RETURN_IF_ERROR(fn_(line, cursor_.line_number(), out));
  }
  return cursor_.offset() < data_.size();
}

}  // namespace dfw::stages_internal
