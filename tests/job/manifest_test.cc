#include "dfw/job/manifest.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dfw/job/job_dir.h"
#include "test_util.h"

namespace dfw {
namespace {

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    path_ = (dir_ / "manifest.jsonl").string();
  }
  dfw::testing::TempDir tmp_;
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(ManifestTest, CommitsSurviveReopen) {
  {
    auto m = Manifest::Open(path_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_TRUE(m->committed().empty());
    ASSERT_TRUE(m->Append("0-10", 1, 1).ok());
    ASSERT_TRUE(m->Append("10-20", 3, 7).ok());
  }
  auto m = Manifest::Open(path_);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->committed(), (std::set<std::string>{"0-10", "10-20"}));
}

TEST_F(ManifestTest, SecondCommitOfABundleIsRefused) {
  auto m = Manifest::Open(path_);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m->Append("b", 1, 1).ok());
  Status again = m->Append("b", 2, 2);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("'b'"), std::string::npos);
}

TEST_F(ManifestTest, TornLastLineIsNotACommitAndIsTruncated) {
  {
    std::ofstream f(path_);
    f << "{\"bundle\":\"a\",\"attempt\":1,\"lease\":1}\n{\"bundle\":\"b\",\"att";
  }
  auto m = Manifest::Open(path_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->committed(), (std::set<std::string>{"a"}));
  ASSERT_TRUE(m->Append("b", 2, 5).ok());
  auto again = Manifest::Open(path_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->committed(), (std::set<std::string>{"a", "b"}));
}

TEST_F(ManifestTest, CorruptCompleteLineIsDataLossNamingTheLine) {
  {
    std::ofstream f(path_);
    f << "{\"bundle\":\"a\",\"attempt\":1,\"lease\":1}\nnot json\n";
  }
  auto m = Manifest::Open(path_);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("line 2"), std::string::npos) << m.status().message();
}

TEST_F(ManifestTest, UnwritableLocationIsAnIoError) {
  auto m = Manifest::Open("/proc/dfw-no-such-dir/manifest.jsonl");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kIoError);
}

TEST_F(ManifestTest, AManifestThatIsALinkToADeviceIsDataLossNotACrash) {
  std::filesystem::create_symlink("/dev/zero", path_);
  auto m = Manifest::Open(path_);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("not a regular file"), std::string::npos) << m.status().ToString();
}

TEST_F(ManifestTest, SplitsSurviveReopenInOrderNextToCommits) {
  SplitRecord a{"0", "3", WorkRange{0, "in x.jsonl", 0, 400, 1}, WorkRange{0, "in x.jsonl", 400, 1000, 31}};
  SplitRecord b{"3", "4", WorkRange{0, "in x.jsonl", 400, 700, 31}, WorkRange{0, "in x.jsonl", 700, 1000, 60}};
  {
    auto m = Manifest::Open(path_);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE(m->AppendSplit(a).ok());
    ASSERT_TRUE(m->Append("1", 1, 9).ok());
    ASSERT_TRUE(m->AppendSplit(b).ok());
    EXPECT_EQ(m->AppendSplit(b).code(), StatusCode::kFailedPrecondition) << "residual id used twice";
  }
  auto m = Manifest::Open(path_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->splits().size(), 2u);
  EXPECT_EQ(m->splits()[0].parent, "0");
  EXPECT_EQ(m->splits()[0].residual_range, a.residual_range);
  EXPECT_EQ(m->splits()[1].primary, b.primary);
  EXPECT_EQ(m->committed(), (std::set<std::string>{"1"}));
}

TEST_F(ManifestTest, GarbledSplitLineIsDataLossNamingTheLine) {
  for (const char* bad : {R"({"split":"0","residual":"1","primary":"0 0 x 1 f","residual_range":"0 10 20 2 f"})",
                          R"({"split":"0","residual":"1","primary":"0 0 10 1 f"})",
                          R"({"split":"","residual":"1","primary":"0 0 10 1 f","residual_range":"0 10 20 2 f"})"}) {
    SCOPED_TRACE(bad);
    std::ofstream(path_, std::ios::trunc) << R"({"bundle":"9","attempt":1,"lease":1})" << "\n" << bad << "\n";
    auto m = Manifest::Open(path_);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(m.status().message().find("line 2"), std::string::npos) << m.status().message();
  }
}

}  // namespace
}  // namespace dfw
