// Logging setup (spdlog). Modules log through spdlog's default logger; the CLI configures it once.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "dfw/common/status.h"

namespace dfw {

// Configures the default logger: stderr, pattern "[dfworker] LEVEL message" (plus a process tag
// such as "sdk-3" when given), at `level` (trace|debug|info|warn|error|critical|off).
// An unknown level is kInvalidArgument naming the allowed values.
Status InitLogging(std::string_view level, std::string_view process_tag = "");

// Same, but additionally appends to `file_path` (used for per-process logs in a job dir).
Status InitLoggingToFile(std::string_view level, std::string_view process_tag, const std::string& file_path);

// The one line that ends a failed run, on stderr: "run stopped: <why>" (launcher, tenants and
// staged runs alike).
void PrintRunStopped(std::string_view why);

// The run's own lines on stderr ("[dfworker] job ...: job dir ...", "[dfworker sdk-3] bundle ...
// failed: ..."): what users read and what tests and scripts grep, so their text is a contract.
// A line is formatted whole (fmt syntax, checked at compile time) and written with one write(2):
// the launcher, its SDK processes and its model hosts share one stderr, and a line written in
// pieces could be cut by another process's line. Callable from any thread; lines from several
// threads come out whole, in some order. Not async-signal-safe (formatting allocates): a signal
// handler, or a child between fork and exec, writes with write(2) itself.

// Writes "[dfworker] <message>\n" to stderr.
template <typename... Args>
void ReportLine(fmt::format_string<Args...> format, Args&&... args);

// Writes "[dfworker <tag>] <message>\n" to stderr: the line of a child process that names itself
// ("sdk-3", a model host's name), like its log lines (InitLogging's process tag). An empty tag
// keeps its place ("[dfworker ] "): a model host refused for an empty --name still says so.
template <typename... Args>
void ReportLineAs(std::string_view tag, fmt::format_string<Args...> format, Args&&... args);

// "[dfworker] <message>\n", returned: for lines kept to be written later, or written together
// with more text.
template <typename... Args>
std::string FormatReportLine(fmt::format_string<Args...> format, Args&&... args);

// Writes `text` to stderr as it is (whole lines: a table, lines made by FormatReportLine) with one
// write(2), retried after EINTR and short writes; output already buffered in stdio's stderr goes
// first. A failed write is dropped: there is nowhere left to report it.
void WriteStderr(std::string_view text);

// The one formatter behind the three above (not a template, so the formatting is compiled once):
// "[dfworker] " without a tag, "[dfworker <tag>] " with one.
std::string VFormatReportLine(std::optional<std::string_view> tag, fmt::string_view format, fmt::format_args args);

template <typename... Args>
void ReportLine(fmt::format_string<Args...> format, Args&&... args) {
  WriteStderr(VFormatReportLine(std::nullopt, format, fmt::make_format_args(args...)));
}

template <typename... Args>
void ReportLineAs(std::string_view tag, fmt::format_string<Args...> format, Args&&... args) {
  WriteStderr(VFormatReportLine(tag, format, fmt::make_format_args(args...)));
}

template <typename... Args>
std::string FormatReportLine(fmt::format_string<Args...> format, Args&&... args) {
  return VFormatReportLine(std::nullopt, format, fmt::make_format_args(args...));
}

}  // namespace dfw
