// Join through the product: `dfworker run` with 4 SDK processes runs the read stage (both inputs'
// partial sinks) and the join stage as two jobs; real SIGKILLs of the launcher in either stage,
// then --resume: every joined row exactly once.
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

constexpr int kJoinUsers = 3000;   // uid 0 .. 2999; orders name uids 0 .. 3199
constexpr int kJoinOrders = 12000;

class JoinRun : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = tmp_.path();
    fs::create_directories(base_ / "users");
    fs::create_directories(base_ / "orders");
    std::ofstream(base_ / "p.yaml") << "pipeline:\n"
                                       "  transforms:\n"
                                       "    - {type: ReadFromJson, name: Users, config: {path: users/*.jsonl}}\n"
                                       "    - {type: ReadFromJson, name: Orders, config: {path: orders/*.jsonl}}\n"
                                       "    - type: Join\n"
                                       "      name: J\n"
                                       "      input: {u: Users, o: Orders}\n"
                                       "      config:\n"
                                       "        type: outer\n"
                                       "        equalities: [{u: uid, o: uid}]\n"
                                       "        fields: {u: {user: uid}, o: [oid]}\n"
                                       "    - type: WriteToJson\n"
                                       "      input: J\n"
                                       "      config: {path: out/joined, file_name_suffix: .jsonl}\n";
    for (int f = 0; f < 2; ++f) {
      std::ofstream in(base_ / "users" / ("part-" + std::to_string(f) + ".jsonl"));
      for (int uid = f; uid < kJoinUsers; uid += 2) in << "{\"uid\": " << uid << ", \"name\": \"user-" << uid << "\"}\n";
    }
    for (int f = 0; f < 4; ++f) {
      std::ofstream in(base_ / "orders" / ("part-" + std::to_string(f) + ".jsonl"));
      for (int i = 0; i < kJoinOrders / 4; ++i) {
        int oid = f * (kJoinOrders / 4) + i;
        int uid = (oid * 7) % 3200;  // 3000 .. 3199 have no user
        in << "{\"oid\": " << oid << ", \"uid\": " << uid << ", \"pad\": \"" << std::string(oid % 29, 'p') << "\"}\n";
        ++orders_of_[uid];
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
    env.push_back("DFW_TEST_BUNDLE_BYTES=16384");
    return WaitExit(StartProcess(argv, env, Err(name)).pid);
  }

  // Each order once with its user (or null), each user without orders once with a null order.
  void ExpectEveryRowOnce(const std::string& log_name) {
    static const std::regex kRow(R"re(^\{"user":(null|\d+),"oid":(null|\d+)\}$)re");
    std::map<int, int> orders_seen;    // oid -> times
    std::map<int, int> lonely_users;   // uid -> times written with a null order
    std::map<int, int> user_of_order;  // oid -> uid written beside it (-1 = null)
    ASSERT_TRUE(fs::exists(base_ / "out")) << Log(log_name);
    for (const auto& e : fs::directory_iterator(base_ / "out")) {
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) {
        std::smatch m;
        ASSERT_TRUE(std::regex_match(line, m, kRow)) << "unexpected output line: " << line;
        if (m[2] == "null") {
          ASSERT_NE(m[1], "null") << line;
          ++lonely_users[std::stoi(m[1])];
          continue;
        }
        const int oid = std::stoi(m[2]);
        ++orders_seen[oid];
        user_of_order[oid] = m[1] == "null" ? -1 : std::stoi(m[1]);
      }
    }
    EXPECT_EQ(orders_seen.size(), static_cast<std::size_t>(kJoinOrders)) << Log(log_name);
    for (const auto& [oid, times] : orders_seen) {
      EXPECT_EQ(times, 1) << "order " << oid << " written " << times << " times";
      const int uid = (oid * 7) % 3200;
      EXPECT_EQ(user_of_order[oid], uid < kJoinUsers ? uid : -1) << "order " << oid;
    }
    int lonely = 0;
    for (int uid = 0; uid < kJoinUsers; ++uid) lonely += orders_of_.count(uid) == 0 ? 1 : 0;
    EXPECT_EQ(lonely_users.size(), static_cast<std::size_t>(lonely));
    for (const auto& [uid, times] : lonely_users) {
      EXPECT_EQ(times, 1) << "user " << uid;
      EXPECT_EQ(orders_of_.count(uid), 0u) << "user " << uid << " has orders but was written alone";
    }
  }

  dfw::testing::TempDir tmp_;
  fs::path base_;
  std::map<int, int> orders_of_;  // uid -> orders
};

TEST_F(JoinRun, FourSdkProcessesShareBothStages) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  ASSERT_EQ(Run("run", {"--job_dir", JobDir()}), 0) << Log("run");
  EXPECT_NE(Log("run").find("2 fused stages"), std::string::npos) << Log("run");
  EXPECT_TRUE(fs::exists(JobDir() + "/stage-0/committed/J/u/shuffle.index"));
  EXPECT_TRUE(fs::exists(JobDir() + "/stage-0/committed/J/o/shuffle.index"));
  ExpectEveryRowOnce("run");
}

class JoinKill : public JoinRun, public ::testing::WithParamInterface<const char*> {};

TEST_P(JoinKill, ResumeAfterAKillIsExactlyOnce) {
  DFW_SKIP_WITHOUT_TEST_HOOKS();
  const std::string point = GetParam();
  int first = Run("first", {"--job_dir", JobDir()}, {"DFW_TEST_KILL_AT=" + point, "DFW_TEST_KILL_ONCE_FILE=" + (base_ / "killed").string()});
  ASSERT_EQ(first, 128 + SIGKILL) << Log("first");
  ASSERT_TRUE(fs::exists(base_ / "killed"));
  ASSERT_EQ(Run("resume", {"--resume", JobDir()}), 0) << Log("resume");
  ExpectEveryRowOnce("resume");
}

INSTANTIATE_TEST_SUITE_P(Points, JoinKill,
                         ::testing::Values("launcher-stage0-commit-5",   // mid read stage
                                           "stage0-before-finished",     // shuffles committed, stage not marked done
                                           "launcher-stage1-commit-2"),  // mid join stage
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace dfw
