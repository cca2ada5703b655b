// `dfworker plan` fed with measurements through the real binary: the CPU rate of a
// `dfworker bench --format=json` result (--cpu_rate_from BENCH.json) and the handler efficiency
// scripts/gpu-check.sh writes (--gpu_efficiency_from FILE), with the arithmetic pinned on hand-made
// files and every bad file refused with exit 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_test_util.h"
#include "test_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using testing::RunDfworker;

// FNV-1a 64 of a file's bytes, written out here (the bench's content hash, docs/right-sizing.md).
std::string Fnv1aOfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s.str()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

// A bench result for `pipeline` as a user could write it: one point, recommended, `records` over
// `cpu_seconds` outside RunInference.
nlohmann::json HandMadeBench(const std::string& pipeline, int64_t records, double cpu_seconds) {
  return {{"format", "dfworker-bench"},
          {"format_version", 1},
          {"pipeline", {{"path", pipeline}, {"content_hash", Fnv1aOfFile(DFW_SOURCE_DIR "/" + pipeline)}}},
          {"machine", {{"machine_type", nullptr}, {"host_cpu_cores", 2}, {"host_cpu_model", "Test CPU"}}},
          {"recommended_point", 0},
          {"points",
           {{{"name", "sdk_processes=2"}, {"failed", 0}, {"records", records}, {"cpu_seconds", cpu_seconds},
             {"cpu_records_per_vcpu_second", cpu_seconds > 0 ? records / cpu_seconds : 0.0}, {"sdk_processes", 2},
             {"cpu_stages", {"ReadSamples", "WriteToJson"}}}}}};
}

// The text with its wrapping undone (every run of spaces and newlines one space).
std::string Unwrapped(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && !out.empty() && out.back() == ' ') continue;
    out += space ? ' ' : c;
  }
  return out;
}

nlohmann::json JsonOf(const std::string& out) {
  const std::size_t at = out.find("{\n");  // after any progress lines on stderr
  return nlohmann::json::parse(at == std::string::npos ? out : out.substr(at), nullptr, false);
}

TEST(RightSizingMeasured, BenchWritesJsonThatPlanReads) {
  auto bench = RunDfworker({"bench", "pipelines/default.yaml", "--sweep", "sdk_processes=1", "--records", "300", "--repeat",
                            "1", "--format=json"});
  ASSERT_EQ(bench.exit_code, 0) << bench.out;
  auto j = JsonOf(bench.out);
  ASSERT_FALSE(j.is_discarded()) << bench.out;
  EXPECT_EQ(j["format"], "dfworker-bench");
  EXPECT_EQ(j["pipeline"]["content_hash"], Fnv1aOfFile(DFW_SOURCE_DIR "/pipelines/default.yaml"));
  EXPECT_EQ(j["recommended_point"], 0);
  const auto& p = j["points"][0];
  EXPECT_EQ(p["records"], 300);
  EXPECT_EQ(p["sdk_processes"], 1);
  ASSERT_GT(p["cpu_seconds"].get<double>(), 0) << p.dump();
  EXPECT_NEAR(p["cpu_records_per_vcpu_second"].get<double>(), 300 / p["cpu_seconds"].get<double>(), 1e-6);
  EXPECT_EQ(p["cpu_stages"], (nlohmann::json{"ReadSamples", "WriteErrors", "WriteToJson"})) << p.dump();
  ASSERT_EQ(p["models"].size(), 1u) << p.dump();
  EXPECT_GT(p["models"][0]["gflops"].get<double>(), 0) << p.dump();  // the MLP's arithmetic over its inference time

  const testing::TempDir tmp;
  const fs::path dir = tmp.path();
  std::ofstream(dir / "bench.json") << bench.out.substr(bench.out.find("{\n"));
  auto plan = RunDfworker({"plan", "pipelines/default.yaml", "--gpu", "nvidia-l4", "--cpu_rate_from",
                           (dir / "bench.json").string(), "--format=json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.out;
  auto pj = nlohmann::json::parse(plan.out, nullptr, false);
  ASSERT_FALSE(pj.is_discarded()) << plan.out;
  EXPECT_DOUBLE_EQ(pj["estimate_inputs"]["cpu_records_per_vcpu_second"].get<double>(),
                   p["cpu_records_per_vcpu_second"].get<double>());
}

// The MLP reports each batch's arithmetic (2 x in x out per layer and row: 3,008 FLOPs for the demo's
// 30-32-16-2), so runs and benches give its achieved GFLOP/s as they do the encoders'.
TEST(RightSizingMeasured, MlpReportsItsArithmeticPerBatch) {
  // Through bench (--keep): its runs write under their own folder, not the pipeline's out/.
  auto run = RunDfworker({"bench", "pipelines/default.yaml", "--sweep", "sdk_processes=2", "--repeat", "1", "--keep"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string kept = "[bench] job dirs kept under ";
  const std::size_t at = run.out.find(kept);
  ASSERT_NE(at, std::string::npos) << run.out;
  const fs::path dir = run.out.substr(at + kept.size(), run.out.find('\n', at) - at - kept.size());
  std::ifstream in(dir / "point-0" / "run-0" / "job" / "metrics.json");
  auto m = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(m.is_discarded());
  double inferences = -1, kflop = -1, batches = 0;
  for (const auto& c : m["total"]["counters"]) {
    if (c["namespace"] == "RunInference" && c["name"] == "num_inferences") inferences = c["value"].get<double>();
  }
  for (const auto& d : m["total"]["distributions"]) {
    if (d["namespace"] != "RunInference" || d["name"] != "batch_kflop") continue;
    kflop = d["sum"].get<double>();
    batches = d["count"].get<double>();
  }
  ASSERT_GT(inferences, 0) << m["total"].dump();
  ASSERT_GT(batches, 0) << m["total"].dump();
  // Each batch's figure is rounded to a whole kFLOP.
  EXPECT_NEAR(kflop, inferences * 3.008, 0.5 * batches);
}

TEST(RightSizingMeasured, PlanTakesTheRecommendedPointsCpuRate) {
  const testing::TempDir tmp;
  const fs::path dir = tmp.path();
  // 6,000 records in 0.5 CPU-s outside RunInference: 12,000 records/s per vCPU.
  std::ofstream(dir / "bench.json") << HandMadeBench("pipelines/default.yaml", 6000, 0.5).dump(2);
  const std::vector<std::string> plan = {"plan", "pipelines/default.yaml", "--gpu", "nvidia-l4",
                                         "--machine_type=g2-standard-8", "--cpu_rate_from", (dir / "bench.json").string()};
  auto json = RunDfworker([&] {
    auto a = plan;
    a.push_back("--format=json");
    return a;
  }());
  ASSERT_EQ(json.exit_code, 0) << json.out;
  auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_DOUBLE_EQ(j["estimate_inputs"]["cpu_records_per_vcpu_second"].get<double>(), 12000.0);
  EXPECT_NE(j["estimate_inputs"]["cpu_rate_how"].get<std::string>().find(
                "its recommended point 'sdk_processes=2': 6000 records / 0.5 CPU-s in ReadSamples, WriteToJson, on 2 SDK "
                "process(es), no --machine_type, a host of 2 core(s) (Test CPU)"),
            std::string::npos)
      << j["estimate_inputs"].dump();
  // g2-standard-8 has 8 vCPUs: 8 x 12,000 = 96,000 records/s, far below what the L4 does for this MLP.
  bool seen = false;
  for (const auto& r : j["rows"]) {
    if (r["machine_type"] != "g2-standard-8" || r.contains("mig") || !r.contains("estimate")) continue;
    seen = true;
    EXPECT_DOUBLE_EQ(r["estimate"]["records_per_second"].get<double>(), 96000.0) << r.dump();
    EXPECT_EQ(r["estimate"]["bottleneck"], "CPU preprocessing") << r.dump();
  }
  EXPECT_TRUE(seen) << json.out;
  auto text = RunDfworker(plan);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  const std::string flat = Unwrapped(text.out);
  EXPECT_NE(flat.find("Common inputs: measured CPU rate 1.2e+04 records/s per vCPU"), std::string::npos) << text.out;
  EXPECT_NE(flat.find("8 vCPUs x 1.2e+04 records/s per vCPU (measured: dfworker bench ("), std::string::npos) << text.out;
  // The estimate part of the text stays within 100 columns (the memory-fit table after it is wider).
  const std::size_t fit_table = text.out.find("\nplan across the catalog");
  ASSERT_NE(fit_table, std::string::npos) << text.out;
  std::istringstream lines(text.out.substr(0, fit_table));
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

TEST(RightSizingMeasured, PlanRefusesBadBenchResultsWithExitTwo) {
  const testing::TempDir tmp;
  const fs::path dir = tmp.path();
  std::ofstream(dir / "broken.json") << "{\n  \"format\": \"dfworker-bench\",\n  \"points\": [\n}\n";
  std::ofstream(dir / "foreign.json") << "{\"rows\": [], \"cheapest_row\": -1}";
  std::ofstream(dir / "other.json") << HandMadeBench("pipelines/default.yaml", 6000, 0.5).dump();
  std::ofstream(dir / "zero.json") << HandMadeBench("pipelines/embed_sentences.yaml", 6000, 0).dump();
  // A stated rate with no time behind it: cpu_seconds 0 and -1 under a rate of 12000.
  for (const char* name : {"stated0.json", "stated-1.json"}) {
    nlohmann::json b = HandMadeBench("pipelines/embed_sentences.yaml", 6000, 0.5);
    b["points"][0]["cpu_seconds"] = std::string(name) == "stated0.json" ? 0.0 : -1.0;
    std::ofstream(dir / name) << b.dump();
  }
  struct Bad {
    std::string file, expected;
  };
  for (const Bad& b : {Bad{"broken.json", "broken.json:4:1: not JSON: syntax error"},
                       Bad{"foreign.json", "foreign.json: not a dfworker bench result"},
                       Bad{"other.json", "a bench result of another pipeline: it ran 'pipelines/default.yaml'"},
                       Bad{"zero.json", "point 'sdk_processes=2' (recommended) has a CPU rate of 0"},
                       Bad{"stated0.json", "has cpu_seconds 0 and records 6000: a CPU rate needs a positive time"},
                       Bad{"stated-1.json", "has cpu_seconds -1 and records 6000: a CPU rate needs a positive time"},
                       Bad{"missing.json", "neither a job dir nor a file"}}) {
    auto r = RunDfworker({"plan", "pipelines/embed_sentences.yaml", "--gpu", "nvidia-l4", "--cpu_rate_from",
                          (dir / b.file).string()});
    EXPECT_EQ(r.exit_code, 2) << b.file << "\n" << r.out;
    EXPECT_NE(r.out.find("dfworker plan: error: --cpu_rate_from"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(b.expected), std::string::npos) << r.out;
  }
}

TEST(RightSizingMeasured, PlanTakesTheMeasuredHandlerEfficiency) {
  const std::string example = DFW_SOURCE_DIR "/testdata/right_sizing/gpu-efficiency.example.json";
  auto r = RunDfworker({"plan", "pipelines/embed_sentences.yaml", "--gpu", "nvidia-l4", "--cpu_rate", "1000000000",
                        "--gpu_efficiency_from", example, "--format=json"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const auto& measured = j["estimate_inputs"]["gpu_efficiency_measured"];
  ASSERT_EQ(measured.size(), 1u) << j["estimate_inputs"].dump();
  EXPECT_DOUBLE_EQ(measured.begin().value()["efficiency"].get<double>(), 0.15);
  // The same plan at the handler's default (0.4): its GPU compute rate is 0.4 / 0.15 times as high on every row.
  auto d = RunDfworker({"plan", "pipelines/embed_sentences.yaml", "--gpu", "nvidia-l4", "--cpu_rate", "1000000000",
                        "--format=json"});
  ASSERT_EQ(d.exit_code, 0) << d.out;
  auto dj = nlohmann::json::parse(d.out, nullptr, false);
  int compared = 0;
  for (std::size_t i = 0; i < j["rows"].size() && i < dj["rows"].size(); ++i) {
    const auto& a = j["rows"][i];
    const auto& b = dj["rows"][i];
    if (!a.contains("estimate") || !a["estimate"]["speed_known"].get<bool>()) continue;
    ++compared;
    EXPECT_NEAR(b["estimate"]["gpu_compute_records_per_second"].get<double>() /
                    a["estimate"]["gpu_compute_records_per_second"].get<double>(),
                0.4 / 0.15, 1e-9)
        << a.dump();
  }
  EXPECT_GT(compared, 0) << r.out;
  auto text = RunDfworker({"plan", "pipelines/embed_sentences.yaml", "--gpu", "nvidia-l4", "--cpu_rate", "1000000000",
                           "--gpu_efficiency_from", example});
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(Unwrapped(text.out).find(
                "efficiency 0.15 (measured: SentenceEmbeddingHandler on nvidia-l4, 4545 GFLOP/s of 30.3 TFLOP/s FP32"),
            std::string::npos)
      << text.out;

  const testing::TempDir tmp;
  const fs::path dir = tmp.path();
  std::ofstream(dir / "broken.json") << "{\"format\": \"dfworker-gpu-efficiency\",";
  std::ofstream(dir / "unknown_gpu.json") << "{\"format\": \"dfworker-gpu-efficiency\", \"format_version\": 1, \"gpu\": "
                                             "\"nvidia-l5\", \"handlers\": [{\"handler\": \"SentenceEmbeddingHandler\", "
                                             "\"dtype\": \"float32\", \"achieved_gflops\": 3030, \"peak_tflops\": 30.3, "
                                             "\"efficiency\": 0.1}]}";
  struct Bad {
    std::vector<std::string> args;
    std::string expected;
  };
  for (const Bad& b :
       {Bad{{"pipelines/embed_sentences.yaml", "--gpu_efficiency_from", (dir / "broken.json").string()}, "broken.json:1:"},
        Bad{{"pipelines/embed_sentences.yaml", "--gpu_efficiency_from", (dir / "unknown_gpu.json").string()},
            "gpu 'nvidia-l5' is not a GPU type of the catalog"},
        Bad{{"pipelines/default.yaml", "--gpu_efficiency_from", example},
            "no entry for the pipeline's handler(s) MlpModelHandlerSafetensors (the file measured SentenceEmbeddingHandler)"},
        Bad{{"pipelines/embed_sentences.yaml", "--gpu_efficiency_from", (dir / "none.json").string()}, "none.json"},
        Bad{{"pipelines/embed_sentences.yaml", "--gpu_efficiency", "0.5", "--gpu_efficiency_from", example},
            "--gpu_efficiency and --gpu_efficiency_from: give one of them"}}) {
    std::vector<std::string> args = {"plan"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    auto bad = RunDfworker(args);
    EXPECT_EQ(bad.exit_code, 2) << b.expected << "\n" << bad.out;
    EXPECT_NE(bad.out.find(b.expected), std::string::npos) << bad.out;
  }
}

}  // namespace
}  // namespace dfw
