// Combine through the product: `dfworker run` with 4 SDK processes runs the read stage and the
// reduce stage as two jobs; real SIGKILLs of the launcher in either stage (and between a stage's
// finalize and its FINISHED mark), then --resume: every key once, with the exact figures.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
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

constexpr int kKeys = 37;

class CombineRun : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path();
    fs::create_directories(base_ / "in");
    std::ofstream(base_ / "p.yaml") << "pipeline:\n"
                                       "  type: chain\n"
                                       "  source: {type: ReadFromJson, config: {path: in/*.jsonl}}\n"
                                       "  transforms:\n"
                                       "    - type: Combine\n"
                                       "      name: PerKey\n"
                                       "      config:\n"
                                       "        language: python\n"
                                       "        group_by: key\n"
                                       "        combine:\n"
                                       "          total: {value: v, fn: sum}\n"
                                       "          n: {value: v, fn: count}\n"
                                       "          biggest: {value: id, fn: max}\n"
                                       "    - type: MapToFields\n"
                                       "      config: {language: python, fields: {key: key, total: total, n: n, "
                                       "biggest: biggest, twice: total * 2}}\n"
                                       "  sink: {type: WriteToJson, config: {path: out/agg, file_name_suffix: .jsonl}}\n";
    for (int f = 0; f < 4; ++f) {
      std::ofstream in(base_ / "in" / ("part-" + std::to_string(f) + ".jsonl"));
      for (int i = 0; i < 5000; ++i) {
        int id = f * 5000 + i;
        int key = (id * 31) % kKeys, v = id % 101;
        in << "{\"id\": " << id << ", \"key\": " << key << ", \"v\": " << v << "}\n";
        auto& e = expected_[key];
        e.total += v;
        ++e.n;
        e.biggest = std::max(e.biggest, id);
      }
    }
  }
  void TearDown() override {
    if (HasFailure()) tmp_.Keep();
  }

  std::string JobDir() const { return (base_ / "job").string(); }
  std::string Err(const std::string& name) const { return (base_ / (name + ".err")).string(); }
  std::string Log(const std::string& name) const { return ReadFile(Err(name)); }

  int Run(const std::string& name, std::vector<std::string> extra, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {"/bin/sh", "-c", "cd '" + base_.string() + "' && exec \"$@\"", "sh", DFW_DFWORKER,
                                     "run", "p.yaml", "--number_of_worker_harness_threads=1",
                                     "--machine_type=n1-standard-4"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    env.push_back("DFW_TEST_BUNDLE_BYTES=16384");  // ~24 bundles in the read stage
    return WaitExit(StartProcess(argv, env, Err(name)).pid);
  }

  // Every key exactly once with its exact figures.
  void ExpectEveryKeyOnce(const std::string& log_name) {
    static const std::regex kRow(R"re(^\{"key":(\d+),"total":(\d+),"n":(\d+),"biggest":(\d+),"twice":(\d+)\}$)re");
    std::map<int, int> seen;
    ASSERT_TRUE(fs::exists(base_ / "out")) << Log(log_name);
    for (const auto& e : fs::directory_iterator(base_ / "out")) {
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) {
        std::smatch m;
        ASSERT_TRUE(std::regex_match(line, m, kRow)) << "unexpected output line: " << line;
        int key = std::stoi(m[1]);
        ASSERT_TRUE(expected_.count(key)) << line;
        const Figures& want = expected_[key];
        EXPECT_EQ(std::stoll(m[2]), want.total) << line;
        EXPECT_EQ(std::stoll(m[3]), want.n) << line;
        EXPECT_EQ(std::stoi(m[4]), want.biggest) << line;
        EXPECT_EQ(std::stoll(m[5]), 2 * want.total) << line;
        ++seen[key];
      }
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kKeys)) << Log(log_name);
    for (const auto& [key, count] : seen) EXPECT_EQ(count, 1) << "key " << key << " written " << count << " times";
  }

  struct Figures {
    int64_t total = 0, n = 0;
    int biggest = -1;
  };
  dfw::testing::TempDir tmp_;
  fs::path base_;
  std::map<int, Figures> expected_;
};

TEST_F(CombineRun, FourSdkProcessesShareBothStages) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  ASSERT_EQ(Run("run", {"--job_dir", JobDir()}), 0) << Log("run");
  const std::string log = Log("run");
  EXPECT_NE(log.find("2 fused stages"), std::string::npos) << log;
  EXPECT_NE(log.find("256 partitions"), std::string::npos) << log;
  EXPECT_TRUE(fs::exists(JobDir() + "/stage-0/FINISHED"));
  EXPECT_TRUE(fs::exists(JobDir() + "/stage-1/FINISHED"));
  EXPECT_TRUE(fs::exists(JobDir() + "/stage-0/committed/PerKey/shuffle.index"));
  ExpectEveryKeyOnce("run");
  // --resume of a finished job does nothing and succeeds.
  ASSERT_EQ(Run("again", {"--resume", JobDir()}), 0) << Log("again");
  ExpectEveryKeyOnce("again");
  // The root's lock is a launcher's: while another holds it, a resume stops at once, and a fresh
  // run into the same root is refused as for any job dir that is not empty.
  const int held = ::open((JobDir() + "/lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0) << "a staged job's root has its lock file";
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  EXPECT_EQ(Run("busy", {"--resume", JobDir()}), 1) << Log("busy");
  EXPECT_NE(Log("busy").find("is in use by another dfworker launcher"), std::string::npos) << Log("busy");
  EXPECT_EQ(Run("fresh", {"--job_dir", JobDir()}), 1) << Log("fresh");
  EXPECT_NE(Log("fresh").find("already exists and is not empty"), std::string::npos) << Log("fresh");
  ::close(held);
}

// SIGKILL of the launcher at a point of either stage, then --resume.
class CombineKill : public CombineRun, public ::testing::WithParamInterface<const char*> {};

TEST_P(CombineKill, ResumeAfterAKillIsExactlyOnce) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  const std::string point = GetParam();
  int first = Run("first", {"--job_dir", JobDir()},
                  {"DFW_TEST_KILL_AT=" + point, "DFW_TEST_KILL_ONCE_FILE=" + (base_ / "killed").string()});
  ASSERT_EQ(first, 128 + SIGKILL) << Log("first");
  ASSERT_TRUE(fs::exists(base_ / "killed"));
  ASSERT_EQ(Run("resume", {"--resume", JobDir()}), 0) << Log("resume");
  const std::string resumed = Log("resume");
  if (point.find("stage1") != std::string::npos) {
    // The read stage had finished: the resume skips it and redoes only the reduce stage's rest.
    EXPECT_NE(resumed.find("already finished"), std::string::npos) << resumed;
  }
  ExpectEveryKeyOnce("resume");
}

INSTANTIATE_TEST_SUITE_P(Points, CombineKill,
                         ::testing::Values("launcher-stage0-commit-5",     // mid read stage
                                           "stage0-before-finished",       // shuffle committed, stage not marked done
                                           "launcher-stage1-commit-3"),    // mid shuffle (reduce stage)
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace dfw
