#include "dfw/common/logging.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <iterator>
#include <memory>
#include <vector>

#include "dfw/common/strings.h"

namespace dfw {
namespace {

Result<spdlog::level::level_enum> ParseLevel(std::string_view level) {
  static const std::vector<std::string> kLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  for (std::size_t i = 0; i < kLevels.size(); ++i) {
    if (level == kLevels[i]) return static_cast<spdlog::level::level_enum>(i);
  }
  if (level == "warning") return spdlog::level::warn;
  return InvalidArgument("--log_level '" + std::string(level) + "' is not a level; allowed: " + Join(kLevels) +
                         DidYouMeanSuffix(level, kLevels));
}

Status Install(std::string_view level, std::string_view tag, std::vector<spdlog::sink_ptr> sinks) {
  ASSIGN_OR_RETURN(auto lvl, ParseLevel(level));
  try {
    auto logger = std::make_shared<spdlog::logger>("dfworker", sinks.begin(), sinks.end());
    std::string pattern = "[dfworker";
    if (!tag.empty()) {
      pattern += ' ';
      pattern.append(tag.data(), tag.size());
    }
    pattern += "] %^%l%$: %v";
    logger->set_pattern(pattern);
    logger->set_level(lvl);
    logger->flush_on(spdlog::level::warn);
    spdlog::set_default_logger(std::move(logger));
  } catch (...) {
    return FromCurrentException("logging setup");
  }
  return Status::OK();
}

}  // namespace

Status InitLogging(std::string_view level, std::string_view process_tag) {
  return Install(level, process_tag, {std::make_shared<spdlog::sinks::stderr_sink_mt>()});
}

Status InitLoggingToFile(std::string_view level, std::string_view process_tag, const std::string& file_path) {
  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_sink_mt>()};
  try {
    sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file_path));
  } catch (...) {
    return FromCurrentException("open log file '" + file_path + "'");
  }
  return Install(level, process_tag, std::move(sinks));
}

void PrintRunStopped(std::string_view why) {
  std::string line = "run stopped: ";
  line.append(why);
  line += "\n";
  WriteStderr(line);
}

std::string VFormatReportLine(std::optional<std::string_view> tag, fmt::string_view format, fmt::format_args args) {
  fmt::memory_buffer line;
  constexpr std::string_view kPrefix = "[dfworker";
  line.append(kPrefix.data(), kPrefix.data() + kPrefix.size());
  if (tag) {
    line.push_back(' ');
    line.append(tag->data(), tag->data() + tag->size());
  }
  line.push_back(']');
  line.push_back(' ');
  fmt::vformat_to(std::back_inserter(line), format, args);
  line.push_back('\n');
  return fmt::to_string(line);
}

void WriteStderr(std::string_view text) {
  // stderr is unbuffered unless someone changed it; flushing keeps stdio's output ahead of ours.
  std::fflush(stderr);
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace dfw
