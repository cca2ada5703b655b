// The coordinator's split protocol (dynamic work rebalancing) as a state machine with a fake clock:
// every race the protocol must survive, each ending with every range committed exactly once.
#include <gtest/gtest.h>

#include "dfw/launcher/coordinator.h"

namespace dfw {
namespace {

using std::chrono::milliseconds;

WorkRange R(int64_t begin, int64_t end, int64_t first_line = 1) { return WorkRange{0, "in.jsonl", begin, end, first_line}; }

class SplitTest : public ::testing::Test {
 protected:
  Coordinator Make(std::map<std::string, WorkRange> ranges, std::set<std::string> committed = {},
                   std::vector<SplitRecord> splits = {}) {
    std::vector<std::string> ids;
    for (const auto& [id, r] : ranges) ids.push_back(id);
    CoordinatorOptions o;
    o.max_attempts = 4;
    o.lease_timeout = milliseconds(1000);
    o.split_timeout = milliseconds(200);
    o.min_split_units = 10;
    auto c = Coordinator::Make(o, ids, committed, ranges, splits);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }
  // Asks for a split of the only lease and has the holder accept a cut at `at`.
  SplitRecord SplitAt(Coordinator& c, int64_t lease, int64_t at) {
    auto asks = c.PlanSplits(1, now_);
    EXPECT_EQ(asks.size(), 1u);
    if (asks.empty()) return {};
    EXPECT_EQ(asks[0].lease, lease);
    WorkRange whole = *c.leases().at(lease).range;
    WorkRange primary = whole, residual = whole;
    primary.end = at;
    residual.begin = at;
    residual.first_line = whole.first_line + 7;
    auto split = c.PrepareSplit(lease, primary, residual);
    EXPECT_TRUE(split.ok()) << split.status().ToString();
    if (!split.ok()) return {};
    c.ApplySplit(*split);
    return *split;
  }
  SteadyTime now_{};
};

TEST_F(SplitTest, IdleProcessGetsTheUnreadHalfOfTheLargestLease) {
  Coordinator c = Make({{"0", R(0, 1000)}, {"1", R(1000, 1100)}});
  auto big = c.Grant(10, now_);
  auto small = c.Grant(11, now_);
  ASSERT_TRUE(big && small);
  EXPECT_EQ(big->range, R(0, 1000));
  EXPECT_TRUE(c.PlanSplits(0, now_).empty()) << "nobody idle: no split";
  EXPECT_TRUE(c.Progress(10, big->id, 200, 1000));
  EXPECT_TRUE(c.Progress(11, small->id, 10, 100));
  auto asks = c.PlanSplits(1, now_);
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].lease, big->id);
  EXPECT_EQ(asks[0].process, 10);
  EXPECT_DOUBLE_EQ(asks[0].fraction, 0.5);
  EXPECT_TRUE(c.PlanSplits(1, now_).empty()) << "one request outstanding per idle process";

  WorkRange primary = R(0, 600), residual = R(600, 1000, 40);
  auto split = c.PrepareSplit(big->id, primary, residual);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ(split->parent, "0");
  EXPECT_EQ(split->residual, "2");
  c.ApplySplit(*split);
  EXPECT_EQ(c.total(), 3u);
  EXPECT_EQ(c.splits(), 1);
  auto taken = c.Grant(12, now_);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->bundle, "2");
  EXPECT_EQ(taken->range, residual);
  EXPECT_EQ(taken->attempt, 1);
  EXPECT_EQ(c.Commit(big->id, primary), CommitDecision::kAccepted);
  EXPECT_EQ(c.Commit(small->id, R(1000, 1100)), CommitDecision::kAccepted);
  EXPECT_EQ(c.Commit(taken->id, residual), CommitDecision::kAccepted);
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.OrderedBundles(), (std::vector<std::string>{"0", "2", "1"})) << "shards in data order";
}

TEST_F(SplitTest, NoSplitWhileBundlesArePendingOrTooLittleIsLeft) {
  Coordinator c = Make({{"0", R(0, 1000)}, {"1", R(1000, 1005)}});
  auto a = c.Grant(10, now_);
  EXPECT_TRUE(c.PlanSplits(3, now_).empty()) << "bundle 1 is still pending";
  auto b = c.Grant(11, now_);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(c.Progress(10, a->id, 995, 1000));
  EXPECT_TRUE(c.PlanSplits(3, now_).empty()) << "5 units left on each: below min_split_units";
}

TEST_F(SplitTest, RefusalIsNotAskedAgainUntilTheLeaseProgresses) {
  Coordinator c = Make({{"0", R(0, 1000)}});
  auto l = c.Grant(10, now_);
  ASSERT_TRUE(c.Progress(10, l->id, 100, 1000));
  ASSERT_EQ(c.PlanSplits(1, now_).size(), 1u);
  c.RefuseSplit(l->id);
  EXPECT_TRUE(c.PlanSplits(1, now_).empty());
  ASSERT_TRUE(c.Progress(10, l->id, 300, 1000));
  EXPECT_EQ(c.PlanSplits(1, now_).size(), 1u);
}

TEST_F(SplitTest, UnansweredRequestStopsBlockingOthersAfterTheTimeoutButALateAnswerStillCounts) {
  Coordinator c = Make({{"0", R(0, 1000)}, {"1", R(1000, 1800)}});
  auto a = c.Grant(10, now_);
  auto b = c.Grant(11, now_);
  ASSERT_TRUE(c.Progress(10, a->id, 0, 1000));
  ASSERT_TRUE(c.Progress(11, b->id, 0, 800));
  auto first = c.PlanSplits(1, now_);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].lease, a->id);  // the holder is stopped (SIGSTOP) and does not answer
  now_ += milliseconds(150);
  EXPECT_TRUE(c.PlanSplits(1, now_).empty());
  now_ += milliseconds(100);
  auto second = c.PlanSplits(1, now_);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].lease, b->id);
  c.Heartbeat(10, now_);
  // The stopped holder resumes and answers: its lease is live, so the split is taken.
  auto late = c.PrepareSplit(a->id, R(0, 500), R(500, 1000, 9));
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  c.ApplySplit(*late);
  EXPECT_EQ(c.total(), 3u);
}

TEST_F(SplitTest, AnswerAfterTheLeaseExpiredIsRefusedAndTheWholeBundleIsRedone) {
  Coordinator c = Make({{"0", R(0, 1000)}});
  auto l = c.Grant(10, now_);
  ASSERT_TRUE(c.Progress(10, l->id, 100, 1000));
  ASSERT_EQ(c.PlanSplits(1, now_).size(), 1u);
  now_ += milliseconds(1500);
  ASSERT_EQ(c.ExpireSilent(now_), std::vector<int64_t>{10});
  auto late = c.PrepareSplit(l->id, R(0, 500), R(500, 1000, 9));
  EXPECT_EQ(late.status().code(), StatusCode::kFailedPrecondition);
  // The holder stopped at 500 and commits that: stale, the lease is gone.
  EXPECT_EQ(c.Commit(l->id, R(0, 500)), CommitDecision::kStale);
  auto again = c.Grant(11, now_);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->range, R(0, 1000)) << "no split was recorded: the retry reads everything";
  EXPECT_EQ(again->attempt, 2);
  EXPECT_EQ(c.Commit(again->id, R(0, 1000)), CommitDecision::kAccepted);
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.total(), 1u);
}

TEST_F(SplitTest, SplitRequestToAProcessThatJustDied) {
  Coordinator c = Make({{"0", R(0, 1000)}});
  auto l = c.Grant(10, now_);
  ASSERT_EQ(c.PlanSplits(1, now_).size(), 1u);
  EXPECT_EQ(c.ProcessEnded(10, "killed"), 1);
  EXPECT_EQ(c.PrepareSplit(l->id, R(0, 500), R(500, 1000)).status().code(), StatusCode::kFailedPrecondition);
  auto again = c.Grant(11, now_);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->range, R(0, 1000));
}

TEST_F(SplitTest, HolderDiesAfterTheSplitBothHalvesAreRetriedAndAttemptsCountPerRange) {
  Coordinator c = Make({{"0", R(0, 1000)}});
  auto l = c.Grant(10, now_);
  SplitRecord split = SplitAt(c, l->id, 400);
  EXPECT_EQ(c.ProcessEnded(10, "SIGKILL"), 1);
  // Both halves are pending: the primary with one failed attempt, the residual with none.
  auto p = c.Grant(11, now_);
  auto r = c.Grant(12, now_);
  ASSERT_TRUE(p && r);
  std::map<std::string, Lease> by_bundle = {{p->bundle, *p}, {r->bundle, *r}};
  ASSERT_EQ(by_bundle.count("0"), 1u);
  ASSERT_EQ(by_bundle.count(split.residual), 1u);
  EXPECT_EQ(by_bundle["0"].range, R(0, 400));
  EXPECT_EQ(by_bundle["0"].attempt, 2);
  EXPECT_EQ(by_bundle[split.residual].attempt, 1);
  EXPECT_EQ(c.Commit(by_bundle["0"].id, R(0, 400)), CommitDecision::kAccepted);
  EXPECT_EQ(c.Commit(by_bundle[split.residual].id, split.residual_range), CommitDecision::kAccepted);
  EXPECT_TRUE(c.finished());
}

TEST_F(SplitTest, CommitOfAnotherRangeThanTheBundlesIsAFailedAttemptNeverACommit) {
  Coordinator c = Make({{"0", R(0, 1000)}});
  auto l = c.Grant(10, now_);
  SplitAt(c, l->id, 400);
  // A holder that did not stop at the cut (it reports the whole range) would duplicate 400..1000.
  EXPECT_EQ(c.Commit(l->id, R(0, 1000)), CommitDecision::kStale);
  EXPECT_EQ(c.attempts("0"), 1);
  EXPECT_FALSE(c.finished());
}

TEST_F(SplitTest, HalvesThatDoNotTileTheRangeAreDataLoss) {
  Coordinator c = Make({{"0", R(100, 1000)}});
  auto l = c.Grant(10, now_);
  ASSERT_EQ(c.PlanSplits(1, now_).size(), 1u);
  struct Bad {
    WorkRange primary, residual;
  };
  for (const Bad& b : {Bad{R(100, 500), R(600, 1000)},     // a gap
                       Bad{R(100, 600), R(500, 1000)},     // an overlap
                       Bad{R(100, 1200), R(1200, 1300)},   // split position past the end
                       Bad{R(100, 100), R(100, 1000)},     // empty primary
                       Bad{R(0, 500), R(500, 1000)},       // primary starts elsewhere
                       Bad{R(100, 500, 1), WorkRange{0, "other.jsonl", 500, 1000, 1}}}) {
    EXPECT_EQ(c.PrepareSplit(l->id, b.primary, b.residual).status().code(), StatusCode::kDataLoss);
  }
  EXPECT_EQ(c.total(), 1u);
}

TEST_F(SplitTest, UnaskedSplitIsRefused) {
  Coordinator c = Make({{"0", R(0, 1000)}});
  auto l = c.Grant(10, now_);
  EXPECT_EQ(c.PrepareSplit(l->id, R(0, 500), R(500, 1000)).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(SplitTest, GarbledProgressIsRejectedAndChangesNothing) {
  Coordinator c = Make({{"0", R(0, 1000)}});
  auto l = c.Grant(10, now_);
  EXPECT_FALSE(c.Progress(11, l->id, 10, 1000)) << "another process's lease";
  EXPECT_FALSE(c.Progress(10, l->id + 7, 10, 1000)) << "no such lease";
  EXPECT_FALSE(c.Progress(10, l->id, 1001, 1000)) << "past the end";
  EXPECT_FALSE(c.Progress(10, l->id, -1, 1000));
  EXPECT_FALSE(c.Progress(10, l->id, 10, 999)) << "not the range's size";
  EXPECT_EQ(c.leases().at(l->id).done, -1);
}

TEST_F(SplitTest, ResumeAppliesTheManifestsSplitsAndRedoesOnlyUncommittedHalves) {
  // Killed between the two commits: the residual committed, the primary did not.
  std::vector<SplitRecord> splits = {{"0", "2", R(0, 400), R(400, 1000, 30)}, {"2", "3", R(400, 700, 30), R(700, 1000, 60)}};
  Coordinator c = Make({{"0", R(0, 1000)}, {"1", R(1000, 2000)}}, {"3", "1"}, splits);
  EXPECT_EQ(c.total(), 4u);
  EXPECT_EQ(c.committed_count(), 2u);
  EXPECT_EQ(c.splits(), 2);
  std::map<std::string, WorkRange> leased;
  while (auto l = c.Grant(10, now_)) leased[l->bundle] = *l->range;
  EXPECT_EQ(leased, (std::map<std::string, WorkRange>{{"0", R(0, 400)}, {"2", R(400, 700, 30)}}));
  EXPECT_EQ(c.OrderedBundles(), (std::vector<std::string>{"0", "2", "3", "1"}));
  // A new split's residual id does not reuse one from the manifest.
  auto fresh = Make({{"0", R(0, 1000)}}, {"5"}, {{"0", "5", R(0, 400), R(400, 1000, 30)}});
  auto l = fresh.Grant(10, now_);
  ASSERT_EQ(l->bundle, "0");
  SplitRecord next = SplitAt(fresh, l->id, 200);
  EXPECT_EQ(next.residual, "6");
}

TEST_F(SplitTest, ManifestSplitsThatDoNotFitTheJobAreDataLoss) {
  CoordinatorOptions o;
  std::map<std::string, WorkRange> ranges = {{"0", R(0, 1000)}};
  for (const SplitRecord& bad : {SplitRecord{"9", "2", R(0, 400), R(400, 1000)},   // unknown parent
                                 SplitRecord{"0", "2", R(0, 400), R(500, 1000)},   // not tiling
                                 SplitRecord{"0", "0", R(0, 400), R(400, 1000)}}) {  // residual id taken
    auto c = Coordinator::Make(o, {"0"}, {}, ranges, {bad});
    EXPECT_EQ(c.status().code(), StatusCode::kDataLoss) << bad.parent << "->" << bad.residual;
  }
}

TEST_F(SplitTest, JobsWithoutRangesNeverSplit) {
  CoordinatorOptions o;
  auto c = Coordinator::Make(o, {"0-10", "10-20"}, {});
  ASSERT_TRUE(c.ok());
  auto l = c->Grant(10, now_);
  ASSERT_TRUE(l.has_value());
  EXPECT_FALSE(l->range.has_value());
  c->Grant(11, now_);
  EXPECT_FALSE(c->Progress(10, l->id, 1, 10));
  EXPECT_TRUE(c->PlanSplits(5, now_).empty());
  EXPECT_EQ(c->Commit(l->id), CommitDecision::kAccepted);
}

TEST_F(SplitTest, RepeatedSplitsFeedEightIdleProcessesFromOneBundle) {
  Coordinator c = Make({{"0", R(0, 1 << 20)}});
  auto first = c.Grant(0, now_);
  ASSERT_TRUE(first.has_value());
  std::map<int64_t, Lease> running = {{0, *first}};
  // Processes 1..7 are idle; each round, every idle process gets a residual of some running lease.
  for (int round = 0; round < 5 && running.size() < 8; ++round) {
    int idle = 8 - static_cast<int>(running.size());
    for (const SplitRequest& ask : c.PlanSplits(idle, now_)) {
      WorkRange whole = *c.leases().at(ask.lease).range;
      int64_t cut = whole.begin + whole.size() / 2;
      WorkRange p = whole, r = whole;
      p.end = cut;
      r.begin = cut;
      auto split = c.PrepareSplit(ask.lease, p, r);
      ASSERT_TRUE(split.ok()) << split.status().ToString();
      c.ApplySplit(*split);
    }
    for (int64_t proc = 1; proc < 8; ++proc) {
      if (running.count(proc)) continue;
      if (auto l = c.Grant(proc, now_)) running[proc] = *l;
    }
  }
  EXPECT_EQ(running.size(), 8u);
  int64_t covered = 0;
  for (auto& [proc, lease] : running) {
    WorkRange now_range = *c.leases().at(lease.id).range;
    covered += now_range.size();
    EXPECT_EQ(c.Commit(lease.id, now_range), CommitDecision::kAccepted);
  }
  EXPECT_EQ(covered, 1 << 20);
  EXPECT_TRUE(c.finished());
}

}  // namespace
}  // namespace dfw
