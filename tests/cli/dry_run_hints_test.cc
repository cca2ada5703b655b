// The real binary's dry run over pipeline files with Beam YAML resource hints: the plan shows which
// transform asked for what, a transform's accelerator hint declares the job's GPU (right fitting),
// and the rules report with the file's line and column.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_test_util.h"
#include "test_util.h"

namespace {

using dfw::testing::kL4Accelerator;

namespace fs = std::filesystem;
using dfw::testing::RunDfworker;

class HintFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
  }
  // Create → MapToFields 'Embed' with `resource_hints: HINTS` → LogForTesting; pipeline-level hints optional.
  std::string Write(const std::string& name, const std::string& hints, const std::string& pipeline_hints = "") {
    const fs::path p = dir_ / (name + ".yaml");
    std::ofstream(p) << "pipeline:\n  type: chain\n"
                     << (pipeline_hints.empty() ? "" : "  resource_hints: " + pipeline_hints + "\n")
                     << "  transforms:\n    - type: Create\n      config: {elements: [1, 2]}\n"
                        "    - type: MapToFields\n      name: Embed\n      config: {fields: {x: element}}\n"
                        "      resource_hints: " << hints << "\n    - type: LogForTesting\n";
    return p.string();
  }
  dfw::testing::TempDir tmp_;
  fs::path dir_;
};

TEST_F(HintFiles, ATransformsAcceleratorHintDeclaresTheGpuAndThePlanSaysWhoAskedForWhat) {
  const std::string p = Write("gpu", "{accelerator: \"" + kL4Accelerator + "\", min_ram: 16GB}", "{min_ram: 1GB}");
  auto o = RunDfworker({"run", p, "--dry_run", "--machine_type=g2-standard-8", "--accelerator_backend=emulated"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("1 x nvidia-l4"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("declared by the resource hint of transform 'Embed' (" + p + ":7:7); right fitting"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("resource hints:  pipeline level: min_ram 1 GB"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("'Embed' (" + p + ":7:7): accelerator " + kL4Accelerator + ", min_ram 16 GB"), std::string::npos)
      << o.out;

  auto j = RunDfworker({"run", p, "--dry_run", "--format=json", "--machine_type=g2-standard-8",
                        "--accelerator_backend=emulated"});
  ASSERT_EQ(j.exit_code, 0) << j.out;
  const nlohmann::json report = nlohmann::json::parse(j.out);
  EXPECT_EQ(report["plan"]["accelerator"]["type"], "nvidia-l4");
  const auto& hints = report["plan"]["resource_hints"];
  ASSERT_EQ(hints.size(), 2u) << j.out;
  EXPECT_TRUE(hints[0]["transform"].is_null());
  EXPECT_EQ(hints[0]["min_ram_bytes"], 1'000'000'000u);
  EXPECT_EQ(hints[1]["transform"], "Embed");
  EXPECT_EQ(hints[1]["accelerator"], kL4Accelerator);
  EXPECT_EQ(hints[1]["min_ram_bytes"], 16'000'000'000u);
}

TEST_F(HintFiles, AnAcceleratorHintWithWorkerAcceleratorExitsTwoAtTheFilePosition) {
  const std::string p = Write("both", "{accelerator: \"" + kL4Accelerator + "\"}");
  auto o = RunDfworker({"run", p, "--dry_run", "--machine_type=g2-standard-8",
                        "--dataflow_service_options=worker_accelerator=" + kL4Accelerator});
  ASSERT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("error[right-fitting-conflict]"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--> " + p + ":9:37"), std::string::npos) << o.out;
}

TEST_F(HintFiles, MinRamAboveTheMachineExitsTwoWithAMachineThatHoldsIt) {
  const std::string p = Write("ram", "{min_ram: 40GB}");
  auto o = RunDfworker({"run", p, "--dry_run", "--machine_type=g2-standard-8"});
  ASSERT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("error[resource-hint-exceeds-machine]: resource hint min_ram '40GB'"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--> " + p + ":9:33"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--machine_type=g2-standard-12"), std::string::npos) << o.out;  // 48 GB, the smallest G2 that holds it
}

TEST_F(HintFiles, BadHintsExitTwoNamingTheFileAndTheKey) {
  auto unknown = RunDfworker({"run", Write("unknown", "{min_rma: 4GB}"), "--dry_run"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("unknown hint 'min_rma' (did you mean 'min_ram'?); known: accelerator, min_ram, cpu_count"),
            std::string::npos)
      << unknown.out;
  auto lots = RunDfworker({"run", Write("lots", "{min_ram: lots}"), "--dry_run"});
  EXPECT_EQ(lots.exit_code, 2) << lots.out;
  EXPECT_NE(lots.out.find("resource hint min_ram 'lots' is not a size"), std::string::npos) << lots.out;
  auto nested = RunDfworker({"run", Write("nested", "{accelerator: [nvidia-l4]}"), "--dry_run"});
  EXPECT_EQ(nested.exit_code, 2) << nested.out;
  EXPECT_NE(nested.out.find("'accelerator' must be one value (a string or a number), not a list"), std::string::npos)
      << nested.out;
}

}  // namespace
