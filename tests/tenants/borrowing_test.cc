#include "dfw/tenants/borrowing.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <numeric>

namespace dfw {
namespace {

using dfw::testing::kGiB;

BorrowTenant Running(const std::string& name, double weight) {
  BorrowTenant t;
  t.name = name;
  t.running = true;
  t.weight = weight;
  return t;  // per_process_bytes 0: no memory cap
}

BorrowTenant Capped(const std::string& name, double weight, uint64_t budget, uint64_t need, uint64_t per_process) {
  BorrowTenant t = Running(name, weight);
  t.budget_bytes = budget;
  t.need_bytes = need;
  t.per_process_bytes = per_process;
  return t;
}

TEST(ShareFreedSlots, OneRunningTenantTakesEverySlot) {
  BorrowTenant done = Running("a", 1);
  done.running = false;
  EXPECT_EQ(ShareFreedSlots({done, Running("b", 1)}, 3), (std::vector<int>{0, 3}));
}

TEST(ShareFreedSlots, SlotsGoByWeight) {
  EXPECT_EQ(ShareFreedSlots({Running("a", 1), Running("b", 3)}, 4), (std::vector<int>{1, 3}));
  EXPECT_EQ(ShareFreedSlots({Running("a", 2), Running("b", 2), Running("c", 4)}, 8), (std::vector<int>{2, 2, 4}));
}

TEST(ShareFreedSlots, LargestRemaindersRoundAndTiesGoInFileOrder) {
  // 5 slots by 1:1:1 -> quotas 1.67 each: floors 1+1+1, the 2 left go to the first two (equal parts).
  EXPECT_EQ(ShareFreedSlots({Running("a", 1), Running("b", 1), Running("c", 1)}, 5), (std::vector<int>{2, 2, 1}));
  // 3 slots by 1:2:4 -> quotas 0.43, 0.86, 1.71: floors 0+0+1, then .86 (b) and .71 (c).
  EXPECT_EQ(ShareFreedSlots({Running("a", 1), Running("b", 2), Running("c", 4)}, 3), (std::vector<int>{0, 1, 2}));
  // Fractional weights: 3 slots by 0.5:1.5 -> 0.75, 2.25: floors 0+2, the last to a (.75 > .25).
  EXPECT_EQ(ShareFreedSlots({Running("a", 0.5), Running("b", 1.5)}, 3), (std::vector<int>{1, 2}));
  // Equal parts (0.5, 0.5): the first in file order.
  EXPECT_EQ(ShareFreedSlots({Running("a", 0.5), Running("b", 1.5)}, 2), (std::vector<int>{1, 1}));
}

TEST(ShareFreedSlots, EverySlotIsGivenWhenNoCapHolds) {
  for (int slots = 0; slots <= 17; ++slots) {
    std::vector<int> s = ShareFreedSlots({Running("a", 1), Running("b", 2.5), Running("c", 7)}, slots);
    EXPECT_EQ(std::accumulate(s.begin(), s.end(), 0), slots) << slots;
  }
}

TEST(ShareFreedSlots, AMemoryCapHoldsATenantAndTheRestGoesToTheOthers) {
  // b's budget 10 GiB holds its plan (6 GiB) and 2 more processes of 2 GiB; its share by weight is 6.
  std::vector<BorrowTenant> t = {Running("a", 1), Capped("b", 3, 10 * kGiB, 6 * kGiB, 2 * kGiB)};
  EXPECT_EQ(MemoryCapExtra(t[1]), 2);
  EXPECT_EQ(ShareFreedSlots(t, 8), (std::vector<int>{6, 2}));
}

TEST(ShareFreedSlots, SlotsNobodyCanHoldAreLeftUnused) {
  // A full budget takes no process; the other's cap of 1 takes one of the 4 slots.
  std::vector<BorrowTenant> t = {Capped("a", 1, 4 * kGiB, 4 * kGiB, kGiB), Capped("b", 1, 4 * kGiB, 3 * kGiB, kGiB)};
  EXPECT_EQ(MemoryCapExtra(t[0]), 0);
  EXPECT_EQ(ShareFreedSlots(t, 4), (std::vector<int>{0, 1}));
  // A plan already over its budget (not admitted in practice) takes none.
  EXPECT_EQ(MemoryCapExtra(Capped("c", 1, kGiB, 2 * kGiB, kGiB)), 0);
}

TEST(LendableSlots, FreedSlotsUpToTheCpusTheRunningTenantsLeave) {
  EXPECT_EQ(LendableSlots(2, 1, 8), 2);   // room on 8 CPUs
  EXPECT_EQ(LendableSlots(2, 1, 2), 1);   // a 2-core host: one more process fills it
  EXPECT_EQ(LendableSlots(2, 2, 2), 0);   // already full: lending would only add competition
  EXPECT_EQ(LendableSlots(0, 1, 8), 0);
  EXPECT_EQ(LendableSlots(3, 5, 4), 0);   // never negative
}

TEST(ShareFreedSlots, NothingToShareOrNobodyRunning) {
  EXPECT_EQ(ShareFreedSlots({Running("a", 1), Running("b", 1)}, 0), (std::vector<int>{0, 0}));
  EXPECT_EQ(ShareFreedSlots({Running("a", 1)}, -3), (std::vector<int>{0}));
  BorrowTenant done = Running("a", 1);
  done.running = false;
  EXPECT_EQ(ShareFreedSlots({done}, 4), (std::vector<int>{0}));
  EXPECT_TRUE(ShareFreedSlots({}, 4).empty());
}

}  // namespace
}  // namespace dfw
