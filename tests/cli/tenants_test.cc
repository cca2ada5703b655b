// `dfworker run --tenants`: admission in the dry run (text and JSON), strict errors (exit 2 naming
// the tenant and the field), and real runs of two tenants sharing one emulated GPU: per-client MPS
// limits in the daemon's registry, an over-budget tenant failing alone, --resume of every tenant.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "test_util.h"

namespace dfw {

using dfw::testing::ReadFile;
namespace {

namespace fs = std::filesystem;
using testing::RunDfworker;

const std::string kL4 =
    "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps";

// Runs from a RepoRootView, so that a run's relative outputs (out/...) do not race other tests
// writing the real out/.
class TenantsRun : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) view_.Keep();
  }
  void Write(const std::string& name, const std::string& text) { std::ofstream(root_ / name) << text; }

  // Every "id" (at any depth) of every row of every shard of `prefix`, with its count.
  std::map<std::string, int> Ids(const std::string& prefix) const {
    std::map<std::string, int> ids;
    fs::path p = root_ / prefix;
    if (!fs::is_directory(p.parent_path())) return ids;
    for (const auto& e : fs::directory_iterator(p.parent_path())) {
      if (e.path().filename().string().rfind(p.filename().string() + "-", 0) != 0) continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
        std::string id = FindId(row);
        ++ids[id.empty() ? "<no id>: " + line.substr(0, 80) : id];
      }
    }
    return ids;
  }
  static std::string FindId(const nlohmann::json& j) {
    if (j.is_object()) {
      if (j.contains("id")) return j["id"].dump();
      for (const auto& [k, v] : j.items()) {
        if (std::string id = FindId(v); !id.empty()) return id;
      }
    }
    if (j.is_string()) {  // an error row may carry the raw line
      nlohmann::json inner = nlohmann::json::parse(j.get<std::string>(), nullptr, false);
      if (inner.is_object()) return FindId(inner);
    }
    return "";
  }
  std::set<std::string> InputIds(const std::string& file) const {
    std::set<std::string> ids;
    std::ifstream in(fs::path(DFW_SOURCE_DIR) / file);
    for (std::string line; std::getline(in, line);) {
      nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
      ids.insert(row.is_object() && row.contains("id") ? row["id"].dump() : "<bad line>");
    }
    return ids;
  }
  // Each input id exactly once over `prefixes` together.
  void ExpectEveryIdOnce(const std::string& input, const std::vector<std::string>& prefixes) {
    std::map<std::string, int> all;
    for (const std::string& p : prefixes) {
      for (const auto& [id, n] : Ids(p)) all[id] += n;
    }
    std::set<std::string> want = InputIds(input);
    int missing = 0, twice = 0;
    for (const std::string& id : want) missing += all.count(id) == 0;
    for (const auto& [id, n] : all) twice += n > 1 || want.count(id) == 0;
    EXPECT_EQ(missing, 0) << input;
    EXPECT_EQ(twice, 0) << input;
    EXPECT_EQ(all.size(), want.size()) << input;
  }
  testing::CliOutcome Run(const std::vector<std::string>& args, const std::string& env = "") {
    return RunDfworker(args, root_.string(), env);
  }
  testing::RepoRootView view_;
  const fs::path root_ = view_.path();
};

TEST_F(TenantsRun, TheShippedFileIsAdmittedAndExplainsItsIsolation) {
  testing::CliOutcome o = Run({"run", "--tenants", "pipelines/tenants.yaml", "--dry_run", "--accelerator_backend=emulated"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  for (const char* want : {"tenants on one nvidia-l4 (emulated), 24.0 GiB, MPS split:", "classify: budget 8.0 GiB",
                           "embed: budget 9.6 GiB", "per client CUDA_MPS_PINNED_DEVICE_MEM_LIMIT 4.0 GiB, threads 60%, priority normal",
                           "MPS clients: 4 of 48; guaranteed SDK processes: 4 of 8 vCPUs", "MPS split (used)",
                           "MIG: not available on nvidia-l4", "tenant 'embed' (pipelines/embed_sentences.yaml):",
                           "dry run: 0 errors"}) {
    EXPECT_NE(o.out.find(want), std::string::npos) << want << "\n" << o.out;
  }
}

TEST_F(TenantsRun, ThreeTenantsOnAnL4AreRefusedNamingTheOneThatDoesNotFitInJson) {
  Write("t.yaml", "tenants:\n"
                  "  - {name: a, pipeline: pipelines/default.yaml, gpu_memory: 10GiB}\n"
                  "  - {name: b, pipeline: pipelines/embed_sentences.yaml, gpu_memory: 10GiB}\n"
                  "  - {name: c, pipeline: pipelines/json_clean.yaml, gpu_memory: 10GiB}\n");
  testing::CliOutcome two = Run({"run", "--tenants", "t.yaml", "--dry_run", "--format=json", "--machine_type=g2-standard-8", kL4,
                                 "--accelerator_backend=emulated"});
  ASSERT_EQ(two.exit_code, 2) << two.out;
  nlohmann::json j = nlohmann::json::parse(two.out.substr(two.out.find('{')), nullptr, false);
  ASSERT_TRUE(j.is_object()) << two.out;
  EXPECT_FALSE(j["valid"].get<bool>());
  std::vector<std::string> codes;
  for (const auto& d : j["diagnostics"]) {
    if (d["severity"] == "error") codes.push_back(d["code"]);
  }
  ASSERT_EQ(codes, std::vector<std::string>{"tenants-gpu-overcommitted"}) << two.out;
  std::string message = j["diagnostics"].back()["message"];
  EXPECT_NE(message.find("tenant 'c' does not fit on one nvidia-l4"), std::string::npos) << message;
  EXPECT_EQ(j["tenants"]["tenants"].size(), 3u);
  EXPECT_EQ(j["tenants"]["tenants"][0]["budget_bytes"], 10ull << 30);
  EXPECT_TRUE(j["tenant_plans"].contains("b"));

  Write("t.yaml", "tenants:\n"
                  "  - {name: a, pipeline: pipelines/default.yaml, gpu_memory: 10GiB}\n"
                  "  - {name: b, pipeline: pipelines/embed_sentences.yaml, gpu_memory: 10GiB}\n");
  testing::CliOutcome ok = Run({"run", "--tenants", "t.yaml", "--dry_run", "--format=json", "--machine_type=g2-standard-8", kL4,
                                "--accelerator_backend=emulated"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
}

TEST_F(TenantsRun, BadInputExitsTwoNamingTheTenantAndTheField) {
  Write("t.yaml", "tenants:\n"
                  "  - {name: a, pipeline: pipelines/default.yaml, gpu_memory: 1GiB, priority: urgent}\n"
                  "  - {name: b, pipeline: pipelines/nope.yaml, gpu_memory: 1GiB}\n"
                  "  - {name: c, pipeline: pipelines/default.yaml, gpu_memory: 1GiB, gpu_memroy: 2GiB}\n");
  testing::CliOutcome o = Run({"run", "--tenants", "t.yaml", kL4, "--accelerator_backend=emulated"});
  EXPECT_EQ(o.exit_code, 2) << o.out;
  for (const char* want : {"error[tenants-file-invalid]: t.yaml:2:", "tenant 'a': field 'priority': 'urgent' is not an MPS client priority",
                           "error[tenants-pipeline-invalid]: t.yaml:3:5: tenant 'b': field 'pipeline':",
                           "tenant 'c': unknown key 'gpu_memroy' (did you mean 'gpu_memory'?)"}) {
    EXPECT_NE(o.out.find(want), std::string::npos) << want << "\n" << o.out;
  }
  EXPECT_FALSE(fs::exists(root_ / ".dfworker")) << "nothing starts when admission fails";
}

TEST_F(TenantsRun, TwoShippedTenantsRunTogetherWithTheirOwnLimitsAndEveryRecord) {
  fs::path job = root_ / "job";
  testing::CliOutcome o = Run({"run", "--tenants", "pipelines/tenants.yaml", "--job_dir", job.string(), "--accelerator_backend=emulated"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_TRUE(fs::exists(job / "FINISHED"));
  EXPECT_TRUE(fs::exists(job / "tenants/classify/FINISHED")) << o.out;
  EXPECT_TRUE(fs::exists(job / "tenants/embed/FINISHED")) << o.out;
  EXPECT_TRUE(fs::exists(job / "tenants/classify/manifest.jsonl"));
  ExpectEveryIdOnce("pipelines/data/breast_cancer_demo.jsonl", {"out/default/predictions", "out/default/errors"});
  EXPECT_EQ(Ids("out/default/errors").size(), 4u);
  ExpectEveryIdOnce("testdata/tiny_bert/sentences.jsonl", {"out/embed_sentences/embeddings", "out/embed_sentences/errors"});
  // The shared daemon registered every SDK process that did work under its tenant with the
  // tenant's limits. (A process the launcher started after a short job's last bundle was leased is
  // stopped before it registers, so "every process" would depend on the machine's load.)
  const std::string log = ReadFile(job / "mps/log/control.log");
  const std::map<std::string, std::string> limits = {{"classify", "threads 60%, pinned 4.0 GiB, priority 0"},
                                                     {"embed", "threads 40%, pinned 4.8 GiB, priority 1"}};
  for (const auto& [tenant, limit] : limits) {
    nlohmann::json metrics = nlohmann::json::parse(ReadFile(job / "tenants" / tenant / "metrics.json"), nullptr, false);
    ASSERT_TRUE(metrics.is_object() && metrics["processes"].is_array()) << tenant;
    int worked = 0;
    for (const auto& process : metrics["processes"]) {
      if (process["bundles"].get<int>() == 0) continue;
      ++worked;
      const std::string who = tenant + "/sdk-" + std::to_string(process["index"].get<int>());
      EXPECT_NE(log.find("(" + who + "): " + limit), std::string::npos) << who << "\n" << log;
    }
    EXPECT_GE(worked, 1) << tenant << ": no SDK process committed a bundle";
  }
  nlohmann::json report = nlohmann::json::parse(ReadFile(job / "tenants_report.json"), nullptr, false);
  ASSERT_TRUE(report.is_object());
  EXPECT_GT(report["tenants"]["classify"]["gpu_memory_peak_bytes"].get<uint64_t>(), 0u) << report.dump();
  EXPECT_GT(report["tenants"]["embed"]["gpu_memory_peak_bytes"].get<uint64_t>(), 0u) << report.dump();
  // Each tenant's own metrics.json carries its share: budget, peak and the sampled timeline.
  for (const std::string tenant : {"classify", "embed"}) {
    nlohmann::json metrics = nlohmann::json::parse(ReadFile(job / "tenants" / tenant / "metrics.json"), nullptr, false);
    ASSERT_TRUE(metrics.is_object()) << tenant;
    const nlohmann::json& t = metrics["tenant"];
    ASSERT_TRUE(t.is_object()) << tenant << ": " << metrics.dump().substr(0, 2000);
    EXPECT_EQ(t["name"], tenant);
    EXPECT_EQ(t["gpu_memory_peak_bytes"], report["tenants"][tenant]["gpu_memory_peak_bytes"]) << tenant;
    EXPECT_EQ(t["gpu_memory_budget_bytes"], report["tenants"][tenant]["gpu_memory_budget_bytes"]) << tenant;
    ASSERT_TRUE(t["gpu_memory_timeline"].is_array()) << t.dump();
    EXPECT_GE(t["gpu_memory_timeline"].size(), 1u) << t.dump();
    EXPECT_EQ(t["gpu_memory_timeline"], report["tenants"][tenant]["gpu_memory_timeline"]) << tenant;
  }
}

TEST_F(TenantsRun, AnOverBudgetTenantFailsAloneAndTheOtherKeepsEveryRecord) {
  fs::path job = root_ / "job";
  // The ledger holds 'embed' to 1 KiB, far below its weights: its batches run out of memory.
  testing::CliOutcome o = Run({"run", "--tenants", "pipelines/tenants.yaml", "--job_dir", job.string(), "--accelerator_backend=emulated"},
                              "DFW_TEST_TENANT_LEDGER_BUDGET=embed=1024");
  EXPECT_EQ(o.exit_code, 0) << "both tenants end; embed's records are dead-lettered by its error_handling\n" << o.out;
  EXPECT_TRUE(fs::exists(job / "tenants/classify/FINISHED")) << o.out;
  ExpectEveryIdOnce("pipelines/data/breast_cancer_demo.jsonl", {"out/default/predictions", "out/default/errors"});
  EXPECT_EQ(Ids("out/default/errors").size(), 4u) << "classify is untouched: only its 4 planted bad rows fail";
  // Every record of 'embed' failed on its own budget and went to its error output, none lost.
  EXPECT_TRUE(Ids("out/embed_sentences/embeddings").empty()) << o.out;
  ExpectEveryIdOnce("testdata/tiny_bert/sentences.jsonl", {"out/embed_sentences/errors"});
  std::string errors;
  for (const auto& e : fs::directory_iterator(root_ / "out/embed_sentences")) {
    if (e.path().filename().string().rfind("errors-", 0) == 0) errors += ReadFile(e.path());
  }
  EXPECT_NE(errors.find("out of GPU memory: tenant 'embed'"), std::string::npos) << errors.substr(0, 2000);
  EXPECT_NE(errors.find("past the tenant's budget of 1.0 KiB"), std::string::npos) << errors.substr(0, 2000);
  EXPECT_NE(o.out.find("tenant 'embed': finished, GPU-memory peak 0 B of its budget 1.0 KiB"), std::string::npos) << o.out;
}

TEST_F(TenantsRun, ResumeFinishesEveryTenant) {
  fs::path job = root_ / "job";
  // Every tenant's launcher is killed just before it would write FINISHED.
  testing::CliOutcome killed = Run({"run", "--tenants", "pipelines/tenants.yaml", "--job_dir", job.string(), "--accelerator_backend=emulated"},
                                   "DFW_TEST_KILL_AT=before-finished");
  EXPECT_EQ(killed.exit_code, 1) << killed.out;
  EXPECT_FALSE(fs::exists(job / "tenants/classify/FINISHED"));
  EXPECT_FALSE(fs::exists(job / "tenants/embed/FINISHED"));
  testing::CliOutcome resumed = Run({"run", "--tenants", "pipelines/tenants.yaml", "--resume", job.string(), "--accelerator_backend=emulated"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_TRUE(fs::exists(job / "tenants/classify/FINISHED"));
  EXPECT_TRUE(fs::exists(job / "tenants/embed/FINISHED"));
  ExpectEveryIdOnce("pipelines/data/breast_cancer_demo.jsonl", {"out/default/predictions", "out/default/errors"});
  ExpectEveryIdOnce("testdata/tiny_bert/sentences.jsonl", {"out/embed_sentences/embeddings", "out/embed_sentences/errors"});
  testing::CliOutcome again = Run({"run", "--tenants", "pipelines/tenants.yaml", "--resume", job.string(), "--accelerator_backend=emulated"});
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("tenant 'classify': already finished"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace dfw
