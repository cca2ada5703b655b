#include "dfw/common/logging.h"

#include <cstdio>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

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
  std::fputs(line.c_str(), stderr);
}

}  // namespace dfw
