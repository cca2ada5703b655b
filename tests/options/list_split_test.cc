// The list rules of one --experiments / --dataflow_service_options occurrence: a table of
// Beam Python's _smart_split cases (results as Beam 2.77 returns them), Java's comma lists, and
// what the parser makes of them.
#include "dfw/options/list_split.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "dfw/options/parse.h"

namespace dfw {
namespace {

using Items = std::vector<std::string>;

Items Texts(std::string_view value, ListSplit how) {
  ListSplitResult r = SplitListValue(value, how);
  Items out;
  for (std::string_view t : ListItemTexts(value, r)) out.emplace_back(t);
  return out;
}

struct SplitCase {
  const char* value;
  Items beam;      // Beam >= 2.67
  std::size_t empty;  // empty items Beam drops
  Items java;
};

class BeamSmartSplit : public ::testing::TestWithParam<SplitCase> {};

TEST_P(BeamSmartSplit, MatchesBeamAndJava) {
  const SplitCase& c = GetParam();
  EXPECT_EQ(Texts(c.value, ListSplit::kBeamPython), c.beam) << "'" << c.value << "'";
  EXPECT_EQ(SplitListValue(c.value, ListSplit::kBeamPython).empty_items.size(), c.empty) << "'" << c.value << "'";
  EXPECT_EQ(Texts(c.value, ListSplit::kJava), c.java) << "'" << c.value << "'";
  EXPECT_EQ(Texts(c.value, ListSplit::kNone), Items{c.value});
}

const SplitCase kCases[] = {
    {"a", {"a"}, 0, {"a"}},
    {"a,b", {"a", "b"}, 0, {"a", "b"}},
    {"a=b,c", {"a=b", "c"}, 0, {"a=b", "c"}},
    {"a=b=c,d", {"a=b=c,d"}, 0, {"a=b=c", "d"}},
    {"abc,def,master_key=k1=v1,k2=v2", {"abc", "def", "master_key=k1=v1,k2=v2"}, 0,
     {"abc", "def", "master_key=k1=v1", "k2=v2"}},
    {"a=1,b=2,c=3", {"a=1", "b=2", "c=3"}, 0, {"a=1", "b=2", "c=3"}},
    {"  a,  b ", {"a", "b"}, 0, {"  a", "  b "}},
    {"a,\tb\t", {"a", "b"}, 0, {"a", "\tb\t"}},
    {"a,,b", {"a", "b"}, 1, {"a", "", "b"}},
    {",a,", {"a"}, 2, {"", "a", ""}},
    {",,,", {}, 4, {"", "", "", ""}},
    {"", {}, 1, {""}},
    {" , ", {}, 2, {" ", " "}},
    {"x=,y", {"x=", "y"}, 0, {"x=", "y"}},
    {"==,a", {"==,a"}, 0, {"==", "a"}},
    {"a\xc2\xa0,b", {"a", "b"}, 0, {"a\xc2\xa0", "b"}},  // NBSP is whitespace to str.strip()
    {"\xe3\x80\x80" "a", {"a"}, 0, {"\xe3\x80\x80" "a"}},   // so is the ideographic space
    // The two lines of the issue, as Beam 2.77 reads them.
    {"use_runner_v2,no_use_multiple_sdk_containers", {"use_runner_v2", "no_use_multiple_sdk_containers"}, 0,
     {"use_runner_v2", "no_use_multiple_sdk_containers"}},
    {"enable_prime,worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps",
     {"enable_prime", "worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps"}, 0,
     {"enable_prime", "worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps"}},
    // One '=' in the accelerator: the comma still separates (a quirk worth a test).
    {"worker_accelerator=type:nvidia-l4;count:1,use_runner_v2", {"worker_accelerator=type:nvidia-l4;count:1", "use_runner_v2"},
     0, {"worker_accelerator=type:nvidia-l4;count:1", "use_runner_v2"}},
    // Two '=' (a driver version): every later comma stays inside.
    {"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:version=latest,enable_prime",
     {"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:version=latest,enable_prime"}, 0,
     {"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:version=latest", "enable_prime"}},
};

INSTANTIATE_TEST_SUITE_P(Table, BeamSmartSplit, ::testing::ValuesIn(kCases));

TEST(ListSplit, OffsetsPointAtTheStrippedItem) {
  std::string_view v = "  a ,b=c=d,e";
  ListSplitResult r = SplitListValue(v, ListSplit::kBeamPython);
  ASSERT_EQ(r.items.size(), 2u);
  EXPECT_EQ(r.items[0].offset, 2u);
  EXPECT_EQ(r.items[0].length, 1u);
  EXPECT_EQ(v.substr(r.items[1].offset, r.items[1].length), "b=c=d,e");
  EXPECT_TRUE(r.commas_kept);
  EXPECT_FALSE(SplitListValue("a=b,c", ListSplit::kBeamPython).commas_kept);
}

TEST(ListSplit, HugeAndHostileInputNeverThrows) {
  std::string big(1 << 20, ',');
  EXPECT_TRUE(SplitListValue(big, ListSplit::kBeamPython).items.empty());
  std::string mixed;
  for (int i = 0; i < 10000; ++i) mixed += "x=\xe2\x80,\xff ";
  ListSplitResult r = SplitListValue(mixed, ListSplit::kBeamPython);
  for (const ListItem& item : r.items) EXPECT_LE(item.offset + item.length, mixed.size());
}

std::vector<std::string> Values(const std::vector<OptionValue>& list) {
  std::vector<std::string> out;
  for (const auto& v : list) out.push_back(v.value);
  return out;
}

std::vector<std::string> Codes(const PipelineOptions& o) {
  std::vector<std::string> out;
  for (const auto& d : o.diagnostics) out.push_back(d.code);
  return out;
}

TEST(ParseLists, PythonSpellingsSplitLikeBeamAndNoteTheOldReading) {
  const std::string arg = "--experiments=use_runner_v2, no_use_multiple_sdk_containers";
  auto o = ParsePipelineOptions({arg});
  EXPECT_EQ(Values(o.experiments), (std::vector<std::string>{"use_runner_v2", "no_use_multiple_sdk_containers"}));
  EXPECT_EQ(o.experiments[1].origin.value_offset, arg.find("no_use"));
  ASSERT_TRUE(o.no_use_multiple_sdk_containers);
  ASSERT_EQ(Codes(o), std::vector<std::string>{"beam-version-split"});
  EXPECT_NE(o.diagnostics[0].message.find("Beam <= 2.66 reads it as ONE experiment"), std::string::npos)
      << o.diagnostics[0].message;
  EXPECT_NE(o.diagnostics[0].help.find("--experiments=use_runner_v2 --experiments=no_use_multiple_sdk_containers"),
            std::string::npos)
      << o.diagnostics[0].help;
}

TEST(ParseLists, SingularAndPluralServiceOptionSpellingsBothSplit) {
  auto o = ParsePipelineOptions({"--dataflow_service_option", "enable_prime,x=1", "--dataflow_service_options=y"});
  EXPECT_EQ(Values(o.dataflow_service_options), (std::vector<std::string>{"enable_prime", "x=1", "y"}));
  EXPECT_TRUE(o.enable_prime);
}

TEST(ParseLists, OneItemPerOccurrenceNeedsNoNote) {
  auto o = ParsePipelineOptions({"--experiment=a", "--experiments", " b "});
  EXPECT_EQ(Values(o.experiments), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(o.diagnostics.empty());
}

TEST(ParseLists, EmptyItemsAreDroppedWithAWarning) {
  auto o = ParsePipelineOptions({"--experiments=a,,b", "--dataflow_service_options=,,,"});
  EXPECT_EQ(Values(o.experiments), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(o.dataflow_service_options.empty());
  EXPECT_EQ(Codes(o), (std::vector<std::string>{"list-empty-item", "beam-version-split", "list-empty-item"}));
  EXPECT_FALSE(HasErrors(o.diagnostics));
}

TEST(ParseLists, JavaSpellingsKeepJavaCommaLists) {
  auto o = ParsePipelineOptions({"--dataflowServiceOptions=worker_utilization_hint=a=b,enable_prime",
                                 "--experiments=x=1=2,y"});
  EXPECT_EQ(Values(o.dataflow_service_options), (std::vector<std::string>{"worker_utilization_hint=a=b", "enable_prime"}));
  EXPECT_EQ(Values(o.experiments), (std::vector<std::string>{"x=1=2", "y"}));
  EXPECT_TRUE(o.diagnostics.empty());
}

TEST(ParseLists, YamlOptionsBlockIsNeverSplit) {
  auto o = ParsePipelineOptions(
      {}, "options:\n  experiments: a,b\n  dataflow_service_options: [\"worker_utilization_hint=0.9,x\"]\n", "p.yaml");
  EXPECT_EQ(Values(o.experiments), std::vector<std::string>{"a,b"});
  EXPECT_EQ(Values(o.dataflow_service_options), std::vector<std::string>{"worker_utilization_hint=0.9,x"});
  EXPECT_TRUE(o.diagnostics.empty());
}

TEST(ParseLists, KeptCommaBeforeAKnownOptionWarns) {
  auto cli = ParsePipelineOptions(
      {"--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:version=latest,"
       "enable_prime"});
  ASSERT_EQ(cli.dataflow_service_options.size(), 1u);
  ASSERT_FALSE(cli.diagnostics.empty());
  EXPECT_EQ(cli.diagnostics[0].code, "service-option-comma");
  EXPECT_NE(cli.diagnostics[0].message.find("more than one '='"), std::string::npos) << cli.diagnostics[0].message;

  auto yaml = ParsePipelineOptions({}, "options:\n  dataflow_service_options: [\"enable_prime,use_nvidia_mps\"]\n", "p.yaml");
  ASSERT_EQ(yaml.diagnostics.size(), 1u);
  EXPECT_EQ(yaml.diagnostics[0].code, "service-option-comma");
  EXPECT_NE(yaml.diagnostics[0].message.find("keyword arguments"), std::string::npos);
}

TEST(ParseLists, TenThousandRepeatedFlagsAndAMegabyteArgument) {
  std::vector<std::string> args(10000, "--experiments=a,b");
  args.push_back("--dataflow_service_options=" + std::string(1 << 20, 'x') + ",y");
  args.push_back("--" + std::string(1 << 20, 'z') + "=1");  // an unknown flag of 1 MB: a warning, no did-you-mean
  auto o = ParsePipelineOptions(args);
  EXPECT_EQ(o.experiments.size(), 20000u);
  EXPECT_EQ(o.dataflow_service_options.size(), 2u);
  ASSERT_EQ(o.unknown_flags.size(), 1u);
  auto unknown = std::find_if(o.diagnostics.begin(), o.diagnostics.end(),
                              [](const Diagnostic& d) { return d.code == "unknown-flag"; });
  ASSERT_NE(unknown, o.diagnostics.end());
  EXPECT_EQ(unknown->message.find("did you mean"), std::string::npos);
  for (const auto& d : o.diagnostics) EXPECT_LT(d.message.size(), 2000u) << d.code;
}

}  // namespace
}  // namespace dfw
