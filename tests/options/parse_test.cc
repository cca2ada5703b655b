#include "dfw/options/parse.h"

#include <gtest/gtest.h>

#include "dfw/options/accelerator.h"

namespace dfw {
namespace parse_test {

std::vector<std::string> Values(const std::vector<OptionValue>& list) {
  std::vector<std::string> out;
  for (const auto& v : list) out.push_back(v.value);
  return out;
}

// Beam >= 2.67 splits Python list flags at commas (list_split_test.cc has the whole table).
TEST(ParseOptions, PythonServiceOptionsAreRepeatableAndCommaSplitLikeBeam) {
  auto o = ParsePipelineOptions({"--dataflow_service_option", "whizz=bang", "--dataflow_service_options=beep=boop",
                                 "--dataflow_service_options=a,b"});
  EXPECT_EQ(Values(o.dataflow_service_options), (std::vector<std::string>{"whizz=bang", "beep=boop", "a", "b"}));
  EXPECT_FALSE(o.java_list_style);
  // Beam's own test names (whizz=bang, ...) are not Dataflow service options: each draws a warning.
  std::vector<std::string> codes;
  for (const auto& d : o.diagnostics) codes.push_back(d.code);
  EXPECT_EQ(codes, (std::vector<std::string>{"beam-version-split", "service-option-unknown", "service-option-unknown",
                                             "service-option-unknown", "service-option-unknown"}));
  EXPECT_FALSE(HasErrors(o.diagnostics));
}

TEST(ParseOptions, JavaListsAreCommaSplitWithOffsetsOfEachElement) {
  auto o = ParsePipelineOptions({"--dataflowServiceOptions=enable_prime,x", "--experiments=a,b"});
  EXPECT_EQ(Values(o.dataflow_service_options), (std::vector<std::string>{"enable_prime", "x"}));
  EXPECT_EQ(Values(o.experiments), (std::vector<std::string>{"a", "b"}));  // Java mode: plain --experiments splits too
  ASSERT_TRUE(o.enable_prime);
  EXPECT_EQ(o.dataflow_service_options[1].origin.value_offset, std::string("--dataflowServiceOptions=enable_prime,").size());
}

TEST(ParseOptions, SpaceSeparatedValuesAndBoolFlagsDoNotSwallowTheNextFlag) {
  auto o = ParsePipelineOptions({"--machine_type", "g2-standard-8", "--streaming", "--experiment", "use_runner_v2"});
  ASSERT_TRUE(o.machine_type);
  EXPECT_EQ(o.machine_type->value, "g2-standard-8");
  EXPECT_EQ(o.machine_type->origin.text, "--machine_type g2-standard-8");
  EXPECT_EQ(o.machine_type->origin.value_offset, 15u);
  EXPECT_TRUE(o.streaming);
  EXPECT_EQ(Values(o.experiments), std::vector<std::string>{"use_runner_v2"});
}

TEST(ParseOptions, MachineTypeSpellingsShareOneDestinationAndTheLastWins) {
  auto o = ParsePipelineOptions({"--workerMachineType=a", "--worker_machine_type=b", "--machine_type=c"});
  EXPECT_EQ(o.machine_type->value, "c");
}

TEST(ParseOptions, WorkerAcceleratorInAllThreeForms) {
  const std::string acc = "type:nvidia-l4;count:1;install-nvidia-driver:5xx;use_nvidia_mps";
  auto service = ParsePipelineOptions({"--dataflow_service_options=worker_accelerator=" + acc});
  ASSERT_TRUE(service.worker_accelerator);
  EXPECT_EQ(service.worker_accelerator->form, AcceleratorForm::kServiceOption);
  EXPECT_EQ(service.worker_accelerator->gpu_type, "nvidia-l4");
  EXPECT_EQ(service.worker_accelerator->count, 1);
  EXPECT_TRUE(service.worker_accelerator->install_driver);
  EXPECT_EQ(service.worker_accelerator->driver_arg, "5xx");
  EXPECT_TRUE(service.worker_accelerator->use_mps);

  auto experiment = ParsePipelineOptions({"--experiments=worker_accelerator=" + acc});
  ASSERT_TRUE(experiment.worker_accelerator);
  EXPECT_EQ(experiment.worker_accelerator->form, AcceleratorForm::kExperiment);

  auto hint = ParsePipelineOptions({"--resource_hints=accelerator=\"type:nvidia-l4;count:2;machine_type:g2-standard-24\""});
  ASSERT_TRUE(hint.accelerator_hint);
  EXPECT_EQ(hint.accelerator_hint->count, 2);
  EXPECT_EQ(hint.accelerator_hint->machine_type, "g2-standard-24");
  EXPECT_FALSE(hint.worker_accelerator);
  EXPECT_TRUE(hint.diagnostics.empty());
}

TEST(ParseOptions, SubFieldOffsetsPointIntoTheFlagText) {
  const std::string arg = "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:2;use_nvidia_mps";
  auto o = ParsePipelineOptions({arg});
  ASSERT_TRUE(o.worker_accelerator);
  const auto& spec = *o.worker_accelerator;
  EXPECT_EQ(arg.substr(spec.count_field->offset, spec.count_field->text.size()), "count:2");
  EXPECT_EQ(arg.substr(spec.type_field->offset, spec.type_field->text.size()), "type:nvidia-l4");
  EXPECT_EQ(arg.substr(spec.mps_field->offset, spec.mps_field->text.size()), "use_nvidia_mps");
}

TEST(ParseOptions, MalformedCountIsOptionSyntaxWithCaretUnderTheValue) {
  const std::string arg = "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:-3";
  auto o = ParsePipelineOptions({arg});
  ASSERT_EQ(o.diagnostics.size(), 1u);
  const Diagnostic& d = o.diagnostics[0];
  EXPECT_EQ(d.code, "option-syntax");
  EXPECT_NE(d.message.find("'-3'"), std::string::npos) << d.message;
  EXPECT_EQ(arg.substr(d.caret_offset, d.caret_length), "-3");
}

TEST(ParseOptions, NearMissIsAnErrorWithDidYouMeanAndUnknownIsAWarning) {
  auto o = ParsePipelineOptions({"--dataflow_servce_options=x", "--my_own_flag=1"});
  ASSERT_EQ(o.diagnostics.size(), 2u);
  EXPECT_EQ(o.diagnostics[0].code, "misspelled-flag");
  EXPECT_EQ(o.diagnostics[0].severity, Severity::kError);
  EXPECT_NE(o.diagnostics[0].message.find("did you mean '--dataflow_service_options'"), std::string::npos);
  EXPECT_EQ(o.diagnostics[1].code, "unknown-flag");
  EXPECT_EQ(o.diagnostics[1].severity, Severity::kWarning);
  EXPECT_TRUE(o.dataflow_service_options.empty());
}

TEST(ParseOptions, YamlBlockThenCommandLineOverridesScalarsAndAppendsLists) {
  const std::string yaml =
      "pipeline:\n  transforms: []\n"
      "options:\n"
      "  machine_type: n1-standard-4\n"
      "  number_of_worker_harness_threads: 3\n"
      "  experiments: [use_runner_v2, \"a,b\"]\n";
  auto o = ParsePipelineOptions({"--machine_type=g2-standard-8", "--experiments=c"}, yaml, "p.yaml");
  EXPECT_TRUE(o.diagnostics.empty());
  EXPECT_EQ(o.machine_type->value, "g2-standard-8");
  EXPECT_EQ(o.number_of_worker_harness_threads, 3);
  EXPECT_EQ(Values(o.experiments), (std::vector<std::string>{"use_runner_v2", "a,b", "c"}));
  EXPECT_EQ(o.number_of_worker_harness_threads_origin->origin.where, "p.yaml:5:37");
}

TEST(ParseOptions, YamlErrorsNameFileLineAndColumn) {
  auto o = ParsePipelineOptions({}, "options:\n  machine_type: [oops\n", "bad.yaml");
  ASSERT_EQ(o.diagnostics.size(), 1u);
  EXPECT_EQ(o.diagnostics[0].code, "option-syntax");
  EXPECT_EQ(o.diagnostics[0].origin->where.rfind("bad.yaml:", 0), 0u) << o.diagnostics[0].origin->where;

  auto misspelled = ParsePipelineOptions({}, "options:\n  machine_typ: g2-standard-8\n", "m.yaml");
  ASSERT_EQ(misspelled.diagnostics.size(), 1u);
  const Diagnostic& d = misspelled.diagnostics[0];
  EXPECT_EQ(d.code, "misspelled-flag");
  EXPECT_EQ(d.origin->where, "m.yaml:2:16");
  EXPECT_EQ(d.origin->text.substr(d.caret_offset, d.caret_length), "machine_typ");
}

TEST(ParseOptions, QuotedYamlValueOffsetPointsInsideTheQuotes) {
  auto o = ParsePipelineOptions({}, "options:\n  dataflow_service_options: [\"worker_accelerator=type:x;count:9x\"]\n", "q.yaml");
  ASSERT_EQ(o.diagnostics.size(), 1u);
  const Diagnostic& d = o.diagnostics[0];
  EXPECT_EQ(d.origin->text.substr(d.caret_offset, d.caret_length), "9x");
}

TEST(ParseOptions, FlagArity) {
  EXPECT_EQ(LookupFlagArity("machine_type"), FlagArity::kValue);
  EXPECT_EQ(LookupFlagArity("streaming"), FlagArity::kBool);
  EXPECT_EQ(LookupFlagArity("machne_type"), FlagArity::kValue);  // near miss takes the known arity
  EXPECT_EQ(LookupFlagArity("zzz_unrelated"), FlagArity::kUnknown);
}

TEST(ParseByteSize, Units) {
  EXPECT_EQ(ParseByteSize("4GB"), 4000000000ull);
  EXPECT_EQ(ParseByteSize("2 GiB"), 2ull << 30);
  EXPECT_EQ(ParseByteSize("512MiB"), 512ull << 20);
  EXPECT_EQ(ParseByteSize("100"), 100ull);
  EXPECT_FALSE(ParseByteSize("lots"));
  EXPECT_FALSE(ParseByteSize("4XB"));
  EXPECT_FALSE(ParseByteSize("1e30GB"));
}

}  // namespace parse_test
}  // namespace dfw

namespace dfw {
namespace parse_test {

TEST(ParseOptions, NearMissOfAWorkerShapingFlagIsAnErrorOfAnyOtherAWarning) {
  auto shaping = ParsePipelineOptions({"--machine=g2-standard-8"});  // an abbreviation: Beam takes none
  ASSERT_EQ(shaping.diagnostics.size(), 1u);
  EXPECT_EQ(shaping.diagnostics[0].code, "misspelled-flag");
  EXPECT_NE(shaping.diagnostics[0].help.find("no abbreviation"), std::string::npos) << shaping.diagnostics[0].help;

  auto user = ParsePipelineOptions({"--project_id", "p", "--sdk_location=container"});
  ASSERT_EQ(user.diagnostics.size(), 1u);  // --sdk_location is a Beam option: accepted silently
  EXPECT_EQ(user.diagnostics[0].code, "unknown-flag");
  EXPECT_EQ(user.diagnostics[0].severity, Severity::kWarning);
  EXPECT_NE(user.diagnostics[0].message.find("did you mean '--project'"), std::string::npos) << user.diagnostics[0].message;
  EXPECT_EQ(user.unknown_flags, std::vector<std::string>{"project_id"});
  EXPECT_FALSE(user.project);
}

TEST(ParseOptions, BeamBoolFlagsDoNotSwallowTheNextArgument) {
  auto o = ParsePipelineOptions({"--save_main_session", "--no_use_public_ips", "--machine_type", "g2-standard-4"});
  EXPECT_TRUE(o.diagnostics.empty());
  ASSERT_TRUE(o.machine_type);
  EXPECT_EQ(o.machine_type->value, "g2-standard-4");
}

}  // namespace parse_test
}  // namespace dfw
