#include "dfw/job/job_dir.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dfw/common/unix_socket.h"
#include "dfw/job/line_channel.h"
#include "test_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;

class JobDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path();
    info_.job_id = "dfw-test";
    info_.bundles = {"0-5", "5-10"};
    info_.executor = "lines";
    info_.params = {{"input", "/x/in.txt"}};
    info_.heartbeat_ms = 50;
  }
  dfw::testing::TempDir tmp_;
  fs::path base_;
  JobInfo info_;
};

TEST_F(JobDirTest, CreateThenOpenReadsTheSameJob) {
  std::string root = (base_ / "job").string();
  auto created = JobDir::Create(root, info_);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  for (auto p : {created->StagingDir(), created->CommittedDir(), created->LogsDir()}) EXPECT_TRUE(fs::is_directory(p)) << p;
  auto opened = JobDir::Open(root);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->info().job_id, "dfw-test");
  EXPECT_EQ(opened->info().bundles, info_.bundles);
  EXPECT_EQ(opened->info().params.at("input"), "/x/in.txt");
  EXPECT_EQ(opened->info().heartbeat_ms, 50);
}

TEST_F(JobDirTest, CreateWithoutSyncIsReadableAndSyncsLater) {
  std::string root = (base_ / "job").string();
  auto created = JobDir::Create(root, info_, /*sync=*/false);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto opened = JobDir::Open(root);  // SDK processes read it before the launcher syncs it
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->info().bundles, info_.bundles);
  EXPECT_FALSE(fs::exists(root + "/job.json.tmp"));
  EXPECT_TRUE(created->SyncJobJson().ok());
  fs::remove(root + "/job.json");
  Status gone = created->SyncJobJson();
  EXPECT_EQ(gone.code(), StatusCode::kIoError) << gone.ToString();
  EXPECT_NE(gone.message().find(root + "/job.json"), std::string::npos) << gone.message();
}

TEST_F(JobDirTest, ExistingNonEmptyDirPointsAtResume) {
  std::string root = (base_ / "job").string();
  ASSERT_TRUE(JobDir::Create(root, info_).ok());
  auto again = JobDir::Create(root, info_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("--resume"), std::string::npos);
}

TEST_F(JobDirTest, UnwritableParentIsAClearIoError) {
  auto d = JobDir::Create("/proc/dfw-cannot-create/job", info_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kIoError);
  EXPECT_NE(d.status().message().find("/proc/dfw-cannot-create"), std::string::npos) << d.status().message();
}

TEST_F(JobDirTest, OpenOfANonJobDirIsNotFound) {
  auto d = JobDir::Open(base_.string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("not a dfworker job dir"), std::string::npos);
}

TEST_F(JobDirTest, CorruptJobJsonIsDataLoss) {
  fs::create_directories(base_ / "job");
  std::ofstream(base_ / "job" / "job.json") << R"({"job_id": 3})";
  auto d = JobDir::Open((base_ / "job").string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss);
}

TEST_F(JobDirTest, CreateHoldsTheLockUntilTheDirIsGone) {
  std::string root = (base_ / "job").string();
  {
    auto d = JobDir::Create(root, info_);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->locked());
    auto second = JobLock::Acquire(root);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("in use"), std::string::npos);
  }
  auto after = JobLock::Acquire(root);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  auto again = JobLock::Acquire(root);
  EXPECT_FALSE(again.ok()) << "the resumer holds it now";
}

TEST_F(JobDirTest, ASecondCreateOnTheSameEmptyDirLosesBeforeWritingAnything) {
  std::string root = (base_ / "job").string();
  fs::create_directories(root);  // an empty folder the user made: fine for one run
  auto first = JobDir::Create(root, info_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  JobInfo other = info_;
  other.job_id = "dfw-other";
  auto second = JobDir::Create(root, other);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(JobDir::Open(root)->info().job_id, "dfw-test") << "the loser wrote nothing";
}

TEST_F(JobDirTest, LockOfAPathThatIsNotAFolderIsNotFound) {
  auto lock = JobLock::Acquire((base_ / "missing").string());
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(base_ / "missing"));
}

TEST_F(JobDirTest, IpcDirIsPrivateWhateverTheUmask) {
  auto d = JobDir::Create((base_ / "job").string(), info_);
  ASSERT_TRUE(d.ok());
  mode_t old = ::umask(0);
  auto ipc = d->MakePrivateIpcDir();
  ::umask(old);
  ASSERT_TRUE(ipc.ok()) << ipc.status().ToString();
  EXPECT_EQ(*ipc, d->IpcDir());
  EXPECT_EQ(fs::status(*ipc).permissions(), fs::perms::owner_all);
}

TEST_F(JobDirTest, LongRootGetsAFreshPrivateSocketFolder) {
  auto d = JobDir::Create((base_ / std::string(120, 'x')).string(), info_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto a = d->MakePrivateIpcDir();
  auto b = d->MakePrivateIpcDir();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(a->size() + std::string("/coordinator.sock").size(), 100u);
  EXPECT_NE(*a, *b) << "never a predictable name";
  EXPECT_EQ(fs::status(*a).permissions(), fs::perms::owner_all);
  fs::remove(*a);
  fs::remove(*b);
}

TEST_F(JobDirTest, ReadWholeFileRefusesAFifoAndAnOversizedFile) {
  std::string fifo = (base_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = ReadWholeFile(fifo);  // must not block
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().ToString();
  std::ofstream(base_ / "big") << std::string(2000, 'x');
  auto big = ReadWholeFile((base_ / "big").string(), 1000);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("2000 bytes"), std::string::npos) << big.status().ToString();
  EXPECT_EQ(ReadWholeFile((base_ / "big").string(), 2000)->size(), 2000u);
}

TEST_F(JobDirTest, PromoteMovesEverySinkFileAndRemovesTheLeaseDir) {
  auto d = JobDir::Create((base_ / "job").string(), info_);
  ASSERT_TRUE(d.ok());
  std::string lease = d->LeaseStagingDir(4);
  fs::create_directories(lease + "/out");
  fs::create_directories(lease + "/errors");
  std::ofstream(lease + "/out/bundle-0-5.done") << "a\nb\n";
  std::ofstream(lease + "/errors/bundle-0-5.done") << "";
  auto moved = PromoteStaged(lease, d->CommittedDir());
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(*moved, 2);
  EXPECT_FALSE(fs::exists(lease));
  EXPECT_EQ(*ReadWholeFile(d->CommittedDir() + "/out/bundle-0-5.done"), "a\nb\n");
  EXPECT_TRUE(fs::exists(d->CommittedDir() + "/errors/bundle-0-5.done"));
}

TEST(LineChannel, CarriesLinesBothWaysAndReportsTheClose) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  LineChannel a{OwnedFd(sv[0])};
  {
    LineChannel b{OwnedFd(sv[1])};
    ASSERT_TRUE(a.WriteLine("one").ok());
    ASSERT_TRUE(a.WriteLine("two").ok());
    EXPECT_EQ(*b.ReadLine(), "one");
    EXPECT_EQ(*b.ReadLine(), "two");
    ASSERT_TRUE(b.WriteLine("three").ok());
    EXPECT_TRUE(a.ReadAvailable());
    EXPECT_EQ(a.PopLine().value_or(""), "three");
    EXPECT_FALSE(a.PopLine().has_value());
  }
  EXPECT_FALSE(a.ReadAvailable());
  EXPECT_EQ(a.ReadLine().status().code(), StatusCode::kUnavailable);
}

TEST(LineChannel, ConnectingToNobodyIsUnavailableNamingThePath) {
  auto fd = ConnectUnix("/tmp/dfw-nobody-listens-here.sock", "the coordinator");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(fd.status().message().find("dfw-nobody-listens-here"), std::string::npos);
}


// What a launcher killed at its first rename leaves (the lock, the empty folders, a temporary
// job.json): a fresh run reuses the dir instead of calling it busy.
TEST_F(JobDirTest, CreateRootMakesAPrivateLockedRootWithNoJobOfItsOwn) {
  std::string root = (base_ / "staged").string();
  {
    auto lock = JobDir::CreateRoot(root);
    ASSERT_TRUE(lock.ok()) << lock.status().ToString();
    EXPECT_EQ(fs::status(root).permissions() & fs::perms::all, fs::perms::owner_all);
    EXPECT_FALSE(fs::exists(root + "/job.json"));
    auto second = JobDir::CreateRoot(root);  // a racing run on the same root
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
    auto held = JobLock::Acquire(root);
    ASSERT_FALSE(held.ok());
    EXPECT_NE(held.status().message().find("in use"), std::string::npos);
    std::ofstream(root + "/stages.json.tmp.4242.0") << "{";  // stopped before its first rename
  }
  // Released: a root holding nothing but the lock and a temporary file is unstarted, and a new
  // run takes it.
  auto unstarted = IsUnstartedJobDir(root);
  ASSERT_TRUE(unstarted.ok() && *unstarted);
  auto again = JobDir::CreateRoot(root);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(fs::exists(root + "/stages.json.tmp.4242.0"));
}

TEST_F(JobDirTest, CreateReusesADirStoppedBeforeItsJobJsonWasWritten) {
  std::string root = (base_ / "job").string();
  fs::create_directories(root + "/staging");
  fs::create_directories(root + "/committed");
  fs::create_directories(root + "/logs");
  std::ofstream(root + "/lock").put('\n');
  std::ofstream(root + "/job.json.tmp.4242.0") << "{\"job_id\":";
  auto unstarted = IsUnstartedJobDir(root);
  ASSERT_TRUE(unstarted.ok() && *unstarted);
  auto created = JobDir::Create(root, info_);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE(fs::exists(root + "/job.json.tmp.4242.0"));
  auto opened = JobDir::Open(root);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->info().job_id, "dfw-test");
}

TEST_F(JobDirTest, ADirWithAnythingElseIsNotTakenForAnUnstartedOne) {
  std::string root = (base_ / "job").string();
  fs::create_directories(root + "/committed/WriteToJson");
  std::ofstream(root + "/committed/WriteToJson/bundle-0.done") << "{}\n";
  std::ofstream(root + "/lock").put('\n');
  EXPECT_FALSE(*IsUnstartedJobDir(root));
  auto created = JobDir::Create(root, info_);
  EXPECT_EQ(created.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs::exists(root + "/committed/WriteToJson/bundle-0.done")) << "nothing committed is ever removed";
  std::string user_dir = (base_ / "mine").string();
  fs::create_directories(user_dir);
  std::ofstream(user_dir + "/notes.txt") << "x";
  EXPECT_FALSE(*IsUnstartedJobDir(user_dir));
}

TEST_F(JobDirTest, AnUnstartedDirWhoseLockIsHeldIsNotReclaimed) {
  std::string root = (base_ / "job").string();
  fs::create_directories(root + "/staging");
  int fd = ::open((root + "/lock").c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // a launcher still inside Create
  auto created = JobDir::Create(root, info_);
  EXPECT_EQ(created.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(created.status().message().find("in use"), std::string::npos) << created.status().message();
  ::close(fd);
}

TEST_F(JobDirTest, ASymlinkAtTheJobDirsPathIsRefused) {
  std::string elsewhere = (base_ / "elsewhere").string();
  fs::create_directories(elsewhere);
  std::string root = (base_ / "job").string();
  fs::create_directory_symlink(elsewhere, root);
  auto created = JobDir::Create(root, info_);
  EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(created.status().message().find("symbolic link"), std::string::npos) << created.status().message();
  EXPECT_TRUE(fs::is_empty(elsewhere)) << "nothing was written through the link";
  EXPECT_EQ(JobLock::Acquire(root).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(JobDirTest, AJobDirOfAnotherUserIsRefusedNamingTheOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to another user (chown)";
  std::string root = (base_ / "theirs").string();
  fs::create_directories(root);
  ASSERT_EQ(::chmod(root.c_str(), 0777), 0);
  ASSERT_EQ(::chown(root.c_str(), 65534, 65534), 0);
  auto created = JobDir::Create(root, info_);
  EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(created.status().message().find("uid 65534"), std::string::npos) << created.status().message();
  EXPECT_TRUE(fs::is_empty(root));
  EXPECT_EQ(JobLock::Acquire(root).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(JobDirTest, EverythingCreatedIsPrivateWhateverTheUmask) {
  mode_t old = ::umask(0);
  std::string root = (base_ / "job").string();
  auto created = JobDir::Create(root, info_);
  ::umask(old);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    struct stat st {};
    ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0077, 0u) << e.path() << " is open to others: " << std::oct << (st.st_mode & 07777);
  }
  struct stat st {};
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

}  // namespace
}  // namespace dfw
