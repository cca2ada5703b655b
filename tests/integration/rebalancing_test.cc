// Dynamic work rebalancing through the product: `dfworker run` with one bundle for several SDK
// processes (a test hook fixes the bundle size, another slows the source so there is unread
// input to split). Real processes, real SIGKILLs at each step of the split protocol, then
// --resume: every record exactly once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "process_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using namespace dfw::testing;

class Rebalancing : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path();
    fs::create_directories(base_ / "in");
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

  // One file of `rows` records (about 60 bytes each).
  void WriteInput(const std::string& file, int first_id, int rows) {
    std::ofstream in(base_ / "in" / file);
    for (int i = 0; i < rows; ++i) {
      int id = first_id + i;
      in << "{\"id\": " << id << ", \"x\": " << id % 11 << ", \"pad\": \"" << std::string(20, 'p') << "\"}\n";
    }
    total_ += rows;
  }

  std::string JobDir() const { return (base_ / "job").string(); }
  std::string Err(const std::string& name) const { return (base_ / (name + ".err")).string(); }
  std::string Log(const std::string& name) const { return ReadFile(Err(name)); }

  int Run(const std::string& name, int processes, std::vector<std::string> extra = {}, std::vector<std::string> env = {}) {
    return WaitExit(Start(name, processes, std::move(extra), std::move(env)));
  }

  pid_t Start(const std::string& name, int processes, std::vector<std::string> extra = {},
              std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {"/bin/sh", "-c", "cd '" + base_.string() + "' && exec \"$@\"", "sh", DFW_DFWORKER,
                                     "run", "p.yaml", "--number_of_worker_harness_threads=1",
                                     "--machine_type=n1-standard-" + std::to_string(processes)};
    if (std::find(extra.begin(), extra.end(), "--resume") == extra.end()) argv.insert(argv.end(), {"--job_dir", JobDir()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return StartProcess(argv, env, Err(name)).pid;
  }

  // Every id exactly once with its computed field; returns the number of output shards.
  int ExpectExactlyOnce(const std::string& log_name) {
    static const std::regex kRow(R"re(^\{"id":(\d+),"y":(\d+)\}$)re");
    int shards = 0;
    const std::vector<std::string> lines = LinesOfFilesIn(base_ / "out", &shards);
    dfw::testing::ExpectExactlyOnce(lines, kRow, static_cast<std::size_t>(total_), Log(log_name), [](const std::smatch& m) {
      const int id = std::stoi(m[1]);
      EXPECT_EQ(std::stoi(m[2]), 2 * (id % 11) + id) << m[0];
    });
    return shards;
  }

  int SplitLines() const {
    std::ifstream in(JobDir() + "/manifest.jsonl");
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find("\"split\":") != std::string::npos;
    return n;
  }

  // One bundle per file, and a source slow enough that a bundle is still being read when the
  // other processes ask for work.
  // (12 source batches at 100 ms: the bundle is still being read when the processes that start
  // later, on a loaded machine, ask for work.)
  static std::vector<std::string> OneSlowBundle(std::vector<std::string> more = {}, int delay_ms = 100) {
    std::vector<std::string> env = {"DFW_TEST_BUNDLE_BYTES=1000000000",
                                    "DFW_TEST_SOURCE_BATCH_DELAY_MS=" + std::to_string(delay_ms)};
    env.insert(env.end(), more.begin(), more.end());
    return env;
  }

  dfw::testing::TempDir tmp_;
  fs::path base_;
  int total_ = 0;
};

TEST_F(Rebalancing, OneBundleIsSharedByAllEightSdkProcesses) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  WriteInput("one.jsonl", 0, 30000);  // ~1.5 MB, 30 source batches
  // Every reader waits before its first batch until the gate opens, so the processes that start
  // last (on a loaded machine, seconds later) still find unread input, and no process ends its
  // share (and takes a second) before the last one has its own; the test opens the gate once the
  // manifest holds the 7 splits that give each of the 8 processes a share.
  const std::string gate = (base_ / "gate").string();
  pid_t run = Start("run", 8, {}, {"DFW_TEST_BUNDLE_BYTES=1000000000", "DFW_TEST_SOURCE_GATE_FILE=" + gate});
  EXPECT_TRUE(Eventually([&] { return SplitLines() >= 7; }, 90)) << "splits seen: " << SplitLines() << "\n" << Log("run");
  std::ofstream{gate};
  ASSERT_EQ(WaitExit(run), 0) << Log("run");
  const std::string log = Log("run");
  EXPECT_NE(log.find("(1 bundles"), std::string::npos) << log;
  EXPECT_EQ(log.find("min 0,"), std::string::npos) << "an SDK process got no work\n" << log;
  EXPECT_NE(log.find("work rebalancing:"), std::string::npos) << log;
  int shards = ExpectExactlyOnce("run");
  EXPECT_GE(SplitLines(), 7);
  EXPECT_EQ(shards, 1 + SplitLines()) << "one shard per bundle, residuals included";
  const std::string metrics = ReadFile(JobDir() + "/metrics.json");
  EXPECT_NE(metrics.find("\"splits_taken\""), std::string::npos);
  EXPECT_EQ(metrics.find("\"splits\": 0"), std::string::npos) << metrics;
}

// SIGKILL at each step of the protocol, then --resume finishes with every record exactly once.
class RebalancingKill : public Rebalancing, public ::testing::WithParamInterface<const char*> {};

TEST_P(RebalancingKill, ResumeAfterAKillAtThisStepIsExactlyOnce) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  WriteInput("one.jsonl", 0, 12000);
  const std::string point = GetParam();
  const bool launcher_dies = point.rfind("launcher-", 0) == 0;
  int first = Run("first", 4, {},
                  OneSlowBundle({"DFW_TEST_KILL_AT=" + point, "DFW_TEST_KILL_ONCE_FILE=" + (base_ / "killed").string()}));
  if (launcher_dies) {
    ASSERT_EQ(first, 128 + SIGKILL) << Log("first");
    ASSERT_EQ(Run("resume", 4, {"--resume", JobDir()}, OneSlowBundle()), 0) << Log("resume");
  } else {
    // The SDK process that answered a split dies; the launcher retries both halves itself.
    ASSERT_EQ(first, 0) << Log("first");
    EXPECT_NE(Log("first").find("starting a new one"), std::string::npos) << Log("first");
  }
  ExpectExactlyOnce(launcher_dies ? "resume" : "first");
  EXPECT_GE(SplitLines(), 1);
}

INSTANTIATE_TEST_SUITE_P(Steps, RebalancingKill,
                         ::testing::Values("sdk-split-answered",       // holder dies right after its answer
                                           "launcher-split-recorded",  // split durable, not yet applied
                                           "launcher-commit-1",        // between the two halves' commits
                                           "launcher-commit-3"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST_F(Rebalancing, ThousandsOfTinyAndEmptyFilesLoseNothing) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  for (int f = 0; f < 250; ++f) {
    std::string name = "part-" + std::to_string(10000 + f) + ".jsonl";
    if (f % 25 == 7) {
      std::ofstream(base_ / "in" / name);  // empty
    } else {
      WriteInput(name, f * 3, 3);
    }
  }
  ASSERT_EQ(Run("run", 4), 0) << Log("run");
  ExpectExactlyOnce("run");
}

}  // namespace
}  // namespace dfw
