// BatchElements with a fake clock: fixed sizes, bounds, duration flush, Beam's adaptive ramp.
#include "dfw/inference/batch_elements.h"

#include <gtest/gtest.h>

#include <functional>

namespace dfw {
namespace {

class FakeClock final : public Clock {
 public:
  double NowSecs() override { return now; }
  double now = 1000.0;
};

// Beam's util_test: batch time = 1 + 0.7·n, overhead rule off.
std::vector<int64_t> RampSizes(BatchElementsOptions options, int steps) {
  FakeClock clock;
  options.target_batch_overhead = std::nullopt;
  auto est = BatchSizeEstimator::Make(options);
  EXPECT_TRUE(est.ok()) << est.status().ToString();
  std::vector<int64_t> sizes;
  for (int i = 0; i < steps; ++i) {
    sizes.push_back(est->NextBatchSize());
    est->RecordTime(sizes.back(), 1 + 0.7 * static_cast<double>(sizes.back()));
  }
  return sizes;
}

TEST(BatchSizeEstimator, RampsTowardTargetDurationExcludingFixedCost) {
  BatchElementsOptions o;
  o.target_batch_duration_secs = 10;
  EXPECT_EQ(RampSizes(o, 7), (std::vector<int64_t>{1, 2, 4, 8, 14, 14, 14}));
}

TEST(BatchSizeEstimator, RampsTowardTargetDurationIncludingFixedCost) {
  BatchElementsOptions o;
  o.target_batch_duration_secs_including_fixed_cost = 10;
  EXPECT_EQ(RampSizes(o, 7), (std::vector<int64_t>{1, 2, 4, 8, 12, 12, 12}));
}

TEST(BatchSizeEstimator, OverheadRuleSolvesFixedShare) {
  // a = 1, b = 0.01: a / (a + b·n) = 0.05 → n = (a/b)(1/0.05 − 1) = 1900; capped by max 1000.
  BatchElementsOptions o;
  o.max_batch_size = 1000;
  o.target_batch_overhead = 0.05;
  o.target_batch_duration_secs = 1e9;
  auto est = BatchSizeEstimator::Make(o);
  ASSERT_TRUE(est.ok());
  std::vector<int64_t> sizes;
  for (int i = 0; i < 12; ++i) {
    sizes.push_back(est->NextBatchSize());
    est->RecordTime(sizes.back(), 1 + 0.01 * static_cast<double>(sizes.back()));
  }
  EXPECT_EQ(std::vector<int64_t>(sizes.begin(), sizes.begin() + 10),
            (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}));
  EXPECT_EQ(sizes[10], 1000);
}

TEST(BatchSizeEstimator, FixedSizeWhenMinEqualsMax) {
  BatchElementsOptions o;
  o.min_batch_size = o.max_batch_size = 7;
  auto est = BatchSizeEstimator::Make(o);
  ASSERT_TRUE(est.ok());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(est->NextBatchSize(), 7);
    est->RecordTime(7, 0.001 * (i + 1));
  }
}

TEST(BatchSizeEstimator, StaysWithinBounds) {
  BatchElementsOptions o;
  o.min_batch_size = 5;
  o.max_batch_size = 40;
  o.seed = 42;
  auto est = BatchSizeEstimator::Make(o);
  ASSERT_TRUE(est.ok());
  for (int i = 0; i < 300; ++i) {  // past the 100-point thinning and the jitter phase
    const int64_t n = est->NextBatchSize();
    ASSERT_GE(n, 5);
    ASSERT_LE(n, 40);
    est->RecordTime(n, 0.5 + 1e-4 * static_cast<double>(n));
  }
  EXPECT_LT(est->data().size(), BatchSizeEstimator::kMaxDataPoints);
}

TEST(BatchSizeEstimator, IgnoredTimingReplaysItsSize) {
  BatchElementsOptions o;
  auto est = BatchSizeEstimator::Make(o);
  ASSERT_TRUE(est.ok());
  est->IgnoreNextTiming();
  est->RecordTime(3, 99.0);
  EXPECT_TRUE(est->data().empty());
  EXPECT_EQ(est->NextBatchSize(), 3);
  EXPECT_EQ(est->NextBatchSize(), 1);  // no data: min
}

TEST(BatchSizeEstimator, RegressionIsExactOnALineAndRobustToAnOutlier) {
  std::vector<std::pair<double, double>> pts;
  for (int x = 1; x <= 12; ++x) pts.emplace_back(x, 2 + 0.5 * x);
  auto [a, b] = BatchSizeEstimator::LinearRegression(pts);
  EXPECT_NEAR(a, 2, 1e-9);
  EXPECT_NEAR(b, 0.5, 1e-9);
  pts[11].second = 60;  // one wild timing at the largest size
  std::tie(a, b) = BatchSizeEstimator::LinearRegression(pts);
  EXPECT_NEAR(b, 0.5, 0.05);
  EXPECT_NEAR(a, 2, 0.2);
  std::tie(a, b) = BatchSizeEstimator::LinearRegression({{4, 2.0}, {4, 2.0}});
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 0.5);
}

struct BadOptionsCase {
  const char* name;
  std::function<void(BatchElementsOptions&)> edit;
  const char* message;
};

TEST(BatchSizeEstimator, RejectsInvalidOptions) {
  const std::vector<BadOptionsCase> cases = {
      {"min>max", [](auto& o) { o.min_batch_size = 10, o.max_batch_size = 5; }, "must not be greater than max_batch_size 5"},
      {"min<1", [](auto& o) { o.min_batch_size = 0; }, "min_batch_size 0 must be >= 1"},
      {"overhead", [](auto& o) { o.target_batch_overhead = 1.5; }, "target_batch_overhead 1.5"},
      {"duration", [](auto& o) { o.target_batch_duration_secs = -1; }, "target_batch_duration_secs -1"},
      {"both", [](auto& o) { o.target_batch_duration_secs = 1, o.target_batch_duration_secs_including_fixed_cost = 1; },
       "at most one of"},
      {"max_duration", [](auto& o) { o.max_batch_duration_secs = 0; }, "max_batch_duration_secs 0"},
  };
  for (const auto& c : cases) {
    BatchElementsOptions o;
    c.edit(o);
    auto est = BatchSizeEstimator::Make(o);
    ASSERT_FALSE(est.ok()) << c.name;
    EXPECT_EQ(est.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(est.status().message().find(c.message), std::string::npos) << c.name << ": " << est.status().message();
  }
}

// Collects emitted batches; each consume advances the fake clock by `cost(n)`.
struct Sink {
  FakeClock* clock = nullptr;
  std::function<double(std::size_t)> cost = [](std::size_t) { return 0.0; };
  std::vector<std::vector<int>> batches{};
  Status operator()(std::vector<int>& b) {
    clock->now += cost(b.size());
    batches.push_back(b);
    return Status::OK();
  }
};

TEST(BatchElements, FixedSizeBatchesAndPartialAtBundleEnd) {
  FakeClock clock;
  BatchElementsOptions o;
  o.min_batch_size = o.max_batch_size = 4;
  auto be = BatchElements<int>::Make(o, &clock);
  ASSERT_TRUE(be.ok());
  Sink sink{.clock = &clock};
  be->StartBundle();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(be->Add(i, sink).ok());
  EXPECT_EQ(sink.batches.size(), 2u);
  EXPECT_EQ(be->buffered(), 2u);
  ASSERT_TRUE(be->FinishBundle(sink).ok());
  ASSERT_EQ(sink.batches.size(), 3u);
  EXPECT_EQ(sink.batches[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(sink.batches[2], (std::vector<int>{8, 9}));
  EXPECT_EQ(be->buffered(), 0u);
}

TEST(BatchElements, AdaptiveRampAcrossOneBundleIgnoresTheFirstTiming) {
  FakeClock clock;
  BatchElementsOptions o;
  o.target_batch_overhead = std::nullopt;
  o.target_batch_duration_secs = 10;
  auto be = BatchElements<int>::Make(o, &clock);
  ASSERT_TRUE(be.ok());
  Sink sink{.clock = &clock, .cost = [](std::size_t n) { return 1 + 0.7 * static_cast<double>(n); }};
  be->StartBundle();
  for (int i = 0; i < 80; ++i) ASSERT_TRUE(be->Add(i, sink).ok());
  std::vector<std::size_t> sizes;
  for (const auto& b : sink.batches) sizes.push_back(b.size());
  // The first batch (1) is setup and not timed, so size 1 is replayed before the ramp starts.
  EXPECT_EQ(std::vector<std::size_t>(sizes.begin(), sizes.begin() + 8),
            (std::vector<std::size_t>{1, 1, 2, 4, 8, 14, 14, 14}));
}

TEST(BatchElements, FlushesAPartialBatchAfterMaxDuration) {
  FakeClock clock;
  BatchElementsOptions o;
  o.min_batch_size = o.max_batch_size = 100;
  o.max_batch_duration_secs = 2.0;
  auto be = BatchElements<int>::Make(o, &clock);
  ASSERT_TRUE(be.ok());
  Sink sink{.clock = &clock};
  be->StartBundle();
  ASSERT_TRUE(be->Add(1, sink).ok());
  clock.now += 1.0;
  ASSERT_TRUE(be->Add(2, sink).ok());
  ASSERT_TRUE(be->Poll(sink).ok());
  EXPECT_TRUE(sink.batches.empty());
  clock.now += 1.0;  // the first element has now waited 2 s
  ASSERT_TRUE(be->Poll(sink).ok());
  ASSERT_EQ(sink.batches.size(), 1u);
  EXPECT_EQ(sink.batches[0], (std::vector<int>{1, 2}));
  ASSERT_TRUE(be->Add(3, sink).ok());
  clock.now += 5.0;
  ASSERT_TRUE(be->Add(4, sink).ok());  // an arrival also triggers the flush
  ASSERT_EQ(sink.batches.size(), 2u);
  EXPECT_EQ(sink.batches[1], (std::vector<int>{3, 4}));
}

TEST(BatchElements, ConsumerErrorIsReturned) {
  FakeClock clock;
  BatchElementsOptions o;
  o.min_batch_size = o.max_batch_size = 2;
  auto be = BatchElements<int>::Make(o, &clock);
  ASSERT_TRUE(be.ok());
  be->StartBundle();
  auto failing = [](std::vector<int>&) { return Internal("boom"); };
  ASSERT_TRUE(be->Add(1, failing).ok());
  Status s = be->Add(2, failing);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_TRUE(be->estimator().data().empty());
}

// Size-aware batching (max_batch_weight): a batch closes before an element that would overflow the
// cap; an element heavier than the cap is a batch of its own.
TEST(BatchElements, WeightCapClosesABatchBeforeItOverflows) {
  FakeClock clock;
  BatchElementsOptions o;
  o.min_batch_size = o.max_batch_size = 100;
  o.max_batch_weight = 10;
  auto be = BatchElements<int>::Make(o, &clock);
  ASSERT_TRUE(be.ok());
  Sink sink{.clock = &clock};
  be->StartBundle();
  const int64_t weights[] = {4, 4, 4, 12, 1};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(be->Add(i, weights[i], sink).ok());
  ASSERT_TRUE(be->FinishBundle(sink).ok());
  EXPECT_EQ(sink.batches, (std::vector<std::vector<int>>{{0, 1}, {2}, {3}, {4}}));
}

// sort_window: nothing leaves before the pool holds the window; then batches are cut from it in
// order of weight; the rest of the bundle goes at FinishBundle, sorted too.
TEST(BatchElements, SortWindowCutsBatchesInOrderOfWeight) {
  FakeClock clock;
  BatchElementsOptions o;
  o.min_batch_size = o.max_batch_size = 2;
  o.sort_window = 6;
  auto be = BatchElements<int>::Make(o, &clock);
  ASSERT_TRUE(be.ok());
  Sink sink{.clock = &clock};
  be->StartBundle();
  const int64_t weights[] = {5, 1, 4, 2, 6, 3, 9, 1, 5};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(be->Add(i, weights[i], sink).ok());
  EXPECT_TRUE(sink.batches.empty());
  EXPECT_EQ(be->buffered(), 5u);
  ASSERT_TRUE(be->Add(5, weights[5], sink).ok());
  EXPECT_EQ(sink.batches, (std::vector<std::vector<int>>{{1, 3}, {5, 2}, {0, 4}}));
  for (int i = 6; i < 9; ++i) ASSERT_TRUE(be->Add(i, weights[i], sink).ok());
  EXPECT_EQ(sink.batches.size(), 3u);
  ASSERT_TRUE(be->FinishBundle(sink).ok());
  EXPECT_EQ(sink.batches, (std::vector<std::vector<int>>{{1, 3}, {5, 2}, {0, 4}, {7, 8}, {6}}));
  EXPECT_EQ(be->buffered(), 0u);
}

// A cut emits full batches only: the partial rest stays pooled, to meet the next elements.
TEST(BatchElements, SortWindowKeepsThePartialRestForTheNextElements) {
  FakeClock clock;
  BatchElementsOptions o;
  o.min_batch_size = o.max_batch_size = 4;
  o.sort_window = 6;
  auto be = BatchElements<int>::Make(o, &clock);
  ASSERT_TRUE(be.ok());
  Sink sink{.clock = &clock};
  be->StartBundle();
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(be->Add(i, 10 - i, sink).ok());  // weights 10..5
  EXPECT_EQ(sink.batches, (std::vector<std::vector<int>>{{5, 4, 3, 2}}));
  EXPECT_EQ(be->buffered(), 2u);  // 1 and 0, the heaviest
  for (int i = 6; i < 10; ++i) ASSERT_TRUE(be->Add(i, 20 + i, sink).ok());  // pool: 1, 0, 6..9
  EXPECT_EQ(sink.batches, (std::vector<std::vector<int>>{{5, 4, 3, 2}, {1, 0, 6, 7}}));
  ASSERT_TRUE(be->FinishBundle(sink).ok());
  EXPECT_EQ(sink.batches.back(), (std::vector<int>{8, 9}));
}

// Both at once: sorted, and no batch over the weight cap.
TEST(BatchElements, SortWindowHonoursTheWeightCap) {
  FakeClock clock;
  BatchElementsOptions o;
  o.min_batch_size = o.max_batch_size = 100;
  o.sort_window = 4;
  o.max_batch_weight = 10;
  auto be = BatchElements<int>::Make(o, &clock);
  ASSERT_TRUE(be.ok());
  Sink sink{.clock = &clock};
  be->StartBundle();
  const int64_t weights[] = {6, 3, 3, 5};
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(be->Add(i, weights[i], sink).ok());
  EXPECT_EQ(sink.batches, (std::vector<std::vector<int>>{{1, 2}, {3}}));  // 3+3, then 5 (5+6 > 10)
  ASSERT_TRUE(be->FinishBundle(sink).ok());
  EXPECT_EQ(sink.batches.back(), (std::vector<int>{0}));
}

TEST(BatchElements, SortWindowFlushesAfterMaxDuration) {
  FakeClock clock;
  BatchElementsOptions o;
  o.min_batch_size = o.max_batch_size = 100;
  o.sort_window = 50;
  o.max_batch_duration_secs = 2.0;
  auto be = BatchElements<int>::Make(o, &clock);
  ASSERT_TRUE(be.ok());
  Sink sink{.clock = &clock};
  be->StartBundle();
  ASSERT_TRUE(be->Add(1, 7, sink).ok());
  clock.now += 1.5;
  ASSERT_TRUE(be->Add(2, 3, sink).ok());
  ASSERT_TRUE(be->Poll(sink).ok());
  EXPECT_TRUE(sink.batches.empty());
  clock.now += 0.5;  // the first has waited 2 s
  ASSERT_TRUE(be->Poll(sink).ok());
  EXPECT_EQ(sink.batches, (std::vector<std::vector<int>>{{2, 1}}));
}

TEST(BatchElements, RejectsANonPositiveWeightCapOrANegativeWindow) {
  FakeClock clock;
  BatchElementsOptions o;
  o.max_batch_weight = 0;
  EXPECT_EQ(BatchElements<int>::Make(o, &clock).status().code(), StatusCode::kInvalidArgument);
  o.max_batch_weight = std::nullopt;
  o.sort_window = -1;
  EXPECT_EQ(BatchElements<int>::Make(o, &clock).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dfw
