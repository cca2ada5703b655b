#include "dfw/launcher/progress.h"

#include <cmath>

namespace dfw {

std::string FormatProgress(const ProgressState& s) {
  char buf[256];
  int pct = s.total ? static_cast<int>(100.0 * static_cast<double>(s.committed) / static_cast<double>(s.total)) : 100;
  double rate = s.elapsed_s > 0 ? static_cast<double>(s.records) / s.elapsed_s : 0;
  std::string eta = "-";
  if (s.committed_this_run > 0 && s.elapsed_s > 0 && s.total >= s.committed) {
    double per_bundle = s.elapsed_s / static_cast<double>(s.committed_this_run);
    eta = std::to_string(static_cast<int64_t>(std::ceil(per_bundle * static_cast<double>(s.total - s.committed)))) + "s";
  }
  std::snprintf(buf, sizeof buf, "bundles %zu/%zu (%d%%) | %.0f records/s | ETA %s | %d process%s | %d retr%s",
                s.committed, s.total, pct, rate, eta.c_str(), s.live_processes, s.live_processes == 1 ? "" : "es",
                s.retries, s.retries == 1 ? "y" : "ies");
  std::string line = buf;
  if (!s.errors_note.empty()) line += " | " + s.errors_note;
  return line;
}

std::string MostlyErrorsNote(const MetricsSnapshot& committed) {
  std::string worst_stage;
  int64_t worst_errors = 0, worst_in = 0;
  for (const auto& [key, value] : committed.counters) {
    if (key.name != "errors" || value <= 0) continue;
    const int64_t in = committed.CounterOr(key.ns, "elements_in");
    if (in < kMostlyErrorsMinRows || 2 * value <= in) continue;
    // The larger share wins (compared without division: e/i > we/wi).
    if (worst_stage.empty() || static_cast<double>(value) * static_cast<double>(worst_in) >
                                   static_cast<double>(worst_errors) * static_cast<double>(in)) {
      worst_stage = key.ns;
      worst_errors = value;
      worst_in = in;
    }
  }
  if (worst_stage.empty()) return "";
  const int pct = static_cast<int>(100.0 * static_cast<double>(worst_errors) / static_cast<double>(worst_in));
  return "stage '" + worst_stage + "' sent " + std::to_string(worst_errors) + " of " + std::to_string(worst_in) + " rows (" +
         std::to_string(pct) + "%) to its error output";
}

void ProgressReporter::Tick(const ProgressState& s, std::chrono::steady_clock::time_point now) {
  auto every = tty_ ? std::chrono::milliseconds(200) : interval_;
  if (drawn_ && now - last_ < every) return;
  last_ = now;
  drawn_ = true;
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s", FormatProgress(s).c_str());
  } else {
    std::fprintf(out_, "[dfworker] progress: %s\n", FormatProgress(s).c_str());
  }
  std::fflush(out_);
}

void ProgressReporter::Finish(const ProgressState& s) {
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s\n", FormatProgress(s).c_str());
  } else {
    std::fprintf(out_, "[dfworker] progress: %s\n", FormatProgress(s).c_str());
  }
  std::fflush(out_);
}

}  // namespace dfw
