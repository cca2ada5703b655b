// The real binary's dry run over launch lines whose verdict changed with Beam >= 2.67's list
// semantics and the mistakes of issue 16: exit codes, text and JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/cli_test_util.h"

namespace {

using dfw::testing::RunDfworker;

const std::string kMps = "worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps";

std::set<std::string> Codes(const std::string& json_out) {
  std::set<std::string> codes;
  const nlohmann::json report = nlohmann::json::parse(json_out);  // named: a temporary would dangle in the loop
  for (const auto& d : report["diagnostics"]) codes.insert(d["code"].get<std::string>());
  return codes;
}

TEST(DryRunOptions, CommaSplitExperimentsNowRefuseMpsWithOneSdkProcess) {
  auto o = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--format=json",
                        "--dataflow_service_options=" + kMps, "--machine_type=g2-standard-8",
                        "--experiments=use_runner_v2,no_use_multiple_sdk_containers"});
  ASSERT_EQ(o.exit_code, 2) << o.out;
  auto codes = Codes(o.out);
  EXPECT_TRUE(codes.count("mps-single-sdk-process")) << o.out;
  EXPECT_TRUE(codes.count("beam-version-split")) << o.out;
}

TEST(DryRunOptions, CommaSplitServiceOptionsNowRaiseMpsPrime) {
  auto o = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--dataflow_service_options=enable_prime," + kMps,
                        "--machine_type=g2-standard-8"});
  ASSERT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("error[mps-prime]"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Beam <= 2.66 reads it as ONE service option"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("service-option-comma"), std::string::npos) << o.out;
}

TEST(DryRunOptions, RepeatedFlagsMeanTheSameOnEveryBeamVersion) {
  auto o = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--format=json",
                        "--dataflow_service_options=" + kMps, "--machine_type=g2-standard-8",
                        "--experiments=use_runner_v2"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_TRUE(Codes(o.out).empty()) << o.out;
}

TEST(DryRunOptions, StreamingGpuLaunchGetsDataflowsVerdictExitZeroWithANote) {
  auto o = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--streaming", "--machine_type=g2-standard-8",
                        "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("warning[streaming-batch-only]"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("error["), std::string::npos) << o.out;
}

TEST(DryRunOptions, RunWithoutDryRunRefusesStreamingExitTwo) {
  auto o = RunDfworker({"run", "pipelines/default.yaml", "--streaming"});
  ASSERT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("error[streaming-unsupported]"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("bounded batch work"), std::string::npos) << o.out;
}

TEST(DryRunOptions, FlexrsWithAGpuExitsTwoAndFlexStartIsAccepted) {
  const std::string accel = "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver";
  auto flexrs = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--machine_type=g2-standard-8", accel,
                             "--flexrs_goal=COST_OPTIMIZED"});
  ASSERT_EQ(flexrs.exit_code, 2) << flexrs.out;
  EXPECT_NE(flexrs.out.find("error[flexrs-gpu]"), std::string::npos) << flexrs.out;
  auto flex_start = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--machine_type=g2-standard-8",
                                 accel + ";provisioning_model:FLEX_START"});
  ASSERT_EQ(flex_start.exit_code, 0) << flex_start.out;
  EXPECT_EQ(flex_start.out.find("error["), std::string::npos) << flex_start.out;
  EXPECT_NE(flex_start.out.find("provisioning: flex-start (provisioning_model:FLEX_START"), std::string::npos)
      << flex_start.out;
}

TEST(DryRunOptions, ServiceOptionWrittenAsAFlagExitsTwoShowingTheRightFlag) {
  auto o = RunDfworker({"run", "pipelines/default.yaml", "--dry_run",
                        "--worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver", "--machine_type=g2-standard-8"});
  ASSERT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("--dataflow_service_options=\"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver\""),
            std::string::npos)
      << o.out;
}

TEST(DryRunOptions, ListLiteralAcceleratorIsNotSilentlyDropped) {
  auto o = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--format=json",
                        "--dataflow_service_options=['worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver']"});
  ASSERT_EQ(o.exit_code, 2) << o.out;
  EXPECT_TRUE(Codes(o.out).count("accelerator-mangled")) << o.out;
}

}  // namespace

namespace {

TEST(DryRunOptions, JsonCarriesTheParsedOptionsAndDebugTextShowsThem) {
  auto o = dfw::testing::RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--format=json",
                                      "--experiments=use_runner_v2,no_use_multiple_sdk_containers",
                                      "--machine_type=g2-standard-8"});
  const nlohmann::json report = nlohmann::json::parse(o.out);
  const nlohmann::json& options = report["options"];
  ASSERT_TRUE(options.is_object()) << o.out;
  EXPECT_EQ(options["machine_type"], "g2-standard-8");
  ASSERT_GE(options["experiments"].size(), 2u) << o.out;
  EXPECT_EQ(options["experiments"][options["experiments"].size() - 1], "no_use_multiple_sdk_containers");
  EXPECT_EQ(options["sources"]["machine_type"], "command_line");

  auto text = dfw::testing::RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--log_level=debug",
                                         "--machine_type=g2-standard-8"});
  EXPECT_NE(text.out.find("options as read"), std::string::npos) << text.out;
  auto quiet = dfw::testing::RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--machine_type=g2-standard-8"});
  EXPECT_EQ(quiet.out.find("options as read"), std::string::npos) << quiet.out;
}

}  // namespace
