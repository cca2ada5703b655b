#include "dfw/job/work_range.h"

#include <tuple>

#include "dfw/common/strings.h"

namespace dfw {

std::optional<std::string> EncodeWorkRange(const WorkRange& r) {
  if (r.path.find('\n') != std::string::npos) return std::nullopt;
  return std::to_string(r.source) + ' ' + std::to_string(r.begin) + ' ' + std::to_string(r.end) + ' ' +
         std::to_string(r.first_line) + ' ' + r.path;
}

namespace {

// The five fields, or nullopt when one is missing or not a number.
std::optional<WorkRange> ParseFields(std::string_view text) {
  int64_t numbers[4];
  for (int64_t& n : numbers) {
    std::size_t sp = text.find(' ');
    auto value = sp == std::string_view::npos ? std::nullopt : ParseInt64(text.substr(0, sp));
    if (!value) return std::nullopt;
    n = *value;
    text.remove_prefix(sp + 1);
  }
  if (text.find('\n') != std::string_view::npos) return std::nullopt;
  if (numbers[0] < -1 || numbers[0] > (1 << 30)) numbers[0] = -1;  // reported as impossible below
  WorkRange r;
  r.source = static_cast<int>(numbers[0]);
  r.begin = numbers[1];
  r.end = numbers[2];
  r.first_line = numbers[3];
  r.path = std::string(text);
  return r;
}

// "" when the range is possible; otherwise its fields, for the message.
std::string Impossible(const WorkRange& r) {
  if (r.source >= 0 && r.begin >= 0 && r.begin <= r.end && r.first_line >= 1) return "";
  return "source " + std::to_string(r.source) + ", " + std::to_string(r.begin) + ".." + std::to_string(r.end) +
         ", first line " + std::to_string(r.first_line);
}

}  // namespace

Result<WorkRange> DecodeWorkRange(std::string_view text) {
  auto r = ParseFields(text);
  if (!r) {
    return DataLoss("range '" + std::string(text.substr(0, 200)) +
                    "': expected '<source> <begin> <end> <first_line> <path>'");
  }
  if (std::string why = Impossible(*r); !why.empty()) return DataLoss("range is impossible (" + why + ")");
  return *r;
}

std::optional<std::string> EncodeRangeTable(const std::vector<TableEntry>& entries) {
  std::string out;
  for (const TableEntry& e : entries) {
    auto line = EncodeWorkRange(e.range);
    if (!line || e.id.empty() || e.id.find_first_of(" \n") != std::string::npos) return std::nullopt;
    out += e.id + ' ' + *line + '\n';
  }
  return out;
}

Result<std::vector<TableEntry>> DecodeRangeTable(std::string_view text) {
  std::vector<TableEntry> entries;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    std::size_t nl = text.find('\n');
    const std::string where = "bundle table line " + std::to_string(line_no);
    if (nl == std::string_view::npos) return DataLoss(where + ": not terminated by a newline");
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::size_t sp = line.find(' ');
    if (sp == 0 || sp == std::string_view::npos) {
      return DataLoss(where + ": expected '<id> <source> <begin> <end> <first_line> <path>', got '" +
                      std::string(line.substr(0, 200)) + "'");
    }
    auto range = ParseFields(line.substr(sp + 1));
    if (!range) {
      return DataLoss(where + ": expected '<id> <source> <begin> <end> <first_line> <path>', got '" +
                      std::string(line.substr(0, 200)) + "'");
    }
    if (std::string why = Impossible(*range); !why.empty()) {
      return DataLoss(where + ": bundle " + std::string(line.substr(0, sp)) + " has an impossible range (" + why + ")");
    }
    entries.push_back(TableEntry{std::string(line.substr(0, sp)), std::move(*range)});
  }
  return entries;
}

std::string CheckSplit(const WorkRange& whole, const WorkRange& primary, const WorkRange& residual) {
  if (primary.source != whole.source || residual.source != whole.source || primary.path != whole.path ||
      residual.path != whole.path) {
    return "the halves are of another source or file";
  }
  if (primary.begin != whole.begin || residual.end != whole.end || primary.end != residual.begin) {
    return "the halves [" + std::to_string(primary.begin) + ", " + std::to_string(primary.end) + ") and [" +
           std::to_string(residual.begin) + ", " + std::to_string(residual.end) + ") do not tile [" +
           std::to_string(whole.begin) + ", " + std::to_string(whole.end) + ")";
  }
  if (primary.end <= whole.begin || primary.end >= whole.end) return "the split point is not inside the range";
  if (primary.first_line != whole.first_line || residual.first_line < whole.first_line) {
    return "the line numbers do not follow the range";
  }
  return "";
}

bool DataOrderLess(const WorkRange& a, const WorkRange& b) {
  return std::tie(a.source, a.path, a.begin, a.end) < std::tie(b.source, b.path, b.begin, b.end);
}

}  // namespace dfw
