// Input ranges as the coordinator and SDK processes exchange them, and the split check.
#include "dfw/job/work_range.h"

#include <gtest/gtest.h>

namespace dfw {
namespace {

TEST(WorkRange, RoundTripsWithSpacesInThePath) {
  WorkRange r{2, "/data/my input/part 1.jsonl", 4096, 9000, 77};
  auto text = EncodeWorkRange(r);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "2 4096 9000 77 /data/my input/part 1.jsonl");
  auto back = DecodeWorkRange(*text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(EncodeWorkRange(WorkRange{0, "a\nb", 0, 1, 1}).has_value());
  auto in_memory = DecodeWorkRange("1 0 5 1 ");
  ASSERT_TRUE(in_memory.ok());
  EXPECT_EQ(in_memory->path, "");
}

TEST(WorkRange, BadTextIsDataLoss) {
  for (const char* bad : {"", "0 0 10", "0 x 10 1 a", "0 20 10 1 a", "-1 0 10 1 a", "0 0 10 0 a", "0 -5 10 1 a"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(DecodeWorkRange(bad).status().code(), StatusCode::kDataLoss);
  }
}

TEST(WorkRange, CheckSplitAcceptsOnlyOneCutStrictlyInside) {
  WorkRange whole{0, "f", 100, 1000, 10};
  auto cut = [&](int64_t at, int64_t line) {
    WorkRange p = whole, r = whole;
    p.end = at;
    r.begin = at;
    r.first_line = line;
    return std::make_pair(p, r);
  };
  auto [p, r] = cut(400, 30);
  EXPECT_EQ(CheckSplit(whole, p, r), "");
  for (int64_t bad_at : {100, 1000, 50, 1200}) {
    auto [bp, br] = cut(bad_at, 30);
    EXPECT_NE(CheckSplit(whole, bp, br), "") << bad_at;
  }
  auto [lp, lr] = cut(400, 3);
  EXPECT_NE(CheckSplit(whole, lp, lr), "") << "residual line before the range's first line";
  WorkRange other = r;
  other.path = "g";
  EXPECT_NE(CheckSplit(whole, p, other), "");
}

TEST(WorkRange, DataOrderIsSourceThenPathThenOffset) {
  std::vector<WorkRange> v = {{1, "a", 0, 5, 1}, {0, "b", 0, 5, 1}, {0, "a", 500, 900, 1}, {0, "a", 0, 500, 1}};
  std::sort(v.begin(), v.end(), DataOrderLess);
  EXPECT_EQ(v[0], (WorkRange{0, "a", 0, 500, 1}));
  EXPECT_EQ(v[1], (WorkRange{0, "a", 500, 900, 1}));
  EXPECT_EQ(v[2], (WorkRange{0, "b", 0, 5, 1}));
  EXPECT_EQ(v[3], (WorkRange{1, "a", 0, 5, 1}));
}

}  // namespace
}  // namespace dfw
