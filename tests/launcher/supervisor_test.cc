#include "dfw/launcher/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "common/fake_process_launcher.h"
#include "dfw/launcher/progress.h"

namespace dfw {
namespace {

using fakes::FakeProcessLauncher;

ProcessSpec SpecFor(int i) {
  ProcessSpec s;
  s.argv = {"/bin/sdk", "--index", std::to_string(i)};
  return s;
}

TEST(Supervisor, StartsOneProcessPerSlotWithItsIndex) {
  FakeProcessLauncher fake;
  Supervisor sup(fake, 3, SpecFor);
  ASSERT_TRUE(sup.StartAll().ok());
  ASSERT_EQ(fake.started().size(), 3u);
  EXPECT_EQ(fake.started()[2].spec.argv.back(), "2");
  EXPECT_EQ(sup.live(), 3);
  EXPECT_EQ(sup.IndexOf(1001), 1);
  EXPECT_EQ(sup.PidOf(2), 1002);
}

TEST(Supervisor, ExitFreesTheSlotAndRestartFillsIt) {
  FakeProcessLauncher fake;
  Supervisor sup(fake, 2, SpecFor);
  ASSERT_TRUE(sup.StartAll().ok());
  ProcessExit e{1001, DecodeWaitStatus(SIGKILL)};
  EXPECT_EQ(sup.OnExit(e), 1);
  EXPECT_EQ(sup.live(), 1);
  EXPECT_FALSE(sup.OnExit(ProcessExit{4242, {}}).has_value()) << "not ours";
  ASSERT_TRUE(sup.Restart(1).ok());
  EXPECT_EQ(sup.PidOf(1), 1002);
  EXPECT_EQ(sup.restarts(), 1);
  EXPECT_EQ(sup.Restart(1).code(), StatusCode::kFailedPrecondition) << "slot already has a live process";
}

TEST(Supervisor, SignalAllReachesOnlyLiveProcesses) {
  FakeProcessLauncher fake;
  Supervisor sup(fake, 3, SpecFor);
  ASSERT_TRUE(sup.StartAll().ok());
  sup.OnExit(ProcessExit{1000, {}});
  sup.SignalAll(SIGTERM);
  EXPECT_EQ(fake.signals(), (std::vector<std::pair<pid_t, int>>{{1001, SIGTERM}, {1002, SIGTERM}}));
}

TEST(Supervisor, StartFailureIsReturned) {
  FakeProcessLauncher fake;
  fake.fail_starts = IoError("fork failed (fake)");
  Supervisor sup(fake, 1, SpecFor);
  Status s = sup.StartAll();
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(sup.live(), 0);
}

TEST(Progress, FormatsCountsRateEtaProcessesAndRetries) {
  struct Case {
    ProgressState s;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{5, 10, 1000, 2.0, 5, 4, 1, ""}, "bundles 5/10 (50%) | 500 records/s | ETA 2s | 4 processes | 1 retry"},
      {{0, 8, 0, 0.0, 0, 1, 0, ""}, "bundles 0/8 (0%) | 0 records/s | ETA - | 1 process | 0 retries"},
      {{8, 8, 80, 4.0, 4, 0, 2, ""}, "bundles 8/8 (100%) | 20 records/s | ETA 0s | 0 processes | 2 retries"},
      {{1, 8, 10, 1.0, 1, 1, 0, "stage 'P' sent 9 of 10 rows (90%) to its error output"},
       "bundles 1/8 (12%) | 10 records/s | ETA 7s | 1 process | 0 retries | stage 'P' sent 9 of 10 rows (90%) to its error output"},
  };
  for (const Case& c : cases) EXPECT_EQ(FormatProgress(c.s), c.expect);
}

// A job whose every row fails says so while it runs (before: only the summary, at the end).
TEST(Progress, NamesTheStageThatSendsMostOfItsRowsToItsErrorOutput) {
  MetricsSnapshot m;
  m.counters[{"Parse", "elements_in"}] = 1000;
  m.counters[{"Parse", "errors"}] = 600;
  m.counters[{"Generate", "elements_in"}] = 400;
  m.counters[{"Generate", "errors"}] = 396;
  m.counters[{"Write", "elements_in"}] = 4;
  EXPECT_EQ(MostlyErrorsNote(m), "stage 'Generate' sent 396 of 400 rows (99%) to its error output");
  m.counters[{"Generate", "errors"}] = 100;  // a quarter: not most
  EXPECT_EQ(MostlyErrorsNote(m), "stage 'Parse' sent 600 of 1000 rows (60%) to its error output");
  m.counters[{"Parse", "errors"}] = 500;  // half is not most
  EXPECT_EQ(MostlyErrorsNote(m), "");
  MetricsSnapshot few;
  few.counters[{"Parse", "elements_in"}] = 10;
  few.counters[{"Parse", "errors"}] = 10;  // under 100 rows: too few to say
  EXPECT_EQ(MostlyErrorsNote(few), "");
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

using fakes::FakeProcessLauncher;

TEST(Supervisor, GrowAddsSlotsWithTheNextIndicesAndStartsThem) {
  FakeProcessLauncher fake;
  Supervisor sup(fake, 2, SpecFor);
  ASSERT_TRUE(sup.StartAll().ok());
  ASSERT_TRUE(sup.Grow(2).ok());
  ASSERT_EQ(fake.started().size(), 4u);
  EXPECT_EQ(fake.started()[2].spec.argv.back(), "2");
  EXPECT_EQ(fake.started()[3].spec.argv.back(), "3");
  EXPECT_EQ(sup.size(), 4);
  EXPECT_EQ(sup.live(), 4);
  EXPECT_EQ(sup.IndexOf(1003), 3);
  // An added slot is supervised like the first ones: its exit frees it, a restart fills it.
  EXPECT_EQ(sup.OnExit(ProcessExit{1003, DecodeWaitStatus(SIGKILL)}), 3);
  ASSERT_TRUE(sup.Restart(3).ok());
  EXPECT_EQ(fake.started().back().spec.argv.back(), "3");
}

TEST(Supervisor, AGrowWhoseStartFailsLeavesTheSlotEmptyAndSaysWhy) {
  FakeProcessLauncher fake;
  Supervisor sup(fake, 1, SpecFor);
  ASSERT_TRUE(sup.StartAll().ok());
  fake.fail_starts = IoError("fork failed (fake)");
  Status s = sup.Grow(1);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fork failed"), std::string::npos) << s.message();
  EXPECT_EQ(sup.size(), 2);
  EXPECT_EQ(sup.live(), 1);
}

}  // namespace
}  // namespace dfw
