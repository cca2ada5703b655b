#include "dfw/launcher/coordinator.h"

#include <gtest/gtest.h>

namespace dfw {
namespace {

using std::chrono::milliseconds;

// A fake clock: time only moves when the test says so.
struct FakeClock {
  SteadyTime now{};
  void Advance(milliseconds d) { now += d; }
};

class CoordinatorTest : public ::testing::Test {
 protected:
  Coordinator Make(std::vector<std::string> bundles, std::set<std::string> committed = {}) {
    CoordinatorOptions o;
    o.max_attempts = 4;
    o.lease_timeout = milliseconds(1000);
    auto c = Coordinator::Make(o, bundles, committed);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }
  FakeClock clock_;
};

TEST_F(CoordinatorTest, LeasesEachBundleOnceInPlanOrderThenFinishes) {
  Coordinator c = Make({"a", "b"});
  auto l1 = c.Grant(100, clock_.now);
  auto l2 = c.Grant(101, clock_.now);
  ASSERT_TRUE(l1 && l2);
  EXPECT_EQ(l1->bundle, "a");
  EXPECT_EQ(l2->bundle, "b");
  EXPECT_EQ(l1->attempt, 1);
  EXPECT_FALSE(c.Grant(102, clock_.now).has_value());
  EXPECT_TRUE(c.ShouldWait());
  EXPECT_EQ(c.Commit(l1->id), CommitDecision::kAccepted);
  EXPECT_EQ(c.Commit(l2->id), CommitDecision::kAccepted);
  EXPECT_TRUE(c.finished());
  EXPECT_FALSE(c.ShouldWait());
  EXPECT_FALSE(c.failed());
}

TEST_F(CoordinatorTest, SilentLeaseExpiresAndItsProcessIsReportedForKilling) {
  Coordinator c = Make({"a"});
  auto l = c.Grant(100, clock_.now);
  clock_.Advance(milliseconds(900));
  c.Heartbeat(100, clock_.now);
  clock_.Advance(milliseconds(900));
  EXPECT_TRUE(c.ExpireSilent(clock_.now).empty()) << "the heartbeat at 900 ms keeps the lease alive";
  clock_.Advance(milliseconds(200));
  EXPECT_EQ(c.ExpireSilent(clock_.now), std::vector<int64_t>{100});
  EXPECT_EQ(c.live_leases(), 0u);
  EXPECT_EQ(c.retries(), 1);
  auto again = c.Grant(200, clock_.now);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->bundle, "a");
  EXPECT_EQ(again->attempt, 2);
  EXPECT_NE(again->id, l->id);
}

TEST_F(CoordinatorTest, LateCommitOfAnExpiredLeaseIsStaleAndTheNewLeaseCommits) {
  Coordinator c = Make({"a"});
  auto old_lease = c.Grant(100, clock_.now);
  clock_.Advance(milliseconds(1500));
  c.ExpireSilent(clock_.now);
  auto new_lease = c.Grant(200, clock_.now);
  ASSERT_TRUE(new_lease.has_value());
  EXPECT_EQ(c.Commit(old_lease->id), CommitDecision::kStale);
  EXPECT_FALSE(c.finished());
  EXPECT_EQ(c.Commit(new_lease->id), CommitDecision::kAccepted);
  EXPECT_EQ(c.Commit(new_lease->id), CommitDecision::kStale) << "a lease commits once";
  EXPECT_TRUE(c.finished());
}

TEST_F(CoordinatorTest, DeadProcessReturnsItsLeasesToTheQueue) {
  Coordinator c = Make({"a", "b", "c"});
  auto la = c.Grant(100, clock_.now);
  auto lb = c.Grant(101, clock_.now);
  EXPECT_EQ(c.ProcessEnded(100, "killed by signal 9 (SIGKILL)"), 1);
  EXPECT_EQ(c.ProcessEnded(100, "again"), 0);
  auto next = c.Grant(102, clock_.now);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->bundle, "a") << "a retried bundle goes first";
  EXPECT_EQ(next->attempt, 2);
  EXPECT_EQ(c.Commit(la->id), CommitDecision::kStale);
  EXPECT_EQ(c.Commit(lb->id), CommitDecision::kAccepted);
}

TEST_F(CoordinatorTest, FourthFailedAttemptFailsTheJobNamingBundleAttemptsAndError) {
  Coordinator c = Make({"good", "poison"});
  auto g = c.Grant(1, clock_.now);
  ASSERT_EQ(c.Commit(g->id), CommitDecision::kAccepted);
  for (int attempt = 1; attempt <= 4; ++attempt) {
    auto l = c.Grant(10 + attempt, clock_.now);
    ASSERT_TRUE(l.has_value()) << "attempt " << attempt;
    EXPECT_EQ(l->bundle, "poison");
    EXPECT_EQ(l->attempt, attempt);
    EXPECT_FALSE(c.failed());
    c.ProcessEnded(10 + attempt, "killed by signal 6 (SIGABRT) #" + std::to_string(attempt));
  }
  EXPECT_TRUE(c.failed());
  EXPECT_NE(c.failure().find("bundle 'poison'"), std::string::npos) << c.failure();
  EXPECT_NE(c.failure().find("failed 4 attempts"), std::string::npos) << c.failure();
  EXPECT_NE(c.failure().find("SIGABRT) #4"), std::string::npos) << c.failure();
  EXPECT_FALSE(c.Grant(99, clock_.now).has_value());
  EXPECT_EQ(c.attempts("poison"), 4);
}

TEST_F(CoordinatorTest, ReportedFailureCountsAsAnAttempt) {
  Coordinator c = Make({"a"});
  auto l = c.Grant(1, clock_.now);
  c.Fail(l->id, "stage 'Parse': bad record");
  EXPECT_EQ(c.attempts("a"), 1);
  c.Fail(l->id, "unknown lease is ignored");
  EXPECT_EQ(c.attempts("a"), 1);
}

TEST_F(CoordinatorTest, ResumeSkipsCommittedBundles) {
  Coordinator c = Make({"a", "b", "c"}, {"a", "c"});
  EXPECT_EQ(c.committed_count(), 2u);
  auto l = c.Grant(1, clock_.now);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->bundle, "b");
  EXPECT_FALSE(c.Grant(2, clock_.now).has_value());
  EXPECT_EQ(c.Commit(l->id), CommitDecision::kAccepted);
  EXPECT_TRUE(c.finished());
}

TEST_F(CoordinatorTest, FullyCommittedJobIsFinishedAtOnce) {
  Coordinator c = Make({"a"}, {"a"});
  EXPECT_TRUE(c.finished());
  EXPECT_FALSE(c.Grant(1, clock_.now).has_value());
}

TEST_F(CoordinatorTest, StopLeasingLetsLiveLeasesCommit) {
  Coordinator c = Make({"a", "b"});
  auto l = c.Grant(1, clock_.now);
  c.StopLeasing();
  EXPECT_FALSE(c.Grant(2, clock_.now).has_value());
  EXPECT_FALSE(c.ShouldWait());
  EXPECT_EQ(c.Commit(l->id), CommitDecision::kAccepted);
  EXPECT_FALSE(c.finished());
}

TEST_F(CoordinatorTest, DuplicateCommitOfACommittedBundleIsDuplicate) {
  // Two live leases of one bundle can only exist if a lease was granted after the bundle came
  // back; build that through a resumed table plus a retried lease.
  Coordinator c = Make({"a"});
  auto first = c.Grant(1, clock_.now);
  ASSERT_EQ(c.Commit(first->id), CommitDecision::kAccepted);
  EXPECT_EQ(c.Commit(first->id), CommitDecision::kStale);
}

TEST(CoordinatorMake, RejectsBadTablesWithTheValue) {
  struct Case {
    std::vector<std::string> bundles;
    std::set<std::string> committed;
    int max_attempts;
    StatusCode code;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"a", "a"}, {}, 4, StatusCode::kInvalidArgument, "'a' twice"},
      {{""}, {}, 4, StatusCode::kInvalidArgument, "empty bundle id"},
      {{"a"}, {"z"}, 4, StatusCode::kDataLoss, "'z'"},
      {{"a"}, {}, 0, StatusCode::kInvalidArgument, "got 0"},
  };
  for (const Case& k : cases) {
    CoordinatorOptions o;
    o.max_attempts = k.max_attempts;
    auto c = Coordinator::Make(o, k.bundles, k.committed);
    ASSERT_FALSE(c.ok()) << k.needle;
    EXPECT_EQ(c.status().code(), k.code) << k.needle;
    EXPECT_NE(c.status().message().find(k.needle), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace dfw
