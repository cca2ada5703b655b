// StuckWatch: long activities reported while they run, in Dataflow's words, at doubling intervals.
#include "dfw/common/stuck_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

namespace dfw {
namespace {

using std::chrono::milliseconds;

TEST(StuckWatch, DataflowsWordsAndDurations) {
  EXPECT_EQ(StuckDuration(milliseconds(300'000)), "05m00s");
  EXPECT_EQ(StuckDuration(milliseconds(3'723'999)), "01h02m03s");
  EXPECT_EQ(StuckDuration(milliseconds(999)), "00m00s");
  EXPECT_EQ(StuckReportLine("Udf", milliseconds(600'000)),
            "Processing stuck in step Udf for at least 10m00s without outputting or completing in state process");
}

// Collects reports; waits for a count with a generous limit (never a fixed sleep as proof).
class Reports {
 public:
  void Add(const std::string& name, milliseconds elapsed) {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back({name, elapsed});
    cv_.notify_all();
  }
  std::vector<std::pair<std::string, milliseconds>> WaitFor(std::size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return seen_.size() >= n; });
    return seen_;
  }
  std::size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<std::string, milliseconds>> seen_;
};

TEST(StuckWatch, ALongActivityIsReportedAgainEachTimeItsTimeDoubles) {
  Reports reports;
  StuckWatch watch(milliseconds(50), [&](const std::string& n, milliseconds e) { reports.Add(n, e); });
  auto scope = watch.Watch("Slow");
  auto seen = reports.WaitFor(3);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen[0].first, "Slow");
  EXPECT_GE(seen[0].second, milliseconds(50));
  EXPECT_GE(seen[1].second, milliseconds(100));  // then at 100 ms, 200 ms, ...
  EXPECT_GE(seen[2].second, milliseconds(200));
}

TEST(StuckWatch, AnActivityThatEndedIsNotReported) {
  Reports reports;
  StuckWatch watch(milliseconds(100), [&](const std::string& n, milliseconds e) { reports.Add(n, e); });
  { auto quick = watch.Watch("Quick"); }
  auto slow = watch.Watch("Slow");
  auto seen = reports.WaitFor(1);  // the slow one's first report comes after the quick one's would have
  ASSERT_GE(seen.size(), 1u);
  for (const auto& [name, elapsed] : seen) EXPECT_EQ(name, "Slow");
}

// The watch thread is not woken when an activity starts: one started while it sleeps (its last
// activity ended) is still reported, and not before its own first report is due.
TEST(StuckWatch, AnActivityStartedWhileTheWatchSleepsIsReportedWhenDue) {
  Reports reports;
  StuckWatch watch(milliseconds(80), [&](const std::string& n, milliseconds e) { reports.Add(n, e); });
  { auto first = watch.Watch("First"); }  // starts the thread, which then sleeps with nothing open
  // Start the next one partway through that sleep, at a time the thread did not plan for.
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  cv.wait_for(lock, milliseconds(30));
  auto late = watch.Watch("Late");
  auto seen = reports.WaitFor(1);
  ASSERT_GE(seen.size(), 1u);
  EXPECT_EQ(seen[0].first, "Late");
  EXPECT_GE(seen[0].second, milliseconds(80));  // its own running time when reported
}

}  // namespace
}  // namespace dfw
