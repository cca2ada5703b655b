// The real binary on Jinja-templated pipeline files: --jinja_variables and --jinja_variable_flags
// on run/plan/export, --render, template errors (exit 2, file:line), and the rendered text being
// what the job records for its SDK processes.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <vector>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_test_util.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using dfw::testing::RunDfworker;
using dfw::testing::TempDir;

// Orders → Filter(qty > MIN_QTY) → WriteToJson, parameterised as Beam's examples are.
const char* kTemplate =
    "# A templated pipeline: {{ not rendered in this comment }}\n"
    "{% set where = out_dir ~ '/orders' %}\n"
    "pipeline:\n"
    "  type: chain\n"
    "  source:\n"
    "    type: ReadFromJson\n"
    "    config: {path: \"{{ input }}\"}\n"
    "  transforms:\n"
    "{% for q in thresholds %}\n"
    "    - type: Filter\n"
    "      name: AtLeast{{ q }}\n"
    "      config: {keep: \"qty >= {{ q }}\"}\n"
    "{% endfor %}\n"
    "  sink:\n"
    "    type: WriteToJson\n"
    "    config: {path: \"{{ where }}\", file_name_suffix: .jsonl}\n";

// Writes the input (qty 0..4) into `dir` and returns the variables that point at it.
std::string Vars(const TempDir& dir) {
  std::string rows;
  for (int i = 0; i < 10; ++i) rows += "{\"order_id\": " + std::to_string(i) + ", \"qty\": " + std::to_string(i % 5) + "}\n";
  const std::string input = dir.Write("in/orders.jsonl", rows);
  return R"({"input": ")" + input + R"(", "out_dir": ")" + dir.path() + R"(", "thresholds": [1, 2]})";
}

TEST(Jinja, DryRunRendersWithJinjaVariables) {
  TempDir dir("dfw-jinja");
  const std::string p = dir.Write("p.yaml", kTemplate);
  auto o = RunDfworker({"run", p, "--dry_run", "--jinja_variables=" + Vars(dir)});
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out.find("unknown"), std::string::npos) << o.out;  // not an unknown pipeline flag
}

TEST(Jinja, RenderPrintsTheRenderedFileOnStdout) {
  TempDir dir("dfw-jinja");
  const std::string p = dir.Write("p.yaml", kTemplate);
  const std::string out_file = dir / "rendered.yaml";
  auto o = RunDfworker({"run", p, "--dry_run", "--render", "--jinja_variables=" + Vars(dir)});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const std::string expected =
      "\n"  // the leading comment line, kept as an empty line
      "\n"
      "pipeline:\n"
      "  type: chain\n"
      "  source:\n"
      "    type: ReadFromJson\n"
      "    config: {path: \"" + dir.path() + "/in/orders.jsonl\"}\n"
      "  transforms:\n"
      "\n"
      "    - type: Filter\n"
      "      name: AtLeast1\n"
      "      config: {keep: \"qty >= 1\"}\n"
      "\n"
      "    - type: Filter\n"
      "      name: AtLeast2\n"
      "      config: {keep: \"qty >= 2\"}\n"
      "\n"
      "  sink:\n"
      "    type: WriteToJson\n"
      "    config: {path: \"" + dir.path() + "/orders\", file_name_suffix: .jsonl}\n";
  EXPECT_EQ(o.out.substr(0, expected.size()), expected) << o.out;
}

TEST(Jinja, UndefinedVariableExitsTwoNamingFileAndLine) {
  TempDir dir("dfw-jinja");
  const std::string p = dir.Write("p.yaml", kTemplate);
  auto o = RunDfworker({"run", p, "--dry_run", "--jinja_variables={\"out_dir\": \"x\", \"thresholds\": []}"});
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find(p + ":7: 'input' is undefined"), std::string::npos) << o.out;
}

TEST(Jinja, JinjaVariablesMustBeAJsonObject) {
  TempDir dir("dfw-jinja");
  const std::string p = dir.Write("p.yaml", kTemplate);
  auto o = RunDfworker({"run", p, "--dry_run", "--jinja_variables=[1]"});
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("--jinja_variables: expected a JSON object"), std::string::npos) << o.out;
}

TEST(Jinja, VariableFlagsBecomeVariablesAndLeaveThePipelineFlags) {
  TempDir dir("dfw-jinja");
  const std::string p = dir.Write("p.yaml", kTemplate);
  // input comes from its own flag (the JSON has none); the flag is not passed on as a pipeline option.
  auto o = RunDfworker({"run", p, "--dry_run", "--render", "--jinja_variable_flags=input",
                        "--input=" + std::string(DFW_SOURCE_DIR) + "/pipelines/data/orders/part-00001.jsonl",
                        "--jinja_variables={\"out_dir\": \"" + dir.path() + "\", \"thresholds\": [3]}"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("orders/part-00001.jsonl\"}"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("warning["), std::string::npos) << o.out;
  // Without --jinja_variable_flags the same flag is an unknown pipeline flag (so the check above can fail).
  auto plain = RunDfworker({"run", p, "--dry_run", "--input=x", "--jinja_variables=" + Vars(dir)});
  EXPECT_NE(plain.out.find("warning["), std::string::npos) << plain.out;
}

TEST(Jinja, IncludeIsFoundBesideThePipelineFile) {
  TempDir dir("dfw-jinja");
  dir.Write("parts/sink.yaml", "  sink:\n    type: WriteToJson\n    config: {path: \"{{ out_dir }}/x\"}\n");
  const std::string p = dir.Write(
      "p.yaml",
      "pipeline:\n  type: chain\n  source:\n    type: ReadFromJson\n    config: {path: \"" + std::string(DFW_SOURCE_DIR) +
          "/pipelines/data/orders/part-00000.jsonl\"}\n  transforms:\n    - type: Filter\n      config: {keep: \"qty > 0\"}\n"
          "{% include 'parts/sink.yaml' %}\n");
  auto o = RunDfworker({"run", p, "--dry_run", "--render", "--jinja_variables={\"out_dir\": \"/tmp/o\"}"}, "/");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("    config: {path: \"/tmp/o/x\"}\n"), std::string::npos) << o.out;
}

TEST(Jinja, PlanAndExportRenderToo) {
  TempDir dir("dfw-jinja");
  const std::string p = dir.Write("p.yaml", kTemplate);
  auto plan = RunDfworker({"plan", p, "--jinja_variables=" + Vars(dir)});
  EXPECT_EQ(plan.exit_code, 0) << plan.out;
  auto bad = RunDfworker({"plan", p});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("is undefined"), std::string::npos) << bad.out;
  auto exp = RunDfworker({"export", p, "--to", "beam", "--out", dir / "beam", "--jinja_variables=" + Vars(dir)});
  ASSERT_EQ(exp.exit_code, 0) << exp.out;
  const std::string exported = dfw::testing::ReadFile(dir / "beam/pipeline.yaml");
  EXPECT_NE(exported.find("qty >= 2"), std::string::npos) << exported;
  EXPECT_EQ(exported.find("{{"), std::string::npos) << exported;
}

TEST(Jinja, TheJobRecordsTheRenderedPipelineForItsSdkProcesses) {
  TempDir dir("dfw-jinja");
  const std::string p = dir.Write("p.yaml", kTemplate);
  const std::string job = dir / "job";
  auto o = RunDfworker({"run", p, "--job_dir=" + job, "--sdk_worker_parallelism=1", "--jinja_variables=" + Vars(dir)});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const nlohmann::json info = nlohmann::json::parse(dfw::testing::ReadFile(job + "/job.json"));
  const std::string recorded = info.at("params").at("pipeline_yaml").get<std::string>();
  EXPECT_NE(recorded.find("name: AtLeast2"), std::string::npos) << recorded;
  EXPECT_EQ(recorded.find("{%"), std::string::npos) << recorded;
  // The rows: qty >= 2 (the SDK process parsed the rendered text): qty 2, 3, 4 twice each.
  int rows = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().filename().string().starts_with("orders-")) {
      std::ifstream in(e.path());
      std::string line;
      while (std::getline(in, line)) {
        ++rows;
        EXPECT_GE(nlohmann::json::parse(line).at("qty").get<int>(), 2) << line;
      }
    }
  }
  EXPECT_EQ(rows, 6);
}

}  // namespace

// An include that is not a regular file is refused by name and kind before it is opened (a FIFO
// would block the launcher, /dev/zero never end); a missing one says where it was looked for.
TEST(Jinja, AnIncludeThatIsNotARegularFileIsRefusedNamingItsKind) {
  TempDir dir("dfw-jinja");
  ASSERT_EQ(::mkfifo((dir / "fifo.yaml").c_str(), 0600), 0);
  fs::create_directories(dir / "folder.yaml");
  fs::create_symlink("/dev/zero", dir / "zero.yaml");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fifo.yaml", "is not a regular file: it is a FIFO"},
      {"folder.yaml", "is not a regular file: it is a directory"},
      {"zero.yaml", "is not a regular file: it is a character device"},
      {"absent.yaml", "template 'absent.yaml' not found (looked for absent.yaml, "},
  };
  for (const auto& [name, expected] : cases) {
    SCOPED_TRACE(name);
    const std::string p = dir.Write("p-" + name, "pipeline:\n  type: chain\n  transforms:\n"
                                                 "    - type: Create\n      config: {elements: [1]}\n"
                                                 "{% include '" + name + "' %}\n");
    auto o = RunDfworker({"run", p, "--dry_run"}, dir.path());
    EXPECT_EQ(o.exit_code, 2) << o.out;
    EXPECT_NE(o.out.find(expected), std::string::npos) << o.out;
  }
}
