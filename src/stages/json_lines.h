// JSON Lines into rows: one JSON object per line, parsed with simdjson. ReadFromJson's parser,
// kept apart from the stage so the two ways of parsing can be checked against each other.
//
// ParseLine parses one line on its own. ParseLines parses the lines of a chunk in one simdjson
// parse_many pass (one structural scan over the whole chunk instead of a parse set-up per line:
// records of a few dozen bytes spend most of a per-line parse in that set-up) and accepts a
// document only when it is exactly the text of the line it stands for; at the first line where
// that does not hold (an error, two documents on a line, one document over two lines, a line of
// blanks, a scalar), that line and the rest of the chunk go through ParseLine (invalid UTF-8
// anywhere fails the pass's scan of the whole chunk: then every line does). Every line thus gets
// the row or the error row ParseLine gives it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"
#include "file_source.h"

namespace dfw::stages_internal {

class JsonLinesParser {
 public:
  // `path` names the file in error messages.
  explicit JsonLinesParser(std::string path);
  ~JsonLinesParser();
  JsonLinesParser(const JsonLinesParser&) = delete;
  JsonLinesParser& operator=(const JsonLinesParser&) = delete;

  // simdjson reads this many bytes past a line's end: the caller's buffer must have them.
  static std::size_t Padding();

  // `line` (number `line_no`) as a row in out, or an error row naming the line and the reason.
  Status ParseLine(std::string_view line, int64_t line_no, StageOutput& out);
  // The same outcome for each of `lines` (consecutive lines of one buffer) as ParseLine's.
  Status ParseLines(const std::vector<NumberedLine>& lines, StageOutput& out);
  // Lines ParseLines has taken from its one pass (not line by line), so far.
  int64_t lines_in_one_pass() const { return lines_in_one_pass_; }

 private:
  struct Impl;
  std::string path_;
  std::unique_ptr<Impl> impl_;
  int64_t lines_in_one_pass_ = 0;
};

}  // namespace dfw::stages_internal
