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
  return buf;
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
