// The range of input one bundle covers, as the launcher's coordinator and the SDK processes both see
// it: the job's bundle table (job.json param kBundleTableParam, written at planning) and the ranges
// dynamic work rebalancing makes by splitting a running bundle (dfw/launcher/coordinator.h).
//
// A range is [begin, end) of one source's file, in bytes cut at record boundaries, or of an
// in-memory source (path "", begin/end are element indexes). `first_line` is the 1-based line number
// of the byte at `begin` (error positions).
//
// Text form, one range per line: "<source> <begin> <end> <first_line> <path>"; the path comes last
// and may contain spaces (not newlines). The bundle table is one "<id> " + range line per bundle.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

inline constexpr const char* kBundleTableParam = "bundle_table";

struct WorkRange {
  int source = 0;
  std::string path;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t first_line = 1;

  int64_t size() const { return end - begin; }
  bool operator==(const WorkRange& o) const {
    return source == o.source && path == o.path && begin == o.begin && end == o.end && first_line == o.first_line;
  }
  bool operator!=(const WorkRange& o) const { return !(*this == o); }
};

// nullopt when the path contains a newline (the text form cannot hold it).
std::optional<std::string> EncodeWorkRange(const WorkRange& r);
// kDataLoss naming the problem (missing field, not a number, begin > end, ...).
Result<WorkRange> DecodeWorkRange(std::string_view text);

struct TableEntry {
  std::string id;
  WorkRange range;
};
std::optional<std::string> EncodeRangeTable(const std::vector<TableEntry>& entries);
// kDataLoss naming the line and what is wrong.
Result<std::vector<TableEntry>> DecodeRangeTable(std::string_view text);

// Whether `primary` + `residual` is `whole` cut once at a point strictly inside it: same source and
// path, primary = [whole.begin, s), residual = [s, whole.end), begin < s < end, primary keeps the
// first line, and the residual's first line is not before it. "" when it is; otherwise why not.
std::string CheckSplit(const WorkRange& whole, const WorkRange& primary, const WorkRange& residual);

// Data order: by source, then path, then begin (the plan's order; residuals sort after their primary).
bool DataOrderLess(const WorkRange& a, const WorkRange& b);

}  // namespace dfw
