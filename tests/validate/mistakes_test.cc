// The mistakes people make on real Dataflow GPU launch lines (issue 16): each one's diagnostic,
// its wording and fix, in text and in JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "catalog/catalog_test_util.h"
#include "dfw/options/parse.h"
#include "dfw/validate/report.h"
#include "dfw/validate/validate.h"

namespace dfw {
namespace {

const std::string kL4 = "type:nvidia-l4;count:1;install-nvidia-driver";

std::vector<Diagnostic> Check(const std::vector<std::string>& args, const std::string& yaml = "",
                              CheckFor check_for = CheckFor::kDataflowLaunch) {
  PipelineOptions options = ParsePipelineOptions(args, yaml, "p.yaml");
  HostInfo host{4, 0, std::nullopt, ""};
  auto plan = MakePlan(options, testing::SourceCatalog(), {}, host);
  return Validate(options, testing::SourceCatalog(), plan.ok() ? &*plan : nullptr, check_for);
}

// As `dfworker run` (no --dry_run) checks it: Dataflow's rules and dfworker's own limits.
std::vector<Diagnostic> CheckLocal(const std::vector<std::string>& args) { return Check(args, "", CheckFor::kLocalRun); }

// The one diagnostic of `code` (fails the test when there is not exactly one).
Diagnostic Only(const std::vector<Diagnostic>& all, const std::string& code) {
  std::vector<Diagnostic> found;
  std::string rendered;
  for (const auto& d : all) {
    rendered += RenderDiagnosticText(d);
    if (d.code == code) found.push_back(d);
  }
  EXPECT_EQ(found.size(), 1u) << code << "\n" << rendered;
  return found.empty() ? Diagnostic{} : found[0];
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Mistakes, WorkerAcceleratorAsItsOwnFlagShowsTheFlagAsItShouldBeWritten) {
  Diagnostic d = Only(Check({"--worker_accelerator=" + kL4, "--machine_type=g2-standard-8"}), "service-option-as-flag");
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_TRUE(Has(d.message, "no GPU at all")) << d.message;
  EXPECT_TRUE(Has(d.help, "--dataflow_service_options=\"worker_accelerator=" + kL4 + "\"")) << d.help;
  EXPECT_EQ(d.origin->text.substr(d.caret_offset, d.caret_length), "--worker_accelerator");

  Diagnostic java = Only(Check({"--workerAccelerator=" + kL4, "--workerMachineType=g2-standard-8"}), "service-option-as-flag");
  EXPECT_TRUE(Has(java.help, "--dataflowServiceOptions=\"worker_accelerator=" + kL4 + "\"")) << java.help;

  Diagnostic mps = Only(Check({"--use_nvidia_mps"}), "service-option-as-flag");
  EXPECT_TRUE(Has(mps.help, "install-nvidia-driver;use_nvidia_mps\"")) << mps.help;
  Diagnostic prime = Only(Check({"--enable_prime"}), "service-option-as-flag");
  EXPECT_TRUE(Has(prime.help, "--dataflow_service_options=enable_prime")) << prime.help;
}

TEST(Mistakes, StreamingIsDataflowsVerdictInADryRunAndRefusedByRun) {
  Diagnostic note = Only(Check({"--streaming"}), "streaming-batch-only");
  EXPECT_EQ(note.severity, Severity::kWarning);
  EXPECT_TRUE(Has(note.message, "Dataflow accepts")) << note.message;
  EXPECT_TRUE(Has(note.message, "would refuse it")) << note.message;

  Diagnostic run = Only(CheckLocal({"--streaming"}), "streaming-unsupported");
  EXPECT_EQ(run.severity, Severity::kError);
  EXPECT_TRUE(Has(run.message, "bounded batch work")) << run.message;
  EXPECT_TRUE(Has(run.help, "drop --streaming")) << run.help;

  Diagnostic hint = Only(Check({"--resource_hints=accelerator=" + kL4, "--machine_type=g2-standard-8", "--streaming"}),
                         "streaming-right-fitting");
  EXPECT_EQ(hint.severity, Severity::kError);
  EXPECT_TRUE(Has(hint.message, "--experiments=enable_streaming_rightfitting")) << hint.message;
  EXPECT_TRUE(Check({"--streaming=false"}).empty());
}

TEST(Mistakes, FlexrsWithAGpuNamesTheGoalAndTheSource) {
  const std::string goal = "--flexrs_goal=COST_OPTIMIZED";
  Diagnostic d = Only(Check({goal, "--dataflow_service_options=worker_accelerator=" + kL4, "--machine_type=g2-standard-8"}),
                      "flexrs-gpu");
  EXPECT_EQ(goal.substr(d.caret_offset, d.caret_length), "COST_OPTIMIZED");
  EXPECT_TRUE(Has(d.message, "doesn't support GPUs")) << d.message;
  EXPECT_TRUE(Has(d.message, "nvidia-l4")) << d.message;
  EXPECT_TRUE(Has(d.message, "https://cloud.google.com/dataflow/docs/guides/flexrs")) << d.message;
  EXPECT_TRUE(Has(d.help, "provisioning_model:FLEX_START")) << d.help;
}

TEST(Mistakes, FlexStartInStreamingPointsAtTheSubField) {
  const std::string arg = "--dataflow_service_options=worker_accelerator=" + kL4 + ";provisioning_model:FLEX_START";
  Diagnostic d = Only(Check({arg, "--machine_type=g2-standard-8", "--streaming"}), "flex-start-batch-only");
  EXPECT_EQ(arg.substr(d.caret_offset, d.caret_length), "provisioning_model:FLEX_START");
  Diagnostic spot = Only(Check({"--dataflow_service_options=worker_accelerator=" + kL4 + ";provisioning_model:SPOTT",
                                "--machine_type=g2-standard-8"}),
                         "option-syntax");
  EXPECT_TRUE(Has(spot.message, "unknown provisioning model 'SPOTT'")) << spot.message;
  EXPECT_TRUE(Has(spot.help, "FLEX_START")) << spot.help;
}

TEST(Mistakes, CountZeroIsTheGpuCountRule) {
  const std::string arg = "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:0;install-nvidia-driver";
  Diagnostic d = Only(Check({arg, "--machine_type=g2-standard-8"}), "gpu-count-invalid");
  EXPECT_EQ(arg.substr(d.caret_offset, d.caret_length), "0");
  EXPECT_TRUE(Has(d.message, "count:0")) << d.message;
}

TEST(Mistakes, DriverLatestIsAccepted) {
  auto o = ParsePipelineOptions({"--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:latest"});
  ASSERT_TRUE(o.worker_accelerator);
  EXPECT_TRUE(o.worker_accelerator->install_driver);
  EXPECT_EQ(o.worker_accelerator->driver_arg, "latest");
  EXPECT_TRUE(o.diagnostics.empty());
}

TEST(Mistakes, GpuTypeWrittenLikeAProductNameGetsDidYouMean) {
  struct Row { const char* written; std::vector<const char*> suggested; };
  const Row rows[] = {
      {"L4", {"'nvidia-l4'"}},
      {"nvidia-l4-gpu", {"'nvidia-l4'"}},
      {"a100", {"'nvidia-tesla-a100'", "'nvidia-a100-80gb'"}},
      {"nvidia-h100-80gb-mega", {"'nvidia-h100-mega-80gb' (NVIDIA H100 Mega 80GB, a3 machine types)"}},
      {"Tesla T4", {"'nvidia-tesla-t4'"}},
  };
  for (const Row& row : rows) {
    Diagnostic d = Only(Check({"--dataflow_service_options=worker_accelerator=type:" + std::string(row.written) +
                               ";count:1;install-nvidia-driver"}),
                        "gpu-unknown-type");
    for (const char* s : row.suggested) EXPECT_TRUE(Has(d.message, s)) << row.written << ": " << d.message;
    EXPECT_TRUE(Has(d.message, "did you mean")) << d.message;
  }
}

TEST(Mistakes, K80IsRefusedAsRetired) {
  Diagnostic d = Only(Check({"--dataflow_service_options=worker_accelerator=type:nvidia-tesla-k80;count:1;install-nvidia-driver",
                             "--machine_type=n1-standard-4"}),
                      "gpu-unknown-type");
  EXPECT_TRUE(Has(d.message, "retired")) << d.message;
  EXPECT_EQ(d.severity, Severity::kError);
}

TEST(Mistakes, MangledWorkerAcceleratorIsAnErrorWithTheBareValue) {
  const std::string want = "--dataflow_service_options=\"worker_accelerator=" + kL4 + "\"";
  for (const std::string& value : {"['worker_accelerator=" + kL4 + "']", "\"worker_accelerator=" + kL4 + "\"",
                                   "\"worker_accelerator=" + kL4,  // an unbalanced quote kept by the shell
                                   "worker_accelerator:" + kL4, kL4, "worker_acclerator=" + kL4}) {
    Diagnostic d = Only(Check({"--dataflow_service_options=" + value}), "accelerator-mangled");
    EXPECT_EQ(d.severity, Severity::kError);
    EXPECT_TRUE(Has(d.help, want)) << value << ": " << d.help;
    EXPECT_TRUE(Has(d.message, "without a GPU")) << d.message;
  }
  Diagnostic list = Only(Check({"--dataflow_service_options=['worker_accelerator=" + kL4 + "']"}), "accelerator-mangled");
  EXPECT_TRUE(Has(list.message, "Python list")) << list.message;
}

TEST(Mistakes, UnknownServiceOptionWarnsAndQuotesIt) {
  Diagnostic d = Only(Check({"--dataflow_service_options=enable_primee"}), "service-option-unknown");
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_TRUE(Has(d.message, "'enable_primee'")) << d.message;
  EXPECT_TRUE(Has(d.message, "did you mean 'enable_prime'")) << d.message;
}

TEST(Mistakes, EveryNewDiagnosticRendersInTextAndJson) {
  auto all = Check({"--streaming", "--worker_accelerator=" + kL4, "--dataflow_service_options=['worker_accelerator=" + kL4 + "']",
                    "--dataflow_service_options=foo", "--experiments=a,,b", "--flexrs_goal=COST_OPTIMIZED",
                    "--resource_hints=accelerator=" + kL4},
                   "", CheckFor::kLocalRun);
  std::string text = RenderTextReport(all, nullptr);
  for (const char* code : {"error[streaming-unsupported]", "error[service-option-as-flag]", "error[accelerator-mangled]",
                           "error[flexrs-gpu]", "error[streaming-right-fitting]", "warning[service-option-unknown]",
                           "warning[list-empty-item]", "warning[beam-version-split]"}) {
    EXPECT_TRUE(Has(text, code)) << code << "\n" << text;
  }
  auto j = nlohmann::json::parse(RenderJsonReport(all, nullptr));
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["errors"], 5);
  EXPECT_EQ(j["warnings"], 3);
  for (const auto& d : j["diagnostics"]) {
    EXPECT_FALSE(d["doc_url"].get<std::string>().empty()) << d.dump();
    EXPECT_TRUE(d.contains("origin")) << d.dump();
  }
}

}  // namespace
}  // namespace dfw
