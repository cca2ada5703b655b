// Shared plumbing of the file readers: glob expansion, splitting files into byte ranges cut at
// record boundaries, reading a range, and walking its lines.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

// Files matching `pattern` (glob(3): *, ?, [..]), sorted. No match is kNotFound naming the pattern.
Result<std::vector<std::string>> ExpandGlob(const StageConfig& c, const std::string& pattern);

// Cuts every file into ranges of about `target_bytes`, each ending just after a newline (with
// `csv_quotes`, a newline outside a double-quoted field): a range ends at the first such newline
// at which it holds at least `target_bytes`, and only while the rest of the file from the range's
// start is over UncutRangeLimit(target_bytes) (so a file within that slack is one range, and is
// not read).
// Records each range's first line number. Empty files give no ranges. Line ranges read a window
// at each cut point to place the cuts, then count each range's lines with up to one thread a core
// (at most 16); CSV ranges read every byte up to the last cut in one pass (quote parity).
Result<std::vector<SourceSplit>> SplitFiles(const std::vector<std::string>& files, int64_t target_bytes,
                                            bool csv_quotes);

// Bytes [begin, end) of the split's file, followed by `padding` zero bytes (not counted in size()).
Result<std::string> ReadRange(const SourceSplit& split, std::size_t padding);

// The same bytes in a buffer that is not zero-filled first (a bundle is tens of MiB: filling it
// before reading into it costs as much as the copy itself). Only the padding is zeroed.
class RangeBuffer {
 public:
  RangeBuffer() = default;
  std::string_view view() const { return {bytes_.get(), size_}; }

 private:
  friend Result<RangeBuffer> ReadRangeBuffer(const SourceSplit& split, std::size_t padding);
  std::unique_ptr<char[]> bytes_;
  std::size_t size_ = 0;
};
Result<RangeBuffer> ReadRangeBuffer(const SourceSplit& split, std::size_t padding);

// Iterates the lines of a buffer ("\n" or "\r\n"; a last line without newline counts).
class LineCursor {
 public:
  LineCursor(std::string_view data, int64_t first_line) : data_(data), line_(first_line - 1) {}
  // False at the end. `line` excludes the terminator.
  bool Next(std::string_view& line);
  int64_t line_number() const { return line_; }  // of the line last returned
  std::size_t offset() const { return pos_; }     // byte offset of the next line in the buffer
  std::size_t size() const { return data_.size(); }
  // Stops the walk at `size` (<= size(), >= offset()): a split that gave the rest away.
  void Truncate(std::size_t size) { data_ = data_.substr(0, size); }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
  int64_t line_;
};

// The newlines in each range [ends[k-1], ends[k]) of the file open at `fd` (ends[-1] = 0; `path`
// names it in errors): up to `threads` threads, each reading a run of whole ranges of at least
// `min_run_bytes` (about equal runs) in 1 MiB blocks. SplitFiles numbers line ranges with it.
Result<std::vector<int64_t>> CountRangeNewlines(int fd, const std::string& path, const std::vector<int64_t>& ends,
                                                int threads, int64_t min_run_bytes = int64_t{8} << 20);

// True when `s` is valid UTF-8.
bool IsValidUtf8(std::string_view s);

// Where a reader at byte `pos` of `data` (a record boundary, outside any quoted field) may cut for
// dynamic work rebalancing: just after the first record-ending newline at or after
// pos + fraction * (size - pos) (with `csv_quotes`, a newline outside double quotes), and the
// number of newlines in [pos, cut) (for the residual's first line number). nullopt when there is
// no such newline, the cut would leave fewer than kMinSplitBytes, or it would leave the primary
// empty.
struct LineCut {
  std::size_t at = 0;
  int64_t newlines = 0;
};
std::optional<LineCut> FindLineCut(std::string_view data, std::size_t pos, double fraction, bool csv_quotes);

}  // namespace dfw::stages_internal

namespace dfw::stages_internal {

// One line handed to a chunk reader: its text (without the terminator) and its 1-based number in
// the file. The lines of one chunk lie in order in one buffer, `padding` readable bytes after each.
struct NumberedLine {
  std::string_view text;
  int64_t number = 0;
};

// A SplitReader over the lines of one split: reads the range once, then hands each line (and its
// 1-based line number) to `fn`, at most `max_rows` lines per Next(), or (OpenChunked) the lines of
// each Next() at once to a chunk function. Empty lines are skipped. Lines that are not valid UTF-8
// are failed here ("line N of 'path': not valid UTF-8") unless `check_utf8` is false (always so
// for a chunk function): then the callee must validate (simdjson does while parsing, so JSON skips
// a 2nd pass).
class LineSplitReader : public SplitReader {
 public:
  using LineFn = std::function<Status(std::string_view line, int64_t line_no, StageOutput& out)>;
  // The non-empty lines of one Next call at once (a reader that parses many lines in one pass);
  // the UTF-8 check is the callee's.
  using ChunkFn = std::function<Status(const std::vector<NumberedLine>& lines, StageOutput& out)>;
  static Result<std::unique_ptr<SplitReader>> Open(const SourceSplit& split, std::size_t padding, LineFn fn,
                                                   bool check_utf8 = true);
  static Result<std::unique_ptr<SplitReader>> OpenChunked(const SourceSplit& split, std::size_t padding, ChunkFn fn);
  Result<bool> Next(StageOutput& out, std::size_t max_rows) override;
  std::optional<SplitProgress> Progress() const override;
  std::optional<SourceSplit> TrySplit(double fraction) override;

 private:
  LineSplitReader(SourceSplit split, RangeBuffer data, LineFn fn, ChunkFn chunk_fn, bool check_utf8)
      : split_(std::move(split)), data_(std::move(data)), cursor_(data_.view(), split_.first_line), fn_(std::move(fn)),
        chunk_fn_(std::move(chunk_fn)), check_utf8_(check_utf8) {}
  Result<bool> NextChunk(StageOutput& out, std::size_t max_rows);
  SourceSplit split_;
  RangeBuffer data_;
  LineCursor cursor_;
  LineFn fn_;         // one line at a time, or
  ChunkFn chunk_fn_;  // the lines of a Next call at once
  std::vector<NumberedLine> chunk_;
  bool check_utf8_;
  mutable std::mutex mu_;  // Next against Progress/TrySplit (another thread)
};

}  // namespace dfw::stages_internal
