// Windows in batch (beam-yaml.md §4): a transform's `windowing:` mapping parsed into a WindowFn,
// and assigning a row's window from its event timestamp. Used by WindowInto and by a Combine with
// its own `windowing:` (Beam applies a transform's windowing to its inputs).
#pragma once

#include <cstdint>

#include <yaml-cpp/yaml.h>

#include "dfw/common/status.h"
#include "dfw/record/value.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

struct WindowFn {
  enum class Kind { kGlobal, kFixed } kind = Kind::kGlobal;
  int64_t size_us = 0;    // fixed
  int64_t offset_us = 0;  // fixed: windows start at offset + k * size
};

// {type: fixed, size: 10s[, offset: 2s]} or {type: global}. Durations: a number of seconds or
// "<n>ms|s|m|h|d". sliding and sessions are valid Beam that dfworker does not run: kUnimplemented
// naming the type. Errors name the config position.
Result<WindowFn> ParseWindowing(const StageConfig& c, const YAML::Node& windowing);

// Sets the row's window from its event timestamp; a fixed window of a row without one (no
// AssignTimestamps before) is an error saying so.
Status AssignWindow(const WindowFn& fn, Row& row);

}  // namespace dfw::stages_internal
