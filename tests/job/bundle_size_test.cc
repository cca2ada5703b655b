// The job-sized bundle target: several bundles per SDK process, within a floor and a ceiling.
#include "dfw/job/bundle_size.h"

#include <gtest/gtest.h>

namespace dfw {
namespace {

TEST(SizeBundles, AimsAtFourBundlesPerProcess) {
  BundleTarget t = SizeBundles(int64_t{32} << 20, 0, 8);  // 32 MiB over 8 processes
  EXPECT_EQ(t.desired_bundles, 32);
  EXPECT_EQ(t.bytes, int64_t{1} << 20);
}

TEST(SizeBundles, ATinyInputIsNotCutBelowTheFloor) {
  EXPECT_EQ(SizeBundles(10 << 10, 0, 8).bytes, kMinBundleBytes);
  EXPECT_EQ(SizeBundles(0, 0, 8).bytes, kMinBundleBytes);
}

TEST(SizeBundles, AHugeInputIsCutAtTheCeiling) {
  EXPECT_EQ(SizeBundles(int64_t{100} << 30, 0, 2).bytes, kMaxBundleBytes);
}

TEST(SizeBundles, ElementsAreCutByCountWithAFloor) {
  EXPECT_EQ(SizeBundles(0, 100000, 2).elements, 12500);
  EXPECT_EQ(SizeBundles(0, 10, 8).elements, kMinBundleElements);
  EXPECT_EQ(SizeBundles(1 << 20, 0, 8).elements, 0);
}

TEST(SizeBundles, NonPositiveProcessesCountAsOne) {
  EXPECT_EQ(SizeBundles(int64_t{8} << 20, 0, 0).desired_bundles, kBundlesPerProcess);
  EXPECT_EQ(SizeBundles(int64_t{8} << 20, 0, -3).bytes, int64_t{2} << 20);
  EXPECT_EQ(SizeBundles(-5, -5, 1).bytes, kMinBundleBytes);
}

TEST(SizeBundles, DescribesItself) {
  EXPECT_EQ(SizeBundles(int64_t{32} << 20, 0, 8).ToString(), "target 1.0 MiB per bundle (aiming at 32 bundles)");
  EXPECT_EQ(SizeBundles(0, 1000, 1).ToString(), "target 64.0 KiB, 256 elements per bundle (aiming at 4 bundles)");
}

// Costly rows (a text model): twice the bundles per process and a 16 KiB floor, so the last
// bundle, what one process may wait for at the end, is short.
TEST(SizeBundles, CostlyRowsAimAtEightBundlesPerProcessWithALowerFloor) {
  BundleTarget t = SizeBundles(int64_t{400} << 10, 0, 2, RowCost::kCostly);  // 400 KiB of sentences, 2 processes
  EXPECT_EQ(t.desired_bundles, 16);
  EXPECT_EQ(t.bytes, int64_t{25} << 10);
  EXPECT_EQ(SizeBundles(int64_t{400} << 10, 0, 2).bytes, kMinBundleBytes);  // cheap rows: the 64 KiB floor
  EXPECT_EQ(SizeBundles(1 << 10, 0, 2, RowCost::kCostly).bytes, kMinCostlyRowBundleBytes);
  EXPECT_EQ(MinBundleBytes(RowCost::kCostly), kMinCostlyRowBundleBytes);
  EXPECT_EQ(MinBundleBytes(RowCost::kCheap), kMinBundleBytes);
}

}  // namespace
}  // namespace dfw
