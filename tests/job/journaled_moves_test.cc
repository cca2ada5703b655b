// Finalize's journaled moves: redoable from any point, never losing a committed output.
#include "dfw/job/journaled_moves.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dfw {
namespace {

namespace fs = std::filesystem;

class JournaledMoves : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path();
    fs::create_directories(base_ / "committed");
    fs::create_directories(base_ / "out");
    for (int i = 0; i < 5; ++i) {
      std::string from = (base_ / "committed" / ("bundle-" + std::to_string(i) + ".done")).string();
      std::ofstream(from) << "rows of bundle " << i << "\n";
      moves_.push_back({from, (base_ / "out" / ("part-0000" + std::to_string(i) + "-of-00005")).string()});
    }
  }
  std::string Journal() const { return (base_ / "finalize.json").string(); }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void ExpectAllMoved() const {
    for (std::size_t i = 0; i < moves_.size(); ++i) {
      EXPECT_FALSE(fs::exists(moves_[i].from)) << moves_[i].from;
      EXPECT_EQ(Read(moves_[i].to), "rows of bundle " + std::to_string(i) + "\n") << moves_[i].to;
    }
  }
  dfw::testing::TempDir tmp_;
  fs::path base_;
  std::vector<FileMove> moves_;
};

TEST_F(JournaledMoves, MovesEverythingAndLeavesTheJournal) {
  ASSERT_TRUE(RunJournaledMoves(Journal(), moves_).ok());
  ExpectAllMoved();
  EXPECT_NE(Read(Journal()).find(moves_[3].to), std::string::npos);
}

TEST_F(JournaledMoves, ARunInterruptedAfterSomeMovesIsFinishedByRunningItAgain) {
  // What a launcher killed between the 2nd and 3rd rename leaves: the full journal, two moves
  // done, three not. Made by a complete run whose last three moves are then undone.
  ASSERT_TRUE(RunJournaledMoves(Journal(), moves_).ok());
  for (std::size_t i = 2; i < moves_.size(); ++i) fs::rename(moves_[i].to, moves_[i].from);
  Status s = RunJournaledMoves(Journal(), moves_);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectAllMoved();
  ASSERT_TRUE(RunJournaledMoves(Journal(), moves_).ok()) << "a run after completion changes nothing";
  ExpectAllMoved();
}

TEST_F(JournaledMoves, AJournalForOtherMovesIsRefused) {
  ASSERT_TRUE(RunJournaledMoves(Journal(), moves_).ok());
  std::vector<FileMove> other = moves_;
  other.pop_back();
  Status s = RunJournaledMoves(Journal(), other);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("differ"), std::string::npos) << s.ToString();
}

TEST_F(JournaledMoves, AnOutputThatIsNeitherCommittedNorMovedIsDataLossNamingBoth) {
  fs::remove(moves_[2].from);
  Status s = RunJournaledMoves(Journal(), moves_);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(moves_[2].from), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(moves_[2].to), std::string::npos) << s.ToString();
  EXPECT_TRUE(fs::exists(moves_[3].from)) << "moves after the missing one are not attempted";
}

TEST_F(JournaledMoves, AGarbledJournalIsDataLossNamingTheFile) {
  std::ofstream(Journal()) << "{\"version\": 1, \"moves\": [ {\"from\": 3";
  Status s = RunJournaledMoves(Journal(), moves_);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("finalize.json"), std::string::npos) << s.ToString();
  EXPECT_TRUE(fs::exists(moves_[0].from));
}


// /dev/shm (tmpfs) and the temp dir are two file systems on Linux CI machines; the test says so
// and skips where they are not.
bool OtherFileSystem(const fs::path& a, const fs::path& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev != sb.st_dev;
}

TEST_F(JournaledMoves, ACopyAcrossFileSystemsNeverWritesThroughAPlantedName) {
  fs::path other = fs::path("/dev/shm") / ("dfw_moves_other_" + std::to_string(::getpid()));
  fs::create_directories(other);
  if (!OtherFileSystem(base_, other)) {
    fs::remove_all(other);
    GTEST_SKIP() << "/dev/shm is on the same file system as " << base_ << ": no copy to test";
  }
  const std::string victim = (base_ / "victim").string();
  std::ofstream(victim) << "precious";
  ::chmod(victim.c_str(), 0600);
  const std::string shard = (other / "part-00000-of-00001").string();
  // Every name the copy ever used before: another user's symlinks, waiting.
  fs::create_symlink(victim, shard + ".dfworker-copy");
  fs::create_symlink(victim, shard);
  mode_t old = ::umask(0);
  Status s = MoveDurably({moves_[0].from, shard});
  ::umask(old);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Read(victim), "precious");
  struct stat st {};
  ASSERT_EQ(::lstat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "the victim's mode is untouched";
  ASSERT_EQ(::lstat(shard.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the shard is a file of ours, not the planted link";
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(Read(shard), "rows of bundle 0\n");
  EXPECT_FALSE(fs::exists(moves_[0].from));
  fs::remove_all(other);
}

TEST_F(JournaledMoves, AFolderEveryoneMayWriteWithoutTheStickyBitIsRefused) {
  ASSERT_EQ(::chmod((base_ / "out").c_str(), 0777), 0);
  Status s = MoveDurably(moves_[0]);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_TRUE(fs::exists(moves_[0].from)) << "the committed output stays where it was";
  ASSERT_EQ(::chmod((base_ / "out").c_str(), 01777), 0);
  EXPECT_TRUE(MoveDurably(moves_[0]).ok());
}

}  // namespace
}  // namespace dfw
