#include "dfw/common/stuck_watch.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace dfw {

std::string StuckDuration(std::chrono::milliseconds elapsed) {
  const int64_t s = std::max<int64_t>(0, elapsed.count() / 1000);
  if (s >= 3600) return fmt::format("{:02d}h{:02d}m{:02d}s", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{:02d}m{:02d}s", s / 60, s % 60);
}

std::string StuckReportLine(const std::string& step, std::chrono::milliseconds elapsed) {
  return fmt::format("Processing stuck in step {} for at least {} without outputting or completing in state process",
                     step, StuckDuration(elapsed));
}

StuckWatch::StuckWatch(std::chrono::milliseconds first_report, Reporter reporter)
    : first_report_(std::max(first_report, std::chrono::milliseconds(1))), reporter_(std::move(reporter)) {}

StuckWatch::~StuckWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StuckWatch::Scope StuckWatch::Watch(std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  open_.emplace(id, Activity{std::move(name), std::chrono::steady_clock::now(), first_report_});
  if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { Loop(); });
  // No notify: the thread already wakes in time. It last chose to sleep until the earliest of its
  // open activities' next reports and (then) + first_report_, which is no later than this
  // activity's first report, now + first_report_; it looks at this one when it wakes. (A notify
  // here woke it for every step of every batch: a third of a pipeline's context switches.)
  return Scope(this, id);
}

void StuckWatch::End(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(id);
}

void StuckWatch::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    auto wake = now + first_report_;
    std::vector<std::pair<std::string, std::chrono::milliseconds>> due;
    for (auto& [id, a] : open_) {
      const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - a.started);
      if (elapsed >= a.next_report) {
        due.emplace_back(a.name, elapsed);
        while (a.next_report <= elapsed) a.next_report *= 2;
      }
      wake = std::min(wake, a.started + a.next_report);
    }
    if (!due.empty()) {
      lock.unlock();  // the reporter logs; activities may end meanwhile
      for (const auto& [name, elapsed] : due) reporter_(name, elapsed);
      lock.lock();
      continue;
    }
    cv_.wait_until(lock, wake);
  }
}

}  // namespace dfw
