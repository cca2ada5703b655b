// The real binary running a pipeline's own tests: `dfworker test` and `run --test` exit 0/1/2,
// print PASS/FAIL with the row diff, --fix_tests rewrites only the failing elements (and the
// fixed file then passes), --create_test records a test that passes, --junit_xml, and nothing is
// written by the pipeline's sinks.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli/cli_test_util.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using dfw::testing::ReadFile;
using dfw::testing::RunDfworker;
using dfw::testing::TempDir;
using dfw::testing::WriteFile;

// Rows → Partition by size → a writer per output; `tests` is appended as the file's tests:.
std::string PipelineFile(const TempDir& dir, const std::string& tests) {
  return "pipeline:\n"
         "  transforms:\n"
         "    - {type: ReadFromJson, name: Read, config: {path: '" + (dir / "in.jsonl") + "'}}\n"
         "    - type: Partition\n"
         "      name: Split\n"
         "      input: Read\n"
         "      config: {by: \"'big' if n > 5 else 'small'\", language: python, outputs: [small, big]}\n"
         "    - {type: WriteToJson, name: WriteBig, input: Split.big, config: {path: '" + (dir / "out/big") + "'}}\n"
         "    - {type: WriteToJson, name: WriteSmall, input: Split.small, config: {path: '" + (dir / "out/small") + "'}}\n"
         "tests:\n" + tests;
}

const char* kPass =
    "  - name: splits by size\n"
    "    mock_outputs: [{name: Read, elements: [{n: 1}, {n: 9}, {n: 3}]}]\n"
    "    expected_outputs:\n"
    "      - name: Split.small\n"
    "        elements: [{n: 3}, {n: 1}]\n"
    "    expected_inputs:\n"
    "      - {name: WriteBig, elements: [{n: 9.0}]}\n";

const char* kFail =
    "  - name: wrong on purpose\n"
    "    mock_outputs: [{name: Read, elements: [{n: 7}, {n: 8}]}]\n"
    "    expected_outputs:\n"
    "      - name: Split.big\n"
    "        elements:\n"
    "          - {n: 7}\n"
    "          - {n: 70}   # a typo\n";

TEST(TestCommand, PassingTestsExitZeroAndWriteNoOutput) {
  TempDir dir;
  WriteFile(dir / "p.yaml", PipelineFile(dir, kPass));
  auto o = RunDfworker({"test", (dir / "p.yaml")});
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("PASS     splits by size (line 11)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("1 passed, 0 failed"), std::string::npos) << o.out;
  EXPECT_FALSE(fs::exists(dir / "out")) << "a test runs no sink";
  auto run = RunDfworker({"run", (dir / "p.yaml"), "--test"});  // Beam's spelling
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("PASS"), std::string::npos) << run.out;
}

TEST(TestCommand, AFailingTestExitsOneWithTheDiff) {
  TempDir dir;
  WriteFile(dir / "p.yaml", PipelineFile(dir, std::string(kPass) + kFail));
  auto o = RunDfworker({"test", (dir / "p.yaml"), "--junit_xml", (dir / "report.xml")});
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("FAIL     wrong on purpose (line 18)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("expected_outputs 'Split.big' (" + (dir / "p.yaml") + ":21): 1 missing, 1 unexpected"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("- {n: 70}    # missing: expected, not produced"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("+ {n: 8}    # unexpected: produced, not expected"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("1 passed, 1 failed"), std::string::npos) << o.out;
  const std::string xml = ReadFile(dir / "report.xml");
  EXPECT_NE(xml.find("tests=\"2\" failures=\"1\" errors=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"rows differ\">"), std::string::npos) << xml;
}

TEST(TestCommand, FixTestsRewritesOnlyTheFailingElementsAndTheFileThenPasses) {
  TempDir dir;
  const std::string before = PipelineFile(dir, std::string(kPass) + kFail);
  WriteFile(dir / "p.yaml", before);
  auto fix = RunDfworker({"test", (dir / "p.yaml"), "--fix_tests"});
  EXPECT_EQ(fix.exit_code, 0) << fix.out;  // as on Beam: with --fix_tests a mismatch is recorded, not failed
  EXPECT_NE(fix.out.find("fixed 1 expectation in"), std::string::npos) << fix.out;
  std::string want = before;
  const std::string old_rows = "          - {n: 7}\n          - {n: 70}   # a typo\n";
  want.replace(want.find(old_rows), old_rows.size(), "          - {n: 7}\n          - {n: 8}\n");
  EXPECT_EQ(ReadFile(dir / "p.yaml"), want);
  auto again = RunDfworker({"test", (dir / "p.yaml")});
  EXPECT_EQ(again.exit_code, 0) << again.out;
}

TEST(TestCommand, CreateTestRecordsATestThatPasses) {
  TempDir dir;
  WriteFile(dir / "in.jsonl", "{\"n\": 2}\n{\"n\": 6}\n{\"n\": 4}\n");
  WriteFile(dir / "p.yaml", PipelineFile(dir, kPass));
  auto suite = (dir / "suite.yaml");
  auto made = RunDfworker({"test", (dir / "p.yaml"), "--create_test", "--test_suite", suite});
  ASSERT_EQ(made.exit_code, 0) << made.out;
  const std::string text = ReadFile(suite);
  EXPECT_NE(text.find("      - name: Read\n        elements:\n          - {n: 2}\n          - {n: 4}\n          - {n: 6}\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("      - name: WriteBig\n        elements:\n          - {n: 6}\n"), std::string::npos) << text;
  auto run = RunDfworker({"test", (dir / "p.yaml"), "--test_suite", suite});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("1 test from " + suite), std::string::npos) << run.out;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(TestCommand, InvalidTestSpecsExitTwoNamingFileAndLine) {
  TempDir dir;
  struct Case {
    std::string tests;
    std::string message;
  } cases[] = {
      {"  - name: t\n    expected_outputs: [{name: Split.small, elements: []}]\n",
       "non-mocked source Read (ReadFromJson, "},
      {"  - name: t\n    mock_outputs: [{name: Read, elements: []}]\n    expected_outputs: [{name: Splitt.small, elements: []}]\n",
       ":13: 'Splitt' names no transform of the pipeline (did you mean 'Split'?)"},
      {"  - name: t\n    mock_outputs: [{name: Read, elements: []}]\n    expect_outputs: []\n",
       ":13:5: test 't' (line 11) has unknown attribute 'expect_outputs' (did you mean 'expected_outputs'?)"},
      {"  []\n", "no tests found"},
  };
  for (const Case& c : cases) {
    WriteFile(dir / "p.yaml", PipelineFile(dir, c.tests));
    auto o = RunDfworker({"test", (dir / "p.yaml")});
    EXPECT_EQ(o.exit_code, 2) << c.tests << o.out;
    EXPECT_NE(o.out.find(c.message), std::string::npos) << c.tests << o.out;
  }
  WriteFile(dir / "p.yaml", PipelineFile(dir, kPass));
  auto both = RunDfworker({"test", (dir / "p.yaml"), "--fix_tests", "--create_test"});
  EXPECT_EQ(both.exit_code, 2) << both.out;
  auto orphan = RunDfworker({"run", (dir / "p.yaml"), "--fix_tests"});
  EXPECT_EQ(orphan.exit_code, 2) << orphan.out;
  EXPECT_NE(orphan.out.find("need --test"), std::string::npos) << orphan.out;
}

TEST(TestCommand, TheShippedPipelinesTestsPass) {
  auto o = RunDfworker({"test", "pipelines/orders_by_size.yaml"});
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("2 passed, 0 failed"), std::string::npos) << o.out;
}

// --fix_tests writes where Beam writes: through a symlink to its target (the link stays a link),
// keeping the file's owner, group and mode; a read-only file is refused (exit 2) and left as it
// was. Before, the rewrite replaced the link by a regular file, reset owner and group to the
// caller's and rewrote a 0444 file.
TEST(TestCommand, FixTestsWritesThroughASymlinkAndKeepsOwnerGroupAndMode) {
  TempDir dir;
  const std::string before = PipelineFile(dir, std::string(kPass) + kFail);
  WriteFile(dir / "real/p.yaml", before);
  ASSERT_EQ(::symlink((dir / "real/p.yaml").c_str(), (dir / "p.yaml").c_str()), 0);
  ASSERT_EQ(::chmod((dir / "real/p.yaml").c_str(), 0640), 0);
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown((dir / "real/p.yaml").c_str(), 65534, 65534), 0);  // nobody:nogroup
  }
  auto fix = RunDfworker({"test", (dir / "p.yaml"), "--fix_tests"});
  EXPECT_EQ(fix.exit_code, 0) << fix.out;
  EXPECT_TRUE(fs::is_symlink(dir / "p.yaml")) << "the link was replaced by a file";
  const std::string fixed = ReadFile(dir / "real/p.yaml");
  EXPECT_NE(fixed, before);
  EXPECT_NE(fixed.find("          - {n: 8}\n"), std::string::npos) << fixed;
  struct stat st {};
  ASSERT_EQ(::stat((dir / "real/p.yaml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  if (root) {
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_gid, 65534u);
  }
  for (const auto& e : fs::directory_iterator(dir / "real")) {
    EXPECT_EQ(e.path().filename(), "p.yaml") << "a temporary file was left: " << e.path();
  }
}

TEST(TestCommand, FixTestsRefusesAReadOnlyFileAndLeavesItUnchanged) {
  TempDir dir;
  const std::string before = PipelineFile(dir, std::string(kPass) + kFail);
  WriteFile(dir / "p.yaml", before);
  ASSERT_EQ(::chmod((dir / "p.yaml").c_str(), 0444), 0);
  auto fix = RunDfworker({"test", (dir / "p.yaml"), "--fix_tests"});
  EXPECT_EQ(fix.exit_code, 2) << fix.out;
  EXPECT_NE(fix.out.find("--fix_tests: '" + (dir / "p.yaml") + "' is read-only (mode 0444)"), std::string::npos) << fix.out;
  EXPECT_EQ(ReadFile(dir / "p.yaml"), before);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "p.yaml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
  // --create_test into a read-only suite: the same refusal, before any test runs.
  WriteFile(dir / "suite.yaml", "tests: []\n");
  ASSERT_EQ(::chmod((dir / "suite.yaml").c_str(), 0444), 0);
  auto made = RunDfworker({"test", (dir / "p.yaml"), "--create_test", "--test_suite", (dir / "suite.yaml")});
  EXPECT_EQ(made.exit_code, 2) << made.out;
  EXPECT_NE(made.out.find("is read-only (mode 0444)"), std::string::npos) << made.out;
  EXPECT_EQ(ReadFile(dir / "suite.yaml"), "tests: []\n");
}

}  // namespace
