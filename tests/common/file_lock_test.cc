#include "dfw/common/file_lock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "test_util.h"

namespace dfw {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

TEST(FileLock, OneHolderAtATimeAndTheNextGetsItOnceReleased) {
  TempDir dir;
  const std::string path = dir / "plan.lock";
  std::optional<FileLock> first(FileLock::TryFor(path, 0ms));
  ASSERT_TRUE(first->held());
  // flock conflicts between two opens of the file, in one process as across processes.
  EXPECT_FALSE(FileLock::TryFor(path, 20ms).held());
  first.reset();  // destruction releases it
  EXPECT_TRUE(FileLock::TryFor(path, 0ms).held());
}

TEST(FileLock, AMovedLockIsHeldByItsNewOwnerOnly) {
  TempDir dir;
  FileLock a = FileLock::TryFor(dir / "x.lock", 0ms);
  ASSERT_TRUE(a.held());
  FileLock b(std::move(a));
  EXPECT_TRUE(b.held());
  EXPECT_FALSE(a.held());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_FALSE(FileLock::TryFor(dir / "x.lock", 0ms).held());
}

TEST(FileLock, ALockFileThatCannotBeMadeIsALockNotGot) {
  TempDir dir;
  EXPECT_FALSE(FileLock::TryFor(dir / "missing-folder/x.lock", 0ms).held());
}

}  // namespace
}  // namespace dfw
