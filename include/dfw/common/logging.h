// Logging setup (spdlog). Modules log through spdlog's default logger; the CLI configures it once.
#pragma once

#include <string>
#include <string_view>

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

}  // namespace dfw
