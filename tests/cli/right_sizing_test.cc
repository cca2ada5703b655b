// `dfworker plan`, `report` and `bench` through the real binary: exit codes, outputs, and that a
// sweep names the bottleneck of a pipeline made slow on purpose.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_test_util.h"
#include "report/html_check.h"
#include "test_util.h"

namespace dfw {

using dfw::testing::ReadFile;
namespace {

namespace fs = std::filesystem;
using testing::RunDfworker;

TEST(RightSizing, PlanListsConfigurationsAsJsonAndRefusesBadRequests) {
  auto ok = RunDfworker({"plan", "pipelines/default.yaml", "--gpu", "nvidia-l4,nvidia-h200-141gb", "--format=json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  auto j = nlohmann::json::parse(ok.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << ok.out;
  bool g2 = false, mig = false;
  for (const auto& r : j["rows"]) {
    g2 |= r["machine_type"] == "g2-standard-8" && r["verdict"] == "fits";
    mig |= r.contains("mig") && r["mig"]["profile"] == "3g.71gb";
  }
  EXPECT_TRUE(g2 && mig) << ok.out;

  auto text = RunDfworker({"plan", "pipelines/default.yaml", "--machine_type=g2-standard-8",
                           "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;use_nvidia_mps"});
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find(">*nvidia-l4"), std::string::npos) << text.out;

  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"plan", "pipelines/default.yaml", "--gpu", "nvidia-l5"},
        std::vector<std::string>{"plan", "pipelines/default.yaml", "--mig_instances", "0"},
        std::vector<std::string>{"plan", "pipelines/no-such.yaml"},
        std::vector<std::string>{"plan", "pipelines/default.yaml", "--machine_type=n2-standard-4"}}) {
    auto r = RunDfworker(bad);
    EXPECT_EQ(r.exit_code, 2) << bad.back() << "\n" << r.out;
    EXPECT_NE(r.out.find("dfworker plan: error:"), std::string::npos) << r.out;
  }
}

TEST(RightSizing, PlanRowsCarrySpeedCostAndTheJobInJson) {
  auto o = RunDfworker({"plan", "pipelines/default.yaml", "--gpu", "nvidia-l4", "--records", "1000000000", "--format=json",
                        "--num_workers=4"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  auto j = nlohmann::json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out;
  EXPECT_EQ(j["estimate_inputs"]["records"], 1000000000);
  EXPECT_EQ(j["estimate_inputs"]["workers"], 4);
  EXPECT_EQ(j["estimate_inputs"]["region"], "us-central1");
  const int cheapest = j["cheapest_row"].get<int>();
  ASSERT_GE(cheapest, 0) << o.out;
  const auto& e = j["rows"][cheapest]["estimate"];
  for (const char* key : {"price_per_hour", "records_per_second", "bottleneck", "cost_per_million_records",
                          "cost_per_thousand_records", "job_hours", "job_cost", "inputs", "price_how"}) {
    EXPECT_TRUE(e.contains(key)) << key << "\n" << e.dump();
  }
  // job cost = workers x price per hour x job hours
  EXPECT_NEAR(e["job_cost"].get<double>(), 4 * e["price_per_hour"].get<double>() * e["job_hours"].get<double>(), 1e-9);
  EXPECT_TRUE(e["price_verified"].get<bool>());  // the shipped L4 and worker rates have their source

  auto text = RunDfworker({"plan", "pipelines/default.yaml", "--gpu", "nvidia-l4", "--records", "1000"});
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("cheapest: g2-standard-"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("    input: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("    price: "), std::string::npos) << text.out;
}

TEST(RightSizing, PlanObjectiveDecidesWhatLeads) {
  const std::string p = "pipelines/default.yaml";
  auto cost = RunDfworker({"plan", p, "--gpu", "nvidia-l4", "--format=json"});
  auto time = RunDfworker({"plan", p, "--gpu", "nvidia-l4", "--objective", "time", "--format=json"});
  ASSERT_EQ(cost.exit_code, 0) << cost.out;
  ASSERT_EQ(time.exit_code, 0) << time.out;
  auto c = nlohmann::json::parse(cost.out, nullptr, false), t = nlohmann::json::parse(time.out, nullptr, false);
  EXPECT_EQ(c["objective"], "cost");
  EXPECT_EQ(c["recommended_row"], c["cheapest_row"]);
  EXPECT_EQ(t["objective"], "time");
  EXPECT_EQ(t["recommended_row"], t["fastest_row"]);
  EXPECT_NE(c["cheapest_row"], c["fastest_row"]);  // the demo model: g2-standard-32 is cheapest, g2-standard-96 fastest
  auto text = RunDfworker({"plan", p, "--gpu", "nvidia-l4", "--objective", "time"});
  EXPECT_EQ(text.out.find("fastest: "), text.out.find("\n") + 1) << text.out;  // the line after the heading
  auto fit = RunDfworker({"plan", p, "--gpu", "nvidia-l4", "--objective", "fit"});
  ASSERT_EQ(fit.exit_code, 0) << fit.out;
  EXPECT_EQ(fit.out.find("estimates"), std::string::npos) << fit.out;
  EXPECT_EQ(fit.out.rfind("plan across the catalog", 0), 0u) << fit.out;
  EXPECT_EQ(RunDfworker({"plan", p, "--objective", "cheap"}).exit_code, 2);
}

TEST(RightSizing, PlanRefusesBadEstimateInputsExitTwo) {
  const testing::TempDir tmp;
  const fs::path dir = tmp.path();
  fs::create_directories(dir);
  std::ofstream(dir / "bad.yaml") << "prices:\n  - region: r\n    source: s\n    read: \"2026-01-01\"\n"
                                     "    batch: {vcpu_hour: -1, memory_gb_hour: 0.003}\n";
  std::ofstream(dir / "good.yaml") << "prices:\n  - region: mine\n    source: negotiated\n    read: \"2026-01-01\"\n"
                                      "    batch: {vcpu_hour: 0.04, memory_gb_hour: 0.003}\n    gpu_hour: {nvidia-l4: 0.4}\n";
  struct Bad {
    std::vector<std::string> args;
    std::string says;
  };
  const std::string p = "pipelines/default.yaml";
  for (const Bad& b : {
           Bad{{"plan", p, "--records", "0"}, "--records '0': expected a whole number of records above 0"},
           Bad{{"plan", p, "--records", "-5"}, "--records '-5'"},
           Bad{{"plan", p, "--records", "many"}, "--records 'many'"},
           Bad{{"plan", p, "--cpu_rate", "0"}, "--cpu_rate '0'"},
           Bad{{"plan", p, "--gpu_efficiency", "1.5"}, "--gpu_efficiency '1.5'"},
           Bad{{"plan", p, "--price_region", "us-centrall"}, "region 'us-centrall' is not in the price table"},
           Bad{{"plan", p, "--prices", (dir / "bad.yaml").string()}, "bad.yaml:5:24: region 'r': 'batch.vcpu_hour' must be a positive rate"},
           Bad{{"plan", p, "--prices", (dir / "missing.yaml").string()}, "missing.yaml' cannot be read"},
           Bad{{"plan", p, "--prices", (dir / "good.yaml").string()}, "region 'us-central1' is not in the price table"},
           Bad{{"plan", p, "--num_workers=0"}, "--num_workers '0'"},
           Bad{{"plan", p, "--deadline", "2"}, "--deadline 2 h needs --records N"},
           Bad{{"plan", p, "--max_cost_per_million", "0.000001"},
               "no configuration that fits meets the constraints: the cheapest that fits, n1-standard-32 + 1 x nvidia-tesla-t4, costs USD 0.01145 per million records (limit 1e-06)"},
           Bad{{"plan", p, "--records", "100000000000", "--deadline", "1"},
               "the quickest that fits, "},
       }) {
    auto r = RunDfworker(b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args.back() << "\n" << r.out;
    EXPECT_NE(r.out.find(b.says), std::string::npos) << r.out;
  }
  // The pipeline's own --region without list prices: planned, without costs, saying why.
  auto other = RunDfworker({"plan", p, "--gpu", "nvidia-l4", "--region=europe-west4", "--format=json"});
  ASSERT_EQ(other.exit_code, 0) << other.out;
  EXPECT_NE(other.out.find("no list prices for the pipeline's region 'europe-west4'"), std::string::npos) << other.out;
  auto mine = RunDfworker({"plan", p, "--gpu", "nvidia-l4", "--prices", (dir / "good.yaml").string(), "--price_region", "mine"});
  ASSERT_EQ(mine.exit_code, 0) << mine.out;
  EXPECT_NE(mine.out.find("x 0.04 + "), std::string::npos) << mine.out;
  EXPECT_NE(mine.out.find("mine batch, negotiated"), std::string::npos) << mine.out;
}

TEST(RightSizing, RunWritesMetricsPromAndReportRendersTheJobDir) {
  const testing::RepoRootView root;  // the demo's out/ goes there, not into the source tree
  const fs::path dir = root / "job";
  auto run = RunDfworker({"run", "pipelines/default.yaml", "--job_dir=" + dir.string(), "--sdk_worker_parallelism=2",
                          "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;use_nvidia_mps"},
                         root.path());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string prom = ReadFile(dir / "metrics.prom");
  EXPECT_NE(prom.find("# TYPE num_inferences counter\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("num_inferences{job_id="), std::string::npos);
  EXPECT_NE(prom.find("inference_batch_latency_micro_secs_count{"), std::string::npos);
  EXPECT_NE(prom.find("dfworker_records{job_id="), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "gpu_memory.json"));

  const fs::path html = dir.string() + ".html";
  auto report = RunDfworker({"report", dir.string(), "--out", html.string()});
  ASSERT_EQ(report.exit_code, 0) << report.out;
  const std::string page = ReadFile(html);
  EXPECT_EQ(report::testing::CheckWellFormed(page), "");
  for (const char* id : {"chart-processes", "chart-stage-time", "chart-batch-size", "chart-latency", "chart-bundles",
                         "chart-errors", "chart-gpu-memory"}) {
    EXPECT_NE(page.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
  }

  // The CPU rate measured by this run feeds the plan's estimate (records per CPU-second outside RunInference).
  auto measured = RunDfworker({"plan", "pipelines/default.yaml", "--gpu", "nvidia-l4", "--cpu_rate_from", dir.string(),
                               "--format=json"});
  ASSERT_EQ(measured.exit_code, 0) << measured.out;
  auto mj = nlohmann::json::parse(measured.out, nullptr, false);
  ASSERT_FALSE(mj.is_discarded()) << measured.out;
  EXPECT_TRUE(mj["estimate_inputs"]["cpu_rate_given"].get<bool>());
  EXPECT_GT(mj["estimate_inputs"]["cpu_records_per_vcpu_second"].get<double>(), 0);
  EXPECT_NE(measured.out.find("measured: "), std::string::npos) << measured.out;
  EXPECT_NE(measured.out.find("CPU-s in "), std::string::npos) << measured.out;
  auto both = RunDfworker({"plan", "pipelines/default.yaml", "--cpu_rate", "10", "--cpu_rate_from", dir.string()});
  EXPECT_EQ(both.exit_code, 2) << both.out;

  std::ofstream(dir / "metrics.json", std::ios::trunc) << "{\"job_id\":";
  auto corrupt_rate = RunDfworker({"plan", "pipelines/default.yaml", "--cpu_rate_from", dir.string()});
  EXPECT_EQ(corrupt_rate.exit_code, 2) << corrupt_rate.out;
  EXPECT_NE(corrupt_rate.out.find("--cpu_rate_from: " + dir.string() + "/metrics.json"), std::string::npos)
      << corrupt_rate.out;
  auto corrupt = RunDfworker({"report", dir.string(), "--out", html.string()});
  EXPECT_EQ(corrupt.exit_code, 2) << corrupt.out;
  EXPECT_NE(corrupt.out.find("metrics.json: not valid JSON"), std::string::npos) << corrupt.out;
  auto not_job = RunDfworker({"report", DFW_SOURCE_DIR "/pipelines"});
  EXPECT_EQ(not_job.exit_code, 2);
  EXPECT_NE(not_job.out.find("is not a job dir"), std::string::npos) << not_job.out;
}

TEST(RightSizing, BenchRefusesBadSweepsWithExitTwo) {
  struct Bad {
    std::vector<std::string> args;
    const char* expected;
  };
  for (const Bad& b : {Bad{{"--sweep", "batch=8"}, "unknown key 'batch'"},
                       Bad{{"--sweep", "batch_size="}, "the list of values is empty"},
                       Bad{{"--sweep", "batch_size=8,,64"}, "an empty value"},
                       Bad{{"--sweep", "sdk_processes=1,2,3,4,5,6,7,8", "--sweep", "batch_size=1,2,3,4,5,6,7,8,9"},
                           "the grid has 72 points"},
                       Bad{{"--sweep", "batch_size=8", "--records", "0"}, "--records 0: must be 1 or more"},
                       Bad{{"--sweep", "batch_size=8", "--repeat", "0"}, "--repeat 0"},
                       Bad{{"--sweep", "mps=on,off"}, "--sweep mps needs a worker_accelerator"},
                       Bad{{}, "no --sweep"}}) {
    std::vector<std::string> args = {"bench", "pipelines/default.yaml"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    auto r = RunDfworker(args);
    EXPECT_EQ(r.exit_code, 2) << b.expected << "\n" << r.out;
    EXPECT_NE(r.out.find(b.expected), std::string::npos) << r.out;
  }
}

TEST(RightSizing, BenchSweepsASampleAndRecommends) {
  const testing::TempDir tmp;
  const fs::path html = tmp / "bench.html";
  auto r = RunDfworker({"bench", "pipelines/default.yaml", "--sweep", "batch_size=8,64", "--records", "300", "--repeat", "1",
                        "--report", html.string(), "--keep"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("300 records,"), std::string::npos) << r.out;  // the sample, not the whole input
  EXPECT_NE(r.out.find("recommended: batch_size="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("min_batch_size: "), std::string::npos) << r.out;
  EXPECT_EQ(report::testing::CheckWellFormed(ReadFile(html)), "");
  // Every point writes under its own run folder (kept with --keep), not into the pipeline's out/.
  const std::string kept = "[bench] job dirs kept under ";
  const std::size_t at = r.out.find(kept);
  ASSERT_NE(at, std::string::npos) << r.out;
  const fs::path root = r.out.substr(at + kept.size(), r.out.find('\n', at) - at - kept.size());
  int predictions = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "point-1" / "run-0" / "out")) {
    predictions += e.path().filename().string().rfind("predictions-", 0) == 0;
  }
  EXPECT_GT(predictions, 0) << root;
  EXPECT_TRUE(fs::exists(root / "point-1" / "run-0" / "job" / "metrics.prom"));
  fs::remove_all(root);
}

TEST(RightSizing, BenchNamesTheStageMadeSlowOnPurpose) {
  // Sorting each text repeated 3000 times in MapToFields outweighs the tiny BERT.
  auto slow_cpu = RunDfworker({"bench", "testdata/right_sizing/slow_preprocess.yaml", "--sweep", "sdk_processes=1", "--repeat", "1"});
  ASSERT_EQ(slow_cpu.exit_code, 0) << slow_cpu.out;
  EXPECT_NE(slow_cpu.out.find("recommended: sdk_processes=1 ("), std::string::npos) << slow_cpu.out;
  EXPECT_NE(slow_cpu.out.find("CPU preprocessing-bound: the accelerator would wait (Preprocess:"), std::string::npos)
      << slow_cpu.out;
  // The same sentences made long enough that the encoder works at its max_seq_length: the encoder
  // holds the time. (Short ones through the tiny BERT cost about what writing their vectors does,
  // so which of the two leads would depend on the machine's load.)
  auto embed = RunDfworker({"bench", "testdata/right_sizing/slow_inference.yaml", "--sweep", "batch_size=8", "--repeat", "1"});
  ASSERT_EQ(embed.exit_code, 0) << embed.out;
  EXPECT_NE(embed.out.find("inference-bound (Embed:"), std::string::npos) << embed.out;
}

TEST(RightSizing, BenchKnowsTheStagesOfANestedChainByTheirScopedNames) {
  // The stage kinds come from the pipeline loader: the RunInference inside the chain 'Encode' is
  // 'Encode/Embed' in the metrics, and is still the inference stage.
  auto r = RunDfworker({"bench", "testdata/right_sizing/nested_inference.yaml", "--sweep", "batch_size=8", "--repeat", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("inference-bound (Encode/Embed:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(RightSizing, AnInterruptedSweepPrintsWhatItMeasured) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    ::close(out[1]);
    if (::chdir(DFW_SOURCE_DIR) != 0) ::_exit(127);
    const std::string bin = std::string(DFW_BINARY_DIR) + "/src/cli/dfworker";
    ::execl(bin.c_str(), bin.c_str(), "bench", "testdata/right_sizing/slow_preprocess.yaml", "--sweep", "sdk_processes=1,2",
            "--repeat", "1", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buf[4096];
  bool signalled = false;
  for (;;) {
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    // The first point is measured: interrupt the sweep while the second one runs.
    if (!signalled && text.find("[bench] 1/2 ") != std::string::npos && text.find('\n', text.find("[bench] 1/2 ")) != std::string::npos) {
      ::kill(pid, SIGINT);
      signalled = true;
    }
  }
  ::close(out[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(signalled) << text;
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 130) << text;
  EXPECT_NE(text.find("interrupted: 1 of 2 point(s) measured"), std::string::npos) << text;
  EXPECT_NE(text.find("recommended: sdk_processes=1 "), std::string::npos) << text;
  EXPECT_EQ(text.find("sdk_processes=2    "), std::string::npos) << text;  // no row for the interrupted point
}

}  // namespace
}  // namespace dfw
