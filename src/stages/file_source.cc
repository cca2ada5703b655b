#include "file_source.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>

#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <simdjson.h>

#include "dfw/common/file.h"

namespace dfw::stages_internal {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { if (f) std::fclose(f); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

// Newlines in [begin, end). With SSE2, 16 bytes a step: each step's compare mask is subtracted
// from 8-bit lane counters (at most 255 steps before they are summed), about twice the speed of
// memchr hopping from line to line on lines of ordinary length (82 MB of 41-byte lines: 10 ms
// against 21). The planner numbers every cut's first line with it, before any SDK process starts.
int64_t CountNewlines(const char* begin, const char* end) {
  int64_t n = 0;
#if defined(__SSE2__) && defined(__x86_64__)
  const __m128i newline = _mm_set1_epi8('\n');
  while (end - begin >= 16) {
    __m128i lanes = _mm_setzero_si128();
    for (int step = 0; step < 255 && end - begin >= 16; ++step, begin += 16) {
      lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(begin)), newline));
    }
    const __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());  // two 64-bit sums of 8 lanes each
    n += _mm_cvtsi128_si64(sums) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums));
  }
#endif
  for (; begin < end; ++begin) n += *begin == '\n' ? 1 : 0;
  return n;
}

// ReadAllAt with the file named in its error: the bytes read (fewer only at the end).
Result<std::size_t> ReadAt(int fd, const std::string& path, char* out, std::size_t len, int64_t at) {
  const int64_t got = ReadAllAt(fd, out, len, at);
  if (got < 0) return ErrnoError("read '" + path + "'", static_cast<int>(-got));
  return static_cast<std::size_t>(got);
}

// Where line ranges of about `target` bytes end in a file of `size` bytes: after the first newline
// at or after each range's start + target - 1, while the rest from a range's start is over
// `cut_above`. Only a window at each cut point is read (a long line reads on to its end), so a
// planner finds the cuts of a big file without reading it; `size` shrinks to the end of the file
// where it is shorter than stat said.
Result<std::vector<int64_t>> FindLineCuts(int fd, const std::string& path, int64_t& size, int64_t target,
                                          int64_t cut_above) {
  constexpr std::size_t kWindow = std::size_t{64} << 10;
  std::vector<int64_t> cuts;
  std::vector<char> buf(kWindow);
  int64_t win_begin = 0, win_end = 0;  // the bytes of the file in buf
  int64_t begin = 0;
  while (size - begin > cut_above) {
    int64_t at = begin + target - 1;  // the first byte that may end the range
    int64_t found = -1;
    while (found < 0 && at < size) {
      if (at < win_begin || at >= win_end) {
        ASSIGN_OR_RETURN(std::size_t n, ReadAt(fd, path, buf.data(), kWindow, at));
        if (n == 0) {
          size = at;  // the file ends here
          break;
        }
        win_begin = at;
        win_end = at + static_cast<int64_t>(n);
      }
      const char* from = buf.data() + (at - win_begin);
      const void* nl = std::memchr(from, '\n', static_cast<std::size_t>(win_end - at));
      if (nl != nullptr) {
        found = win_begin + (static_cast<const char*>(nl) - buf.data());
      } else {
        at = win_end;
      }
    }
    if (found < 0) break;  // no newline after the cut point: the rest is the last range
    cuts.push_back(found + 1);
    begin = found + 1;
  }
  return cuts;
}

}  // namespace

Result<std::vector<int64_t>> CountRangeNewlines(int fd, const std::string& path, const std::vector<int64_t>& ends,
                                                int threads, int64_t min_run_bytes) {
  std::vector<int64_t> counts(ends.size(), 0);
  if (ends.empty()) return counts;
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  // A thread a run of ranges [first, last): the runs split the file's bytes about evenly.
  const int64_t total = ends.back();
  threads = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, total / std::max<int64_t>(1, min_run_bytes))));
  std::vector<std::size_t> run_starts{0};
  for (std::size_t k = 0; k + 1 < ends.size() && static_cast<int>(run_starts.size()) < threads; ++k) {
    if (ends[k] >= total / threads * static_cast<int64_t>(run_starts.size())) run_starts.push_back(k + 1);
  }
  run_starts.push_back(ends.size());
  auto count_run = [&](std::size_t first, std::size_t last) -> Status {
    std::vector<char> block(kBlock);
    int64_t pos = first == 0 ? 0 : ends[first - 1];
    std::size_t k = first;
    while (k < last) {
      const auto want = static_cast<std::size_t>(std::min<int64_t>(static_cast<int64_t>(kBlock), ends[last - 1] - pos));
      ASSIGN_OR_RETURN(std::size_t n, ReadAt(fd, path, block.data(), want, pos));
      if (n < want) return IoError("'" + path + "' became shorter while it was being cut into ranges");
      const char* p = block.data();
      const char* block_end = p + n;
      // The block's bytes go to the ranges they fall in.
      while (k < last && p < block_end) {
        const char* range_end = block.data() + std::min<int64_t>(ends[k] - pos, static_cast<int64_t>(n));
        counts[k] += CountNewlines(p, range_end);
        p = range_end;
        if (p - block.data() == ends[k] - pos) ++k;
      }
      pos += static_cast<int64_t>(n);
    }
    return Status::OK();
  };
  const std::size_t runs = run_starts.size() - 1;
  std::vector<Status> status(runs);
  std::vector<std::thread> workers;
  for (std::size_t r = 1; r < runs; ++r) {
    try {
      workers.emplace_back([&, r] { status[r] = count_run(run_starts[r], run_starts[r + 1]); });
    } catch (const std::system_error&) {  // no thread to be had: this one counts the run
      status[r] = count_run(run_starts[r], run_starts[r + 1]);
    }
  }
  status[0] = count_run(run_starts[0], run_starts[1]);
  for (std::thread& t : workers) t.join();
  for (const Status& s : status) RETURN_IF_ERROR(s);
  return counts;
}

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
  // Only regular files are input: a FIFO would block the reader forever, a device never ends, and
  // a folder or socket cannot be read as records. Refused here, at planning, with the path named.
  for (const std::string& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) return ErrnoError(c.Where() + ": input '" + f + "'", errno);
    if (!S_ISREG(st.st_mode)) {
      const char* kind = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a folder" : S_ISSOCK(st.st_mode) ? "a socket"
                         : (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) ? "a device" : "not a regular file";
      return InvalidArgument(c.Where() + ": input '" + f + "' (matched by '" + pattern + "') is " + kind +
                             "; only regular files can be read");
    }
  }
  return files;
}

Result<std::vector<SourceSplit>> SplitFiles(const std::vector<std::string>& files, int64_t target_bytes,
                                            bool csv_quotes) {
  std::vector<SourceSplit> out;
  if (target_bytes < 1) target_bytes = 1;
  // A range is cut from the rest of its file only while that rest is over UncutRangeLimit: a file
  // (or a file's last stretch) a little over the target stays one range rather than shedding a
  // small tail, and the bytes that follow the last cut are not read here at all.
  const int64_t cut_above = UncutRangeLimit(target_bytes);
  const int threads = static_cast<int>(std::min(16u, std::max(1u, std::thread::hardware_concurrency())));
  std::vector<char> buf;
  for (const std::string& path : files) {
    FilePtr f(std::fopen(path.c_str(), "rb"));
    if (!f) return ErrnoError("open '" + path + "'", errno);
    struct stat st {};
    if (::fstat(::fileno(f.get()), &st) != 0) return ErrnoError("stat '" + path + "'", errno);
    int64_t size = static_cast<int64_t>(st.st_size);
    if (!csv_quotes) {
      // Lines: the cuts from a window at each cut point, then every range's lines counted, the
      // ranges shared among threads (the planner runs before any SDK process, alone on the host).
      ASSIGN_OR_RETURN(std::vector<int64_t> cuts, FindLineCuts(::fileno(f.get()), path, size, target_bytes, cut_above));
      ASSIGN_OR_RETURN(std::vector<int64_t> newlines, CountRangeNewlines(::fileno(f.get()), path, cuts, threads));
      int64_t begin = 0, line = 1;
      for (std::size_t k = 0; k < cuts.size(); ++k) {
        out.push_back(SourceSplit{path, begin, cuts[k], line});
        begin = cuts[k];
        line += newlines[k];
      }
      if (size > begin) out.push_back(SourceSplit{path, begin, size, line});
      continue;
    }
    // CSV: every byte matters (a newline inside quotes is not a record boundary), in one pass.
    if (buf.empty()) buf.resize(std::size_t{1} << 20);
    SourceSplit cur{path, 0, 0, 1};
    int64_t offset = 0, line = 1;
    bool in_quotes = false;
    size_t n;
    auto more_cuts = [&] { return size - cur.begin > cut_above; };
    while (more_cuts() && (n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
      const char* data = buf.data();
      for (size_t i = 0; i < n && more_cuts(); ++i) {
        char ch = data[i];
        if (ch == '"') in_quotes = !in_quotes;  // "" toggles twice: escapes stay balanced
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
    const int64_t end = more_cuts() ? offset : size;  // read to the end, or the last range
    if (end > cur.begin) {
      cur.end = end;
      out.push_back(cur);
    }
  }
  return out;
}

namespace {

// Reads the split's bytes into dst[0, size).
Status ReadInto(const SourceSplit& split, char* dst) {
  FilePtr f(std::fopen(split.path.c_str(), "rb"));
  if (!f) return ErrnoError("open '" + split.path + "'", errno);
  if (std::fseek(f.get(), static_cast<long>(split.begin), SEEK_SET) != 0) return ErrnoError("seek '" + split.path + "'", errno);
  size_t size = static_cast<size_t>(split.end - split.begin);
  size_t got = std::fread(dst, 1, size, f.get());
  if (got != size) {
    if (std::ferror(f.get())) return ErrnoError("read '" + split.path + "'", errno);
    return DataLoss("'" + split.path + "' shrank while reading: expected " + std::to_string(size) + " bytes at offset " +
                    std::to_string(split.begin) + ", got " + std::to_string(got));
  }
  return Status::OK();
}

}  // namespace

Result<std::string> ReadRange(const SourceSplit& split, std::size_t padding) {
  size_t size = static_cast<size_t>(split.end - split.begin);
  std::string data(size + padding, '\0');
  RETURN_IF_ERROR(ReadInto(split, data.data()));
  data.resize(size);  // keeps capacity (and the zeroed padding bytes behind size())
  return data;
}

Result<RangeBuffer> ReadRangeBuffer(const SourceSplit& split, std::size_t padding) {
  RangeBuffer b;
  b.size_ = static_cast<size_t>(split.end - split.begin);
  b.bytes_.reset(new char[b.size_ + padding]);  // default-initialised: not zero-filled
  std::memset(b.bytes_.get() + b.size_, 0, padding);
  RETURN_IF_ERROR(ReadInto(split, b.bytes_.get()));
  return b;
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

std::optional<LineCut> FindLineCut(std::string_view data, std::size_t pos, double fraction, bool csv_quotes) {
  if (pos >= data.size()) return std::nullopt;
  fraction = std::clamp(fraction, 0.0, 1.0);
  std::size_t target = pos + static_cast<std::size_t>(fraction * static_cast<double>(data.size() - pos));
  target = std::max<std::size_t>(target, 1);  // the primary keeps at least one byte
  LineCut cut;
  if (csv_quotes) {  // parity from the reader's position, which is outside quotes
    bool in_quotes = false;
    for (std::size_t i = pos; i < data.size(); ++i) {
      char ch = data[i];
      if (ch == '"') in_quotes = !in_quotes;
      if (ch != '\n') continue;
      if (!in_quotes && i + 1 >= target) {
        cut.at = i + 1;
        break;
      }
      ++cut.newlines;
    }
  } else {
    std::size_t from = std::max(pos, target - 1);
    const void* nl = std::memchr(data.data() + from, '\n', data.size() - from);
    if (nl != nullptr) {
      cut.at = static_cast<std::size_t>(static_cast<const char*>(nl) - data.data()) + 1;
      cut.newlines = CountNewlines(data.data() + pos, data.data() + cut.at - 1);
    }
  }
  if (cut.at == 0 || cut.at < pos || data.size() - cut.at < static_cast<std::size_t>(kMinSplitBytes)) return std::nullopt;
  ++cut.newlines;  // the newline that ends the primary
  return cut;
}

}  // namespace dfw::stages_internal

namespace dfw::stages_internal {

Result<std::unique_ptr<SplitReader>> LineSplitReader::Open(const SourceSplit& split, std::size_t padding, LineFn fn,
                                                           bool check_utf8) {
  ASSIGN_OR_RETURN(RangeBuffer data, ReadRangeBuffer(split, padding));
  return std::unique_ptr<SplitReader>(new LineSplitReader(split, std::move(data), std::move(fn), nullptr, check_utf8));
}

Result<std::unique_ptr<SplitReader>> LineSplitReader::OpenChunked(const SourceSplit& split, std::size_t padding,
                                                                  ChunkFn fn) {
  ASSIGN_OR_RETURN(RangeBuffer data, ReadRangeBuffer(split, padding));
  return std::unique_ptr<SplitReader>(new LineSplitReader(split, std::move(data), nullptr, std::move(fn), false));
}

Result<bool> LineSplitReader::NextChunk(StageOutput& out, std::size_t max_rows) {
  chunk_.clear();
  std::string_view line;
  bool more = true;
  for (std::size_t n = 0; n < max_rows; ++n) {
    if (!cursor_.Next(line)) {
      more = false;
      break;
    }
    if (!line.empty()) chunk_.push_back({line, cursor_.line_number()});
  }
  if (!chunk_.empty()) RETURN_IF_ERROR(chunk_fn_(chunk_, out));
  return more && cursor_.offset() < cursor_.size();
}

Result<bool> LineSplitReader::Next(StageOutput& out, std::size_t max_rows) {
  std::lock_guard<std::mutex> lock(mu_);
  if (chunk_fn_) return NextChunk(out, max_rows);
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
  return cursor_.offset() < cursor_.size();
}

std::optional<SplitProgress> LineSplitReader::Progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  return SplitProgress{static_cast<int64_t>(cursor_.offset()), static_cast<int64_t>(cursor_.size())};
}

std::optional<SourceSplit> LineSplitReader::TrySplit(double fraction) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string_view data = data_.view().substr(0, cursor_.size());
  auto cut = FindLineCut(data, cursor_.offset(), fraction, /*csv_quotes=*/false);
  if (!cut) return std::nullopt;
  // The cursor's last line number counts every line before offset() (each ended by a newline).
  SourceSplit residual{split_.path, split_.begin + static_cast<int64_t>(cut->at), split_.end,
                       cursor_.line_number() + 1 + cut->newlines};
  cursor_.Truncate(cut->at);
  split_.end = residual.begin;
  return residual;
}

}  // namespace dfw::stages_internal
