#include "dfw/common/file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "test_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Restores the umask a test changed (the default of the test process is whatever CI has).
class UmaskZero {
 public:
  UmaskZero() : old_(::umask(0)) {}
  ~UmaskZero() { ::umask(old_); }

 private:
  mode_t old_;
};

TEST(WriteFileAtomically, GivesTheModeAskedForWhateverTheUmask) {
  TempDir dir;
  UmaskZero umask0;
  ASSERT_TRUE(WriteFileAtomically(dir / "private", "x").ok());
  ASSERT_TRUE(WriteFileAtomically(dir / "public", "y", /*sync=*/false, kOutputFileMode).ok());
  EXPECT_EQ(ModeOf(dir / "private"), 0600u);
  EXPECT_EQ(ModeOf(dir / "public"), 0644u);
  EXPECT_EQ(ReadFile(dir / "public"), "y");
}

TEST(CreateUniqueFileAt, NeverOpensANamePlantedAsASymlink) {
  TempDir dir;
  WriteFile(dir / "victim", "precious");
  auto folder = OpenFolder(dir.path());
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  std::string name;
  auto fd = CreateUniqueFileAt(folder->get(), "out.dfworker-copy", 0644, &name);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  EXPECT_TRUE(name.starts_with("out.dfworker-copy.")) << name;
  EXPECT_GT(name.size(), std::string("out.dfworker-copy.").size() + 8) << "the suffix is random, not a counter";
  std::string other;
  auto fd2 = CreateUniqueFileAt(folder->get(), "out.dfworker-copy", 0644, &other);
  ASSERT_TRUE(fd2.ok());
  EXPECT_NE(name, other);
  EXPECT_EQ(ReadFile(dir / "victim"), "precious");
}

TEST(CopyFileInto, ReplacesASymlinkAtTheTargetWithoutWritingThroughIt) {
  TempDir dir;
  WriteFile(dir / "victim", "precious");
  WriteFile(dir / "from", "shard rows\n");
  fs::create_symlink(dir / "victim", dir / "shard");
  auto folder = OpenFolder(dir.path());
  ASSERT_TRUE(folder.ok());
  UmaskZero umask0;
  Status s = CopyFileInto(dir / "from", folder->get(), "shard", dir / "shard", kOutputFileMode);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(ReadFile(dir / "victim"), "precious");
  EXPECT_FALSE(fs::is_symlink(dir / "shard"));
  EXPECT_EQ(ReadFile(dir / "shard"), "shard rows\n");
  EXPECT_EQ(ModeOf(dir / "shard"), 0644u);
  int left = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) left += e.path().filename().string().find("dfworker-copy") != std::string::npos;
  EXPECT_EQ(left, 0) << "no temporary copy is left behind";
}

TEST(CheckFolderNotOpenToAll, RefusesAWorldWritableFolderWithoutTheStickyBit) {
  TempDir dir;
  fs::create_directories(dir / "open");
  fs::create_directories(dir / "sticky");
  ASSERT_EQ(::chmod((dir / "open").c_str(), 0777), 0);
  ASSERT_EQ(::chmod((dir / "sticky").c_str(), 01777), 0);
  auto open = OpenFolder(dir / "open");
  auto sticky = OpenFolder(dir / "sticky");
  ASSERT_TRUE(open.ok() && sticky.ok());
  Status refused = CheckFolderNotOpenToAll(open->get(), dir / "open");
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("mode 0777"), std::string::npos) << refused.message();
  EXPECT_TRUE(CheckFolderNotOpenToAll(sticky->get(), dir / "sticky").ok());
}

TEST(MakeFolders, CreatesEveryMissingFolderWithTheExactMode) {
  TempDir dir;
  UmaskZero umask0;
  ASSERT_TRUE(MakeFolders(dir / "a/b/c", 0755).ok());
  EXPECT_EQ(ModeOf(dir / "a"), 0755u);
  EXPECT_EQ(ModeOf(dir / "a/b/c"), 0755u);
  WriteFile(dir / "file", "");
  EXPECT_FALSE(MakeFolders(dir / "file", 0755).ok());
}

TEST(ErrnoError, NeverSaysSuccessForALostErrno) {
  Status s = ErrnoError("write 'x'", 0);
  EXPECT_EQ(s.message().find("Success"), std::string::npos) << s.message();
}

// WriteAll and ReadAllAt round trip: a read at an offset, one running past the end (fewer bytes),
// one at the end (none), and a descriptor that cannot be read (-errno).
TEST(ReadAllAt, ReadsWhatIsThereAndSaysWhenItCannot) {
  TempDir dir;
  const std::string path = dir / "f";
  OwnedFd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  ASSERT_TRUE(out.valid());
  std::string text;
  for (int i = 0; i < 100000; ++i) text += static_cast<char>('a' + i % 26);
  ASSERT_EQ(WriteAll(out.get(), text.data(), text.size()), 0);
  OwnedFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(in.valid());
  std::string buf(70000, '\0');
  EXPECT_EQ(ReadAllAt(in.get(), buf.data(), 50000, 1234), 50000);
  EXPECT_EQ(buf.substr(0, 50000), text.substr(1234, 50000));
  EXPECT_EQ(ReadAllAt(in.get(), buf.data(), 70000, 40000), 60000);
  EXPECT_EQ(buf.substr(0, 60000), text.substr(40000));
  EXPECT_EQ(ReadAllAt(in.get(), buf.data(), 10, 100000), 0);
  EXPECT_EQ(ReadAllAt(out.get(), buf.data(), 10, 0), -EBADF);  // opened write-only
}

}  // namespace
}  // namespace dfw
