// Fault tests through the product itself: `dfworker run` (launcher, coordinator, real SDK
// processes running the pipeline executor) on ReadFromJson → MapToFields → WriteToJson over 40
// input files (40 bundles). Tests send real signals (SIGKILL to an SDK process or the launcher,
// SIGINT/SIGTERM), resume, and check that every record reaches the sharded output exactly once,
// that exit codes are exact and that no process of the job outlives it.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>

#include "process_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using namespace dfw::testing;

constexpr int kFiles = 40;           // one bundle per input file
constexpr int kRecordsPerFile = 25;  // 1000 records in all

class DfworkerRun : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path();
    fs::create_directories(base_ / "in");
    for (int f = 0; f < kFiles; ++f) {
      std::ofstream in(base_ / "in" / ("part-" + std::to_string(100 + f) + ".jsonl"));
      for (int i = 0; i < kRecordsPerFile; ++i) {
        int id = f * kRecordsPerFile + i;
        in << "{\"id\": " << id << ", \"x\": " << i << "}\n";
      }
    }
    // Relative paths: the job records the launcher's working directory, so resume and every SDK
    // process resolve them the same way.
    std::ofstream(base_ / "p.yaml") << "pipeline:\n"
                                       "  type: chain\n"
                                       "  source: {type: ReadFromJson, config: {path: in/*.jsonl}}\n"
                                       "  transforms:\n"
                                       "    - type: MapToFields\n"
                                       "      config: {language: python, fields: {id: id, y: \"x * 2 + id\"}}\n"
                                       "  sink: {type: WriteToJson, config: {path: out/rows, file_name_suffix: .jsonl}}\n";
  }
  void TearDown() override {
    if (HasFailure()) tmp_.Keep();
  }

  std::string JobDir() const { return (base_ / "job").string(); }
  std::string Err(const std::string& name) const { return (base_ / (name + ".err")).string(); }
  std::string Log(const std::string& name) const { return ReadFile(Err(name)); }
  int Commits() const { return CountLines(JobDir() + "/manifest.jsonl"); }
  // DFW_TEST_BUNDLE_GATE's file (dfw/worker/pipeline_job.h): bundles past the gate wait for it.
  std::string Gate() const { return (base_ / "gate").string(); }
  void OpenGate() const { std::ofstream(Gate()) << "open\n"; }

  // `dfworker run p.yaml` from base_ with `processes` SDK processes (one harness thread each).
  // `cwd`: run from another directory (the pipeline file named by its absolute path).
  Started Launch(const std::string& name, int processes, std::vector<std::string> extra = {},
                 const std::vector<std::string>& env = {}, const std::string& cwd = "") {
    std::vector<std::string> argv = {"/bin/sh", "-c", "", "sh", DFW_DFWORKER, "run",
                                     cwd.empty() ? "p.yaml" : (base_ / "p.yaml").string(),
                                     "--number_of_worker_harness_threads=1"};
    argv.push_back(processes == 1 ? "--experiments=no_use_multiple_sdk_containers"
                                  : "--machine_type=n1-standard-" + std::to_string(processes));
    bool own_dir = std::find(extra.begin(), extra.end(), "--resume") != extra.end() ||
                   std::find(extra.begin(), extra.end(), "--job_dir") != extra.end();
    if (!own_dir) argv.insert(argv.end(), {"--job_dir", JobDir()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    // exec in base_ (the pipeline's relative paths); the shell is replaced, so the pid is dfworker's.
    argv[2] = "cd '" + (cwd.empty() ? base_.string() : cwd) + "' && exec \"$@\"";
    return StartProcess(argv, env, Err(name));
  }
  int Run(const std::string& name, int processes, std::vector<std::string> extra = {},
          const std::vector<std::string>& env = {}) {
    return WaitExit(Launch(name, processes, std::move(extra), env).pid);
  }

  // Every output line, sorted (the output set, independent of which process wrote what).
  std::vector<std::string> OutputLines() const {
    std::vector<std::string> lines;
    if (!fs::exists(base_ / "out")) return lines;
    for (const auto& e : fs::directory_iterator(base_ / "out")) {
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) lines.push_back(line);
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  }
  int OutputShards() const {
    int n = 0;
    if (fs::exists(base_ / "out")) {
      for (const auto& e : fs::directory_iterator(base_ / "out")) n += e.path().filename().string().find("-of-00040") != std::string::npos;
    }
    return n;
  }

  // Every id 0..999 exactly once with its computed field, 40 shards, 40 manifest lines, and
  // metrics.json counting 1000 records (each bundle once, across kills and resumes).
  void ExpectExactlyOnce(const std::string& log_name) {
    static const std::regex kRow(R"re(^\{"id":(\d+),"y":(\d+)\}$)re");
    dfw::testing::ExpectExactlyOnce(OutputLines(), kRow, static_cast<std::size_t>(kFiles * kRecordsPerFile), Log(log_name),
                                    [](const std::smatch& m) {
                                      const int id = std::stoi(m[1]);
                                      EXPECT_EQ(std::stoi(m[2]), 2 * (id % kRecordsPerFile) + id) << m[0];
                                    });
    EXPECT_EQ(OutputShards(), kFiles);
    EXPECT_EQ(Commits(), kFiles) << "each bundle is in the manifest exactly once";
    EXPECT_NE(ReadFile(JobDir() + "/metrics.json").find("\"value\": 1000"), std::string::npos)
        << ReadFile(JobDir() + "/metrics.json");
  }

  // Files in an output folder (the folder itself is made, and probed, when the job is planned).
  std::size_t OutputFiles(const std::string& folder) const {
    std::error_code ec;
    std::size_t n = 0;
    for (fs::directory_iterator it(base_ / folder, ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
  }

  // SDK processes of this job still alive (their command line names the job dir).
  std::size_t JobProcesses() const { return ProcessesMentioning(JobDir()).size(); }

  dfw::testing::TempDir tmp_;
  fs::path base_;
};

TEST_F(DfworkerRun, OneFourAndEightProcessesGiveIdenticalOutputSets) {
  std::vector<std::string> reference;
  for (int n : {1, 4, 8}) {
    SCOPED_TRACE("processes " + std::to_string(n));
    fs::remove_all(base_ / "out");
    fs::remove_all(JobDir());
    std::string name = "run" + std::to_string(n);
    ASSERT_EQ(Run(name, n), 0) << Log(name);
    EXPECT_NE(Log(name).find(std::to_string(n) + " SDK processes"), std::string::npos) << Log(name);
    ExpectExactlyOnce(name);
    EXPECT_EQ(JobProcesses(), 0u);
    if (reference.empty()) {
      reference = OutputLines();
    } else {
      EXPECT_EQ(OutputLines(), reference) << "the output set depends on the process count";
    }
  }
}

class DfworkerSdkKill : public DfworkerRun, public ::testing::WithParamInterface<int> {};

TEST_P(DfworkerSdkKill, RandomSdkProcessKilledAtARandomTimeLosesAndDuplicatesNothing) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  std::mt19937 rng(static_cast<unsigned>(GetParam()));
  // Bundles 10 and up wait at a gate that opens after the kill: the kill lands mid-run.
  Started launcher = Launch("run", 4, {}, {"DFW_TEST_BUNDLE_GATE=10:" + Gate()});
  int after = static_cast<int>(rng() % 10);  // 0: before any commit
  ASSERT_TRUE(Eventually([&] { return Commits() >= after && ChildrenOf(launcher.pid).size() == 4; })) << Log("run");
  std::vector<pid_t> kids = ChildrenOf(launcher.pid);
  ASSERT_FALSE(kids.empty());
  ASSERT_EQ(::kill(kids[rng() % kids.size()], SIGKILL), 0);
  OpenGate();
  ASSERT_EQ(WaitExit(launcher.pid), 0) << Log("run");
  EXPECT_NE(Log("run").find("killed by signal 9"), std::string::npos) << Log("run");
  ExpectExactlyOnce("run");
  EXPECT_EQ(JobProcesses(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, DfworkerSdkKill, ::testing::Values(11, 12, 13));

TEST_F(DfworkerRun, LauncherSigkillLeavesNoProcessAndResumeCompletesExactlyOnce) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  Started launcher = Launch("first", 4, {}, {"DFW_TEST_BUNDLE_GATE=5:" + Gate()});  // never opened
  ASSERT_TRUE(Eventually([&] { return Commits() >= 3; })) << Log("first");
  ASSERT_EQ(::kill(launcher.pid, SIGKILL), 0);
  EXPECT_EQ(WaitExit(launcher.pid), 128 + SIGKILL);
  // PR_SET_PDEATHSIG: the SDK processes die with the launcher, nobody has to clean up after it.
  EXPECT_TRUE(Eventually([&] { return JobProcesses() == 0; }, 30)) << JobProcesses() << " processes outlived the launcher";
  int before = Commits();
  EXPECT_LT(before, kFiles) << "the kill should land mid-run";
  EXPECT_EQ(OutputFiles("out"), 0u) << "nothing is finalized before every bundle is committed";
  ASSERT_EQ(Run("resume", 4, {"--resume", JobDir()}), 0) << Log("resume");
  EXPECT_NE(Log("resume").find(std::to_string(before) + " already committed"), std::string::npos) << Log("resume");
  ExpectExactlyOnce("resume");
  ASSERT_EQ(Run("again", 2, {"--resume", JobDir()}), 0) << Log("again");
  EXPECT_NE(Log("again").find("already finished"), std::string::npos) << Log("again");
  ExpectExactlyOnce("again");
}

// The job records its working directory; a --resume started elsewhere reads and writes the
// pipeline's relative paths there (the SDK processes open the planned inputs against it, the
// finalize writes the shards there), and nothing is created in the directory it was started from.
TEST_F(DfworkerRun, ResumeFromAnotherDirectoryResolvesThePipelinesPathsInTheJobsDirectory) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  Started launcher = Launch("first", 2, {}, {"DFW_TEST_BUNDLE_GATE=5:" + Gate()});  // never opened
  ASSERT_TRUE(Eventually([&] { return Commits() >= 3; })) << Log("first");
  ASSERT_EQ(::kill(launcher.pid, SIGKILL), 0);
  EXPECT_EQ(WaitExit(launcher.pid), 128 + SIGKILL);
  EXPECT_TRUE(Eventually([&] { return JobProcesses() == 0; }, 30)) << JobProcesses() << " processes outlived the launcher";
  const fs::path elsewhere = base_ / "elsewhere";
  fs::create_directories(elsewhere);
  ASSERT_EQ(WaitExit(Launch("resume", 2, {"--resume", JobDir()}, {}, elsewhere.string()).pid), 0) << Log("resume");
  ExpectExactlyOnce("resume");
  EXPECT_TRUE(fs::is_empty(elsewhere)) << "the resumed run wrote into the directory it was started from";
}

class DfworkerStopSignal : public DfworkerRun, public ::testing::WithParamInterface<int> {};

TEST_P(DfworkerStopSignal, StopsWithTheSignalsExitCodeLeavesNothingRunningAndResumes) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  const int sig = GetParam();
  Started launcher = Launch("first", 4, {}, {"DFW_TEST_BUNDLE_GATE=5:" + Gate()});
  ASSERT_TRUE(Eventually([&] { return Commits() >= 2; })) << Log("first");
  ASSERT_EQ(::kill(launcher.pid, sig), 0);
  OpenGate();  // the bundles in flight finish within the grace period; no new one is leased
  EXPECT_EQ(WaitExit(launcher.pid), sig == SIGINT ? 130 : 143) << Log("first");
  EXPECT_NE(Log("first").find("--resume"), std::string::npos) << Log("first");
  EXPECT_EQ(JobProcesses(), 0u);
  EXPECT_LT(Commits(), kFiles) << Log("first");
  EXPECT_FALSE(fs::exists(JobDir() + "/FINISHED"));
  ASSERT_EQ(Run("resume", 4, {"--resume", JobDir()}), 0) << Log("resume");
  ExpectExactlyOnce("resume");
}

INSTANTIATE_TEST_SUITE_P(Signals, DfworkerStopSignal, ::testing::Values(SIGINT, SIGTERM));

TEST_F(DfworkerRun, PoisonBundleFailsTheJobWithExitOneAfterFourAttempts) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  ASSERT_EQ(Run("run", 2, {}, {"DFW_TEST_CRASH_ON_BUNDLE=7"}), 1) << Log("run");
  std::string err = Log("run");
  EXPECT_NE(err.find("run stopped: bundle '7' failed 4 attempts"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGABRT"), std::string::npos) << err;
  EXPECT_EQ(JobProcesses(), 0u);
  EXPECT_EQ(OutputFiles("out"), 0u) << "a failed job is not finalized";
  EXPECT_FALSE(fs::exists(JobDir() + "/FINISHED"));
}

TEST_F(DfworkerRun, UnwritableJobDirExitsOneNamingIt) {
  EXPECT_EQ(Run("run", 2, {"--job_dir", "/proc/dfw-not-writable/job"}), 1) << Log("run");
  EXPECT_NE(Log("run").find("run stopped:"), std::string::npos) << Log("run");
  EXPECT_NE(Log("run").find("/proc/dfw-not-writable"), std::string::npos) << Log("run");
}

TEST_F(DfworkerRun, PipelineWithoutASinkRunsLogsEveryRowAndExitsZero) {
  // Every Beam YAML example ends in LogForTesting with no sink: no bundle stages a file, and each
  // commit must still go through (it once failed listing a staging folder no sink had created).
  std::ofstream(base_ / "p.yaml", std::ios::trunc) << "pipeline:\n"
                                                      "  type: chain\n"
                                                      "  transforms:\n"
                                                      "    - type: ReadFromJson\n"
                                                      "      config: {path: in/*.jsonl}\n"
                                                      "    - type: Filter\n"
                                                      "      config: {language: python, keep: \"id % 100 == 7\"}\n"
                                                      "    - type: LogForTesting\n";
  ASSERT_EQ(Run("run", 2), 0) << Log("run");
  std::string logs = Log("run");  // the SDK processes log to logs/sdk-N.log
  for (const auto& e : fs::directory_iterator(JobDir() + "/logs")) logs += ReadFile(e.path().string());
  for (int id = 7; id < kFiles * kRecordsPerFile; id += 100) {
    EXPECT_NE(logs.find("{\"id\":" + std::to_string(id) + ","), std::string::npos) << "row " << id << " not logged\n" << logs;
  }
  EXPECT_EQ(Commits(), kFiles);
  EXPECT_TRUE(fs::exists(JobDir() + "/FINISHED"));
  EXPECT_FALSE(fs::exists(base_ / "out"));
}

// Finalize is one journaled step: a launcher killed at any point of it (an exact kill point, not a
// sleep) leaves a job that --resume finishes with every record exactly once.
class DfworkerFinalizeKill : public DfworkerRun, public ::testing::WithParamInterface<std::string> {};

TEST_P(DfworkerFinalizeKill, LauncherKilledDuringFinalizeIsFinishedByResumeExactlyOnce) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  EXPECT_EQ(Run("first", 2, {}, {"DFW_TEST_KILL_AT=" + GetParam()}), 128 + SIGKILL) << Log("first");
  EXPECT_TRUE(Eventually([&] { return JobProcesses() == 0; }, 30));
  EXPECT_FALSE(fs::exists(JobDir() + "/FINISHED"));
  EXPECT_EQ(Commits(), kFiles) << "every bundle was committed before finalize began";
  ASSERT_EQ(Run("resume", 2, {"--resume", JobDir()}), 0) << Log("resume");
  ExpectExactlyOnce("resume");
  EXPECT_TRUE(fs::exists(JobDir() + "/FINISHED"));
}

INSTANTIATE_TEST_SUITE_P(KillPoints, DfworkerFinalizeKill,
                         ::testing::Values("finalize-move-0", "finalize-move-14", "finalize-move-39", "before-finished"));

TEST_F(DfworkerRun, DiskFullDuringFinalizeFailsAndResumeCompletesOnceThereIsSpace) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  ASSERT_EQ(Run("first", 2, {}, {"DFW_TEST_FAIL_AT=finalize-move-5"}), 1) << Log("first");
  EXPECT_NE(Log("first").find("No space left on device"), std::string::npos) << Log("first");
  EXPECT_FALSE(fs::exists(JobDir() + "/FINISHED"));
  ASSERT_EQ(Run("resume", 2, {"--resume", JobDir()}), 0) << Log("resume");
  ExpectExactlyOnce("resume");
}

// Two runs started on one --job_dir at the same moment: exactly one owns it (created atomically,
// locked before any file is written); the other stops before writing, and the winner's output is
// computed by its own pipeline.
TEST_F(DfworkerRun, TwoRunsOnOneJobDirAtOnceExactlyOneRunsAndItsOutputIsItsOwn) {
  std::ofstream(base_ / "q.yaml") << "pipeline:\n"
                                     "  type: chain\n"
                                     "  source: {type: ReadFromJson, config: {path: in/*.jsonl}}\n"
                                     "  transforms:\n"
                                     "    - type: MapToFields\n"
                                     "      config: {language: python, fields: {id: id, z: \"x * 3 + id\"}}\n"
                                     "  sink: {type: WriteToJson, config: {path: out2/rows, file_name_suffix: .jsonl}}\n";
  auto start = [&](const std::string& pipeline, const std::string& name) {
    return StartProcess({"/bin/sh", "-c", "cd '" + base_.string() + "' && exec \"$@\"", "sh", DFW_DFWORKER, "run", pipeline,
                         "--number_of_worker_harness_threads=1", "--machine_type=n1-standard-2", "--job_dir", JobDir()},
                        {}, Err(name));
  };
  int p_won = 0, q_won = 0;
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    fs::remove_all(JobDir());
    fs::remove_all(base_ / "out");
    fs::remove_all(base_ / "out2");
    Started p = start("p.yaml", "p");
    Started q = start("q.yaml", "q");
    int ep = WaitExit(p.pid), eq = WaitExit(q.pid);
    ASSERT_TRUE((ep == 0) != (eq == 0)) << "exit codes " << ep << " and " << eq << "\n" << Log("p") << Log("q");
    const std::string loser = ep == 0 ? Log("q") : Log("p");
    EXPECT_EQ(ep == 0 ? eq : ep, 1) << loser;
    EXPECT_TRUE(loser.find("already exists") != std::string::npos || loser.find("in use") != std::string::npos) << loser;
    if (ep == 0) {
      ++p_won;
      ExpectExactlyOnce("p");
      EXPECT_EQ(OutputFiles("out2"), 0u) << "the loser finalized nothing";
    } else {
      ++q_won;
      EXPECT_EQ(OutputFiles("out"), 0u);
      int rows = 0;
      for (const auto& e : fs::directory_iterator(base_ / "out2")) {
        std::ifstream in(e.path());
        for (std::string line; std::getline(in, line); ++rows) {
          ASSERT_NE(line.find("\"z\":"), std::string::npos) << "row computed by the other pipeline: " << line;
        }
      }
      EXPECT_EQ(rows, kFiles * kRecordsPerFile);
    }
  }
  std::printf("p won %d, q won %d of 20\n", p_won, q_won);
}

// The coordinator socket is private whatever the umask: 0600 in a 0700 folder of the job, and a
// process of another user cannot connect.
TEST_F(DfworkerRun, CoordinatorSocketIsPrivateUnderUmaskZero) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  Started launcher = StartProcess({"/bin/sh", "-c", "umask 000 && cd '" + base_.string() + "' && exec \"$@\"", "sh", DFW_DFWORKER,
                                   "run", "p.yaml", "--number_of_worker_harness_threads=1", "--machine_type=n1-standard-2",
                                   "--job_dir", JobDir()},
                                  {"DFW_TEST_BUNDLE_DELAY_MS=40"}, Err("run"));
  const std::string sock = JobDir() + "/ipc/coordinator.sock";
  ASSERT_TRUE(Eventually([&] { return fs::exists(sock); })) << Log("run");
  EXPECT_EQ(fs::status(JobDir() + "/ipc").permissions(), fs::perms::owner_all);
  EXPECT_EQ(fs::status(sock).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  if (::geteuid() == 0) {
    pid_t child = ::fork();
    if (child == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
      int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
      ::_exit(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? 0 : 1);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1) << "a process of uid 65534 connected to the coordinator (3: setuid failed)";
  } else {
    std::printf("not root: the other-user connection check is skipped\n");
  }
  ASSERT_EQ(WaitExit(launcher.pid), 0) << Log("run");
  ExpectExactlyOnce("run");
}

TEST_F(DfworkerRun, AnUnwritableOutputFolderFailsBeforeAnyWorkIsDone) {
  std::ofstream(base_ / "p.yaml", std::ios::trunc) << "pipeline:\n"
                                                      "  type: chain\n"
                                                      "  source: {type: ReadFromJson, config: {path: in/*.jsonl}}\n"
                                                      "  sink: {type: WriteToJson, config: {path: /proc/dfw-no/rows}}\n";
  EXPECT_EQ(Run("run", 2), 1) << Log("run");
  EXPECT_NE(Log("run").find("/proc/dfw-no"), std::string::npos) << Log("run");
  EXPECT_FALSE(fs::exists(JobDir())) << "no job dir, no SDK process: nothing ran";
}

// One 1 MB input file and 8 SDK processes: the job-sized plan cuts it into bundles for all of them,
// and every process commits work (each bundle is slowed so a process that starts last still finds
// some left). Exactly once across the cuts.
TEST_F(DfworkerRun, OneMegabyteFileReachesEveryOneOfEightSdkProcesses) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  fs::remove_all(base_ / "in");
  fs::create_directories(base_ / "in");
  int rows = 0;
  {
    std::ofstream in(base_ / "in" / "one.jsonl");
    for (std::size_t size = 0; size < (1u << 20); ++rows) {
      std::string line = "{\"id\": " + std::to_string(rows) + ", \"x\": " + std::to_string(rows % 7) + ", \"pad\": \"" +
                         std::string(40, 'p') + "\"}\n";
      in << line;
      size += line.size();
    }
  }
  ASSERT_EQ(Run("run", 8, {}, {"DFW_TEST_BUNDLE_DELAY_MS=500"}), 0) << Log("run");
  const std::string log = Log("run");
  EXPECT_NE(log.find("SDK processes: 8 (records per process: min "), std::string::npos) << log;
  EXPECT_EQ(log.find("min 0,"), std::string::npos) << "an SDK process got no work\n" << log;
  std::set<std::string> ids;
  int lines = 0;
  for (const std::string& line : OutputLines()) {
    ++lines;
    ids.insert(line.substr(0, line.find(',')));
  }
  EXPECT_EQ(lines, rows);
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(rows)) << "every record exactly once";
}

// A launcher killed at its very first rename (job.json in place of its temporary name) has
// committed nothing and recorded no job: --resume starts it afresh in the same dir, and so does a
// plain run on that --job_dir. Either way every record once.
class DfworkerFirstRenameKill : public DfworkerRun, public ::testing::WithParamInterface<bool> {};

TEST_P(DfworkerFirstRenameKill, LeavesADirThatResumeOrAFreshRunFinishes) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  EXPECT_EQ(Run("first", 2, {}, {"DFW_TEST_KILL_AT=rename:job.json"}), 128 + SIGKILL) << Log("first");
  EXPECT_TRUE(Eventually([&] { return JobProcesses() == 0; }, 30));
  ASSERT_TRUE(fs::is_directory(JobDir()));
  ASSERT_FALSE(fs::exists(JobDir() + "/job.json"));
  const bool resume = GetParam();
  ASSERT_EQ(Run("second", 2, resume ? std::vector<std::string>{"--resume", JobDir()} : std::vector<std::string>{}), 0)
      << Log("second");
  if (resume) {
    EXPECT_NE(Log("second").find("starting the job afresh in it"), std::string::npos) << Log("second");
  }
  ExpectExactlyOnce("second");
}

INSTANTIATE_TEST_SUITE_P(ResumeOrRun, DfworkerFirstRenameKill, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Resume" : "FreshRun"; });

// Under umask 000 nothing of the job is open to other users while it runs (sampled mid-run, at a
// bundle gate), outputs end 0644 in a 0755 folder, and another uid can change none of it.
TEST_F(DfworkerRun, UnderUmaskZeroNothingIsWritableByOthersAndOutputsHaveTheirDocumentedModes) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  Started launcher = StartProcess({"/bin/sh", "-c", "umask 000 && cd '" + base_.string() + "' && exec \"$@\"", "sh", DFW_DFWORKER,
                                   "run", "p.yaml", "--number_of_worker_harness_threads=1", "--machine_type=n1-standard-2",
                                   "--job_dir", JobDir()},
                                  {"DFW_TEST_BUNDLE_GATE=10:" + Gate()}, Err("run"));
  ASSERT_TRUE(Eventually([&] { return Commits() >= 5; })) << Log("run");
  auto open_to_others = [](const fs::path& root) {
    std::vector<std::string> found;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      struct stat st {};
      if (::lstat(it->path().c_str(), &st) == 0 && !S_ISLNK(st.st_mode) && (st.st_mode & 0022) != 0) {
        found.push_back(it->path().string());
      }
    }
    return found;
  };
  EXPECT_EQ(open_to_others(JobDir()), std::vector<std::string>{}) << "mid-run";
  OpenGate();
  ASSERT_EQ(WaitExit(launcher.pid), 0) << Log("run");
  ExpectExactlyOnce("run");
  EXPECT_EQ(open_to_others(JobDir()), std::vector<std::string>{}) << "at the end";
  EXPECT_EQ(open_to_others(base_ / "out"), std::vector<std::string>{});
  EXPECT_EQ(fs::status(base_ / "out").permissions(), static_cast<fs::perms>(0755));
  const std::string shard = (base_ / "out" / "rows-00000-of-00040.jsonl").string();
  EXPECT_EQ(fs::status(shard).permissions(), static_cast<fs::perms>(0644));
  if (::geteuid() != 0) {
    std::printf("not root: the other-user write check is skipped\n");
    return;
  }
  pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    if (::open(shard.c_str(), O_WRONLY | O_APPEND) >= 0) ::_exit(4);
    if (::open((base_ / "out" / "planted").c_str(), O_WRONLY | O_CREAT, 0666) >= 0) ::_exit(5);
    if (::open((JobDir() + "/manifest.jsonl").c_str(), O_RDONLY) >= 0) ::_exit(6);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "uid 65534 could: 4 write a shard, 5 add a file to the output folder, 6 read the "
                                       "job's manifest (3: setuid failed)";
}

// A job dir is the running user's own real folder: one made by another user, or a symlink another
// user planted at its path, is refused (exit 2, naming the owner) before anything is written.
TEST_F(DfworkerRun, AJobDirOfAnotherUserOrASymlinkInItsPlaceIsRefused) {
  const fs::path target = base_ / "elsewhere";
  fs::create_directories(target);
  fs::create_directory_symlink(target, JobDir());
  EXPECT_EQ(Run("link", 2), 2) << Log("link");
  EXPECT_NE(Log("link").find("is a symbolic link"), std::string::npos) << Log("link");
  EXPECT_TRUE(fs::is_empty(target));
  fs::remove(JobDir());
  if (::geteuid() != 0) {
    std::printf("not root: the other-owner check is skipped\n");
    return;
  }
  fs::create_directories(JobDir());
  ASSERT_EQ(::chmod(JobDir().c_str(), 0777), 0);
  ASSERT_EQ(::chown(JobDir().c_str(), 65534, 65534), 0);
  EXPECT_EQ(Run("theirs", 2), 2) << Log("theirs");
  EXPECT_NE(Log("theirs").find("belongs to"), std::string::npos) << Log("theirs");
  EXPECT_NE(Log("theirs").find("uid 65534"), std::string::npos) << Log("theirs");
  EXPECT_TRUE(fs::is_empty(JobDir()));
  EXPECT_EQ(Run("resume", 2, {"--resume", JobDir()}), 2) << Log("resume");
  EXPECT_TRUE(fs::is_empty(JobDir())) << "nothing was written into their folder";
}

// `bench --report` to a folder that does not exist fails at once, before any point runs.
TEST_F(DfworkerRun, BenchWithAReportItCannotWriteFailsBeforeTheSweep) {
  Started bench = StartProcess({"/bin/sh", "-c", "cd '" + base_.string() + "' && exec \"$@\"", "sh", DFW_DFWORKER, "bench",
                                "p.yaml", "--sweep", "sdk_processes=1", "--report", "/proc/dfw-no/report.html"},
                               {}, Err("bench"));
  EXPECT_EQ(WaitExit(bench.pid), 2) << Log("bench");
  EXPECT_NE(Log("bench").find("/proc/dfw-no"), std::string::npos) << Log("bench");
  EXPECT_EQ(Log("bench").find("[bench] 1/1"), std::string::npos) << "no point ran\n" << Log("bench");
}

}  // namespace
}  // namespace dfw
