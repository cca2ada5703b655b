// ReadWholeFile / ReadFileIfPresent refuse what is not a regular file by name, at once (a FIFO
// never blocks, a device is never read), and a file above its kind's limit; ReplaceFileContents
// writes through a symlink and keeps owner, group and mode, and refuses a file it may not write.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "dfw/common/file.h"
#include "test_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

TEST(ReadWholeFile, NamesWhatIsThereInsteadOfARegularFile) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  ASSERT_EQ(::mkdir((dir / "folder").c_str(), 0700), 0);
  ASSERT_EQ(::symlink("/dev/zero", (dir / "zero").c_str()), 0);
  struct Case {
    std::string path, said;
  };
  for (const Case& c : {Case{dir / "fifo", "is not a regular file: it is a FIFO (a tokenizer.json is read whole)"},
                        Case{dir / "folder", "is not a regular file: it is a directory"},
                        Case{dir / "zero", "is not a regular file: it is a character device"},
                        Case{"/dev/urandom", "is not a regular file: it is a character device"}}) {
    auto r = ReadWholeFile(c.path, kTokenizerFile);
    ASSERT_FALSE(r.ok()) << c.path;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
    EXPECT_EQ(r.status().message().find("'" + c.path + "' " + c.said), 0u) << r.status().ToString();
    // Present but wrong is never "absent".
    auto maybe = ReadFileIfPresent(c.path, kGenerationConfigFile);
    EXPECT_FALSE(maybe.ok()) << c.path;
  }
}

TEST(ReadWholeFile, RefusesAFileAboveItsKindsLimitNamingBoth) {
  TempDir dir;
  WriteFile(dir / "big.json", std::string(3000, ' '));
  auto r = ReadWholeFile(dir / "big.json", FileKind{"tokenizer.json", 2 * 1024});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("is 3.0 KB (3000 bytes), over the limit of 2048 bytes for a tokenizer.json"), std::string::npos)
      << r.status().ToString();
  auto sparse = dir / "sparse.json";
  {
    int fd = ::open(sparse.c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, off_t{3200} * 1000 * 1000), 0);  // 3.2 GB, never read
    ::close(fd);
  }
  auto huge = ReadWholeFile(sparse, kTokenizerFile);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("is 3.2 GB (3200000000 bytes), over the limit of 64 MiB for a tokenizer.json"),
            std::string::npos)
      << huge.status().ToString();
}

TEST(ReadFileIfPresent, IsNulloptOnlyWhenNothingIsThere) {
  TempDir dir;
  auto absent = ReadFileIfPresent(dir / "generation_config.json", kGenerationConfigFile);
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  EXPECT_FALSE(absent->has_value());
  WriteFile(dir / "generation_config.json", "{}");
  auto present = ReadFileIfPresent(dir / "generation_config.json", kGenerationConfigFile);
  ASSERT_TRUE(present.ok());
  EXPECT_EQ(present->value_or("?"), "{}");
  ASSERT_EQ(::symlink((dir / "nowhere").c_str(), (dir / "dangling.json").c_str()), 0);
  EXPECT_FALSE(ReadFileIfPresent(dir / "dangling.json", kGenerationConfigFile).ok()) << "a dangling link is not absent";
}

mode_t StatModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(ReplaceFileContents, WritesThroughASymlinkKeepingModeOwnerAndGroup) {
  TempDir dir;
  WriteFile(dir / "real/tests.yaml", "old\n");
  ASSERT_EQ(::chmod((dir / "real/tests.yaml").c_str(), 0640), 0);
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown((dir / "real/tests.yaml").c_str(), 65534, 65534), 0);
  }
  ASSERT_EQ(::symlink("real/tests.yaml", (dir / "tests.yaml").c_str()), 0);
  Status s = ReplaceFileContents(dir / "tests.yaml", "new\n");
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(fs::is_symlink(dir / "tests.yaml"));
  EXPECT_EQ(ReadFile(dir / "real/tests.yaml"), "new\n");
  EXPECT_EQ(StatModeOf(dir / "real/tests.yaml"), 0640u);
  if (root) {
    struct stat st {};
    ASSERT_EQ(::stat((dir / "real/tests.yaml").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_gid, 65534u);
  }
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "real")) ++entries;
  EXPECT_EQ(entries, 1) << "the temporary file was left behind";
}

TEST(ReplaceFileContents, RefusesReadOnlyFilesAndOtherKindsLeavingThemAlone) {
  TempDir dir;
  WriteFile(dir / "ro.yaml", "old\n");
  ASSERT_EQ(::chmod((dir / "ro.yaml").c_str(), 0444), 0);
  Status s = ReplaceFileContents(dir / "ro.yaml", "new\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'" + (dir / "ro.yaml") + "' is read-only (mode 0444)"), std::string::npos) << s.ToString();
  EXPECT_EQ(ReadFile(dir / "ro.yaml"), "old\n");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  Status f = ReplaceFileContents(dir / "fifo", "new\n");
  EXPECT_EQ(f.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.message().find("is not a regular file: it is a FIFO"), std::string::npos) << f.ToString();
  EXPECT_EQ(ReplaceFileContents(dir / "missing.yaml", "x").code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(dir / "missing.yaml"));
}

}  // namespace
}  // namespace dfw
