// The Combine shuffle between its two halves, driven directly: a partial sink writes bundles'
// shuffle files, CommitShuffle marks them complete, the merge source plans byte ranges of whole
// partitions, and a running range split for rebalancing gives every key exactly once.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <yaml-cpp/yaml.h>

#include "dfw/stages/combine.h"
#include "dfw/stages/config_yaml.h"
#include "dfw/stages/stage.h"
#include "test_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;

constexpr const char* kConfig = "{group_by: k, combine: {n: {value: k, fn: count}}}";

class CombineShuffle : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterBuiltinStages(registry_);
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
  }

  StageConfig Config(const char* type) const {
    StageConfig c;
    c.name = "C";
    c.type = type;
    c.config = ConfigNodeFromYaml(YAML::Load(kConfig));
    c.shuffle.partitions = 64;
    if (std::string(type) == kCombineMergeType) c.shuffle.dir = dir_ + "/C";
    return c;
  }

  // Bundle `id` of the partial sink over keys [from, to), each key `times` times.
  void WriteBundle(int64_t id, int from, int to, int times) {
    StageConfig c = Config(kCombinePartialType);
    auto stage = registry_.Find(kCombinePartialType)->factory(c);
    ASSERT_TRUE(stage.ok()) << stage.status().ToString();
    ASSERT_TRUE((*stage)->StartBundle(BundleContext{id, dir_}).ok());
    RowBatch batch;
    for (int t = 0; t < times; ++t) {
      for (int k = from; k < to; ++k) batch.push_back(Row({{"k", Value::Int(k)}}));
    }
    StageOutput out(&c);
    ASSERT_TRUE((*stage)->Process(batch, out).ok());
    ASSERT_TRUE((*stage)->FinishBundle(out).ok());
  }

  // Reads `reader` to its end into `seen` (key -> count of rows for it, its n summed).
  static void Drain(SplitReader& reader, const StageConfig& c, std::map<int64_t, std::pair<int, int64_t>>& seen,
                    int max_batches = 1 << 20) {
    for (int b = 0; b < max_batches; ++b) {
      StageOutput out(&c);
      auto more = reader.Next(out, 50);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      for (const Row& r : out.main()) {
        auto& s = seen[r.Find("k")->as_int()];
        ++s.first;
        s.second += r.Find("n")->as_int();
      }
      if (!*more) return;
    }
  }

  StageRegistry registry_;
  testing::TempDir tmp_{"dfw-shuffle-test"};
  std::string dir_;
};

TEST_F(CombineShuffle, ARunningRangeSplitForRebalancingGivesEveryKeyOnce) {
  WriteBundle(0, 0, 3000, 2);     // keys 0..2999 twice
  WriteBundle(1, 1000, 4000, 1);  // keys 1000..3999 once more
  ASSERT_TRUE(CommitShuffle(dir_ + "/C", {0, 1}).ok());
  StageConfig c = Config(kCombineMergeType);
  auto merge = registry_.Find(kCombineMergeType)->factory(c);
  ASSERT_TRUE(merge.ok()) << merge.status().ToString();
  auto splits = (*merge)->Split(int64_t{1} << 40);
  ASSERT_TRUE(splits.ok());
  ASSERT_EQ(splits->size(), 1u) << "one range holds the whole (small) shuffle";
  auto reader = (*merge)->OpenSplit(splits->front());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::map<int64_t, std::pair<int, int64_t>> seen;
  Drain(**reader, c, seen, 3);  // a few batches: the first partitions are claimed
  auto progress = (*reader)->Progress();
  ASSERT_TRUE(progress.has_value());
  EXPECT_GT(progress->done, 0);
  EXPECT_EQ(progress->total, splits->front().end - splits->front().begin);
  auto residual = (*reader)->TrySplit(0.5);
  ASSERT_TRUE(residual.has_value());
  EXPECT_GT(residual->begin, splits->front().begin);
  EXPECT_EQ(residual->end, splits->front().end);
  Drain(**reader, c, seen);
  auto rest = (*merge)->OpenSplit(*residual);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  Drain(**rest, c, seen);
  ASSERT_EQ(seen.size(), 4000u);
  for (const auto& [k, s] : seen) {
    EXPECT_EQ(s.first, 1) << "key " << k << " emitted " << s.first << " times";
    EXPECT_EQ(s.second, (k < 1000 ? 2 : k < 3000 ? 3 : 1)) << "key " << k;
  }
  // A range that does not start on a partition boundary is refused.
  auto off = (*merge)->OpenSplit(SourceSplit{dir_ + "/C", residual->begin + 1, residual->end, 1});
  EXPECT_FALSE(off.ok());
}

TEST_F(CombineShuffle, AnIncompleteOrDamagedShuffleIsRefusedNamingIt) {
  WriteBundle(0, 0, 100, 1);
  StageConfig c = Config(kCombineMergeType);
  auto merge = registry_.Find(kCombineMergeType)->factory(c);
  ASSERT_TRUE(merge.ok());
  auto before = (*merge)->Split(1 << 20);  // no shuffle.index yet: the writing stage has not finished
  ASSERT_FALSE(before.ok());
  EXPECT_NE(before.status().message().find("is not complete"), std::string::npos) << before.status().message();

  ASSERT_TRUE(CommitShuffle(dir_ + "/C", {0}).ok());
  const std::string file = dir_ + "/C/bundle-0.done";
  fs::resize_file(file, fs::file_size(file) - 3);  // the trailer is cut off
  auto merge2 = registry_.Find(kCombineMergeType)->factory(c);
  ASSERT_TRUE(merge2.ok());
  auto after = (*merge2)->Split(1 << 20);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(after.status().message().find("bundle-0.done"), std::string::npos) << after.status().message();
}

}  // namespace
}  // namespace dfw
