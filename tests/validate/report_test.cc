#include "dfw/validate/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "catalog/catalog_test_util.h"
#include "dfw/options/parse.h"
#include "dfw/validate/validate.h"

namespace dfw {
namespace report_test {

struct Checked {
  std::vector<Diagnostic> diagnostics;
  std::optional<WorkerPlan> plan;
};

Checked Check(const std::vector<std::string>& args) {
  PipelineOptions options = ParsePipelineOptions(args);
  auto plan = MakePlan(options, testing::SourceCatalog(), {}, HostInfo{4, 0, std::nullopt, ""});
  Checked c;
  if (plan.ok()) c.plan = *plan;
  c.diagnostics = Validate(options, testing::SourceCatalog(), c.plan ? &*c.plan : nullptr);
  return c;
}

const std::string kArg = "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:2;install-nvidia-driver;use_nvidia_mps";

TEST(RenderDiagnosticText, ReadsLikeACompilerWithACaretUnderTheSubField) {
  Checked c = Check({kArg, "--machine_type=g2-standard-24"});
  ASSERT_EQ(c.diagnostics.size(), 1u);
  std::string text = RenderDiagnosticText(c.diagnostics[0]);
  const std::string expected =
      "error[mps-multi-gpu]: use_nvidia_mps with count:2; MPS is supported only on Dataflow workers that use a "
      "single GPU\n"
      "  --> command line\n"
      "   |\n"
      "   | " + kArg + "\n"
      "   | " + std::string(kArg.find("count:2"), ' ') + "^^^^^^^\n"
      "   = help: set count:1, or drop use_nvidia_mps\n"
      "   = see: https://cloud.google.com/dataflow/docs/gpu/use-nvidia-mps\n";
  EXPECT_EQ(text, expected);
}

TEST(RenderTextReport, EndsWithTheCounts) {
  Checked c = Check({kArg, "--machine_type=g2-standard-24", "--foo=1"});
  std::string text = RenderTextReport(c.diagnostics, c.plan ? &*c.plan : nullptr);
  EXPECT_NE(text.find("worker plan"), std::string::npos);
  EXPECT_NE(text.find("dry run: 1 error, 1 warning"), std::string::npos) << text;
}

TEST(RenderJsonReport, ValidPlanHasTheIssueFields) {
  Checked c = Check({"--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps",
                     "--machine_type=g2-standard-8"});
  auto j = nlohmann::json::parse(RenderJsonReport(c.diagnostics, &*c.plan));
  EXPECT_EQ(j["valid"], true);
  EXPECT_TRUE(j["diagnostics"].is_array());
  EXPECT_TRUE(j["diagnostics"].empty());
  const auto& plan = j["plan"];
  EXPECT_EQ(plan["sdk_processes"], 8);
  EXPECT_EQ(plan["harness_threads_per_process"], kDefaultHarnessThreads);
  EXPECT_EQ(plan["accelerator"]["type"], "nvidia-l4");
  EXPECT_EQ(plan["accelerator"]["count"], 1);
  EXPECT_EQ(plan["accelerator"]["memory_bytes"], 24ull << 30);
  EXPECT_EQ(plan["accelerator"]["mps"], true);
  EXPECT_EQ(plan["accelerator"]["backend"], "emulated");
  EXPECT_EQ(plan["gpu_memory"]["capacity_bytes"], 24ull << 30);
  EXPECT_EQ(plan["gpu_memory"]["planned_peak_bytes"], 350ull << 20);
  EXPECT_TRUE(plan["models"].is_array());
}

TEST(RenderJsonReport, InvalidRunListsEveryDiagnosticWithSeverityCodeMessage) {
  Checked c = Check({"--dataflow_service_options=worker_accelerator=type:nvidia-l5;count:1", "--machine_type=g2-standard-7",
                     "--extra_thing=1"});
  auto j = nlohmann::json::parse(RenderJsonReport(c.diagnostics, c.plan ? &*c.plan : nullptr));
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["errors"], 2);
  EXPECT_EQ(j["warnings"], 2);  // unknown-flag, driver-not-installed
  EXPECT_TRUE(j["plan"].is_null());  // unknown names: no plan
  std::vector<std::string> codes;
  for (const auto& d : j["diagnostics"]) {
    codes.push_back(d["code"]);
    EXPECT_TRUE(d["severity"] == "error" || d["severity"] == "warning");
    EXPECT_FALSE(d["message"].get<std::string>().empty());
    EXPECT_FALSE(d["doc_url"].get<std::string>().empty());
  }
  EXPECT_EQ(codes, (std::vector<std::string>{"unknown-flag", "gpu-unknown-type", "machine-unknown-type",
                                             "driver-not-installed"}));
  EXPECT_NE(j["diagnostics"][1]["message"].get<std::string>().find("did you mean 'nvidia-l4'"), std::string::npos);
}

TEST(RenderJsonReport, InvalidUtf8InUserTextStaysValidJson) {
  Checked c = Check({"--machine_type=\xff\xfe"});
  std::string json = RenderJsonReport(c.diagnostics, nullptr);
  EXPECT_NO_THROW({ auto parsed = nlohmann::json::parse(json); (void)parsed; });
}

}  // namespace report_test
}  // namespace dfw
