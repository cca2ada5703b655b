// The dry-run report's `options` object (JSON) and its text twin: lists in order, scalars, unknown
// flags, and each option's source.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dfw/options/parse.h"
#include "dfw/validate/report.h"

namespace dfw {
namespace {

nlohmann::json OptionsOf(const PipelineOptions& o) { return nlohmann::json::parse(RenderJsonReport({}, nullptr, &o))["options"]; }

TEST(ReportOptions, ListsKeepTheirOrderAndScalarsTheirWinner) {
  const std::string yaml =
      "options:\n  experiments: [use_runner_v2]\n  machine_type: n1-standard-4\n"
      "  number_of_worker_harness_threads: 3\n";
  auto o = ParsePipelineOptions({"--experiments=b,a", "--dataflow_service_options=enable_prime", "--machine_type=g2-standard-8",
                                 "--resource_hints=min_ram=4GB", "--sdk_container_image=img:1", "--my_arg=1",
                                 "--project_id", "p"},
                                yaml, "p.yaml");
  nlohmann::json j = OptionsOf(o);
  EXPECT_EQ(j["experiments"], (nlohmann::json{"use_runner_v2", "b", "a"}));
  EXPECT_EQ(j["dataflow_service_options"], (nlohmann::json{"enable_prime"}));
  EXPECT_EQ(j["machine_type"], "g2-standard-8");
  EXPECT_EQ(j["number_of_worker_harness_threads"], 3);
  EXPECT_TRUE(j["sdk_worker_parallelism"].is_null());
  EXPECT_EQ(j["resource_hints"], (nlohmann::json{"min_ram=4GB"}));
  EXPECT_EQ(j["streaming"], false);
  EXPECT_EQ(j["sdk_container_image"], "img:1");
  EXPECT_EQ(j["unknown_flags"], (nlohmann::json{"my_arg", "project_id"}));
  const nlohmann::json& src = j["sources"];
  EXPECT_EQ(src["experiments"], "pipeline_yaml+command_line");
  EXPECT_EQ(src["dataflow_service_options"], "command_line");
  EXPECT_EQ(src["machine_type"], "command_line");  // the flag overrides the options: block
  EXPECT_EQ(src["number_of_worker_harness_threads"], "pipeline_yaml");
  EXPECT_EQ(src["sdk_worker_parallelism"], "default");
  EXPECT_EQ(src["streaming"], "default");
  EXPECT_EQ(src["sdk_container_image"], "command_line");
  EXPECT_EQ(src.size(), 8u);
}

TEST(ReportOptions, JavaSpellingsLandUnderThePythonNames) {
  auto o = ParsePipelineOptions({"--workerMachineType=g2-standard-4", "--numberOfWorkerHarnessThreads=2",
                                 "--dataflowServiceOptions=enable_prime,enable_hot_key_logging", "--streaming=false"});
  nlohmann::json j = OptionsOf(o);
  EXPECT_EQ(j["machine_type"], "g2-standard-4");
  EXPECT_EQ(j["number_of_worker_harness_threads"], 2);
  EXPECT_EQ(j["dataflow_service_options"], (nlohmann::json{"enable_prime", "enable_hot_key_logging"}));
  EXPECT_EQ(j["streaming"], false);
  EXPECT_EQ(j["sources"]["streaming"], "command_line");
}

TEST(ReportOptions, WithoutOptionsTheKeyIsNull) {
  auto j = nlohmann::json::parse(RenderJsonReport({}, nullptr));
  ASSERT_TRUE(j.contains("options"));
  EXPECT_TRUE(j["options"].is_null());
}

TEST(ReportOptions, TextShowsTheSameWithSources) {
  auto o = ParsePipelineOptions({"--experiments=use_runner_v2", "--foo=1"});
  std::string text = RenderOptionsText(o);
  EXPECT_NE(text.find("experiments:                      ['use_runner_v2']  (command_line)"), std::string::npos) << text;
  EXPECT_NE(text.find("machine_type:                     (none)  (default)"), std::string::npos) << text;
  EXPECT_NE(text.find("--foo"), std::string::npos) << text;
}

}  // namespace
}  // namespace dfw
