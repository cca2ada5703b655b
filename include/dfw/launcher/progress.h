// Progress of a run for humans: on a TTY one live line rewritten in place; otherwise (CI, pipes)
// a plain line every `interval`. Formatting is a pure function so it is tested without a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "dfw/metrics/metrics.h"

namespace dfw {

struct ProgressState {
  std::size_t committed = 0;  // bundles committed (including ones from a resumed run)
  std::size_t total = 0;      // bundles in the job
  int64_t records = 0;        // records in bundles committed by this run
  double elapsed_s = 0;       // since this run started
  std::size_t committed_this_run = 0;
  int live_processes = 0;
  int retries = 0;
  std::string errors_note;  // MostlyErrorsNote of the committed metrics ("" = nothing to say)
};

// When most rows of a stage go to its error output (its "errors" counter above half of its
// "elements_in", over at least kMostlyErrorsMinRows rows), a note naming the worst such stage:
// "stage 'Parse' sent 9990 of 10000 rows (99%) to its error output"; "" otherwise. A job whose
// every row fails is then visible while it runs, not only in the summary after hours of it.
inline constexpr int64_t kMostlyErrorsMinRows = 100;
std::string MostlyErrorsNote(const MetricsSnapshot& committed);

// "bundles 12/40 (30%) · 5230 records/s · ETA 8s · 4 processes · 1 retry"
std::string FormatProgress(const ProgressState& s);

class ProgressReporter {
 public:
  // `out` is written to (stderr in the launcher); `tty` selects the live line.
  ProgressReporter(std::FILE* out, bool tty, std::chrono::milliseconds interval)
      : out_(out), tty_(tty), interval_(interval) {}
  // Prints when due (every 200 ms on a TTY, every `interval` otherwise).
  void Tick(const ProgressState& s, std::chrono::steady_clock::time_point now);
  // Ends the live line (TTY) before other output follows.
  void Finish(const ProgressState& s);

 private:
  std::FILE* out_;
  bool tty_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace dfw
