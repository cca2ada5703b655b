// Windows in batch (beam-yaml.md §4): a transform's `windowing:` mapping parsed into a WindowFn,
// and assigning a row's window from its event timestamp. Used by WindowInto and by a Combine with
// its own `windowing:` (Beam applies a transform's windowing to its inputs).
#pragma once

#include <cstdint>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

struct WindowFn {
  enum class Kind { kGlobal, kFixed, kSessions, kSliding } kind = Kind::kGlobal;
  int64_t size_us = 0;    // fixed, sliding
  int64_t offset_us = 0;  // fixed: windows start at offset + k * size; sliding: at offset + k * period
  int64_t period_us = 0;  // sliding: a window of `size` starts every `period`
  int64_t gap_us = 0;     // sessions: each element opens [ts, ts + gap); overlapping ones of a key merge
};

// {type: fixed, size: 10s[, offset: 2s]}, {type: sessions, gap: 10s} (where sessions_allowed: on a
// Combine, which merges them) or {type: global}. Durations: a number of seconds or
// "<n>ms|s|m|h|d". sliding is valid Beam that dfworker does not run: kUnimplemented naming it.
// Errors name the config position.
// {type: sliding, size: 20s, period: 10s[, offset: 5s]} where sliding_allowed (WindowInto, which
// emits one copy of the row per window).
Result<WindowFn> ParseWindowing(const StageConfig& c, const ConfigNode& windowing, bool sessions_allowed = false,
                                bool sliding_allowed = false);

// Sliding windows: the starts of the windows holding `ts`, latest first (Beam's SlidingWindows.assign).
std::vector<int64_t> SlidingWindowStarts(const WindowFn& fn, int64_t ts);

// Sets the row's window from its event timestamp (sessions: the element's own [ts, ts + gap),
// merged later by the Combine); a row without one (no AssignTimestamps before) is an error saying so.
Status AssignWindow(const WindowFn& fn, Row& row);

// Python's str of a window as Beam's ExtractWindowingInfo writes it: "[7.0, 30.0)", or
// "GlobalWindow".
std::string WindowString(const Row& row);
// Seconds as Beam's Timestamp floats them (1.5 for 1,500,000 us).
double Seconds(int64_t us);

}  // namespace dfw::stages_internal
