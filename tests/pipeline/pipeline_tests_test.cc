// The pipeline's own tests (Beam's yaml_testing): parsing `tests:`, building the test pipeline
// (mocks, only what expectations need, the non-mocked source rule), comparing as multisets with
// Python's ==, and --fix_tests rewriting only the failing `elements`.
#include <gmock/gmock.h>

#include <filesystem>

#include <fmt/format.h>

#include "dfw/pipeline/pipeline_tests.h"
#include "dfw/stages/config.h"
#include "dfw/stages/config_yaml.h"
#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;

// Read from a file that does not exist (so it must be mocked), map, partition, write.
std::string Pipeline(const std::string& out_dir) {
  return fmt::format(R"(pipeline:
  transforms:
    - type: ReadFromJson
      name: Read
      config: {{path: /nonexistent/in.jsonl}}
    - type: MapToFields
      name: Double
      input: Read
      config:
        language: python
        fields: {{n: n * 2, kind: kind}}
    - type: Partition
      name: Split
      input: Double
      config: {{by: kind, outputs: [a, b]}}
    - type: WriteToJson
      name: WriteA
      input: Split.a
      config: {{path: {0}/a}}
    - type: WriteToJson
      name: WriteB
      input: Split.b
      config: {{path: {0}/b}}
)",
                     out_dir);
}

struct Fixture {
  testing::TempDir dir;
  StageRegistry registry = testing::TestRegistry();
  PipelineSpec spec;
  Fixture() {
    auto s = LoadPipelineString(Pipeline(dir / "out"), registry, "p.yaml");
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) spec = std::move(*s);
  }
  Result<PipelineTestResult> Run(const PipelineTest& t) {
    return RunPipelineTest(spec, t, "t.yaml", registry, dir / fmt::format("scratch-{}", counter++));
  }
  int counter = 0;
};

Result<std::vector<PipelineTest>> Parse(const std::string& tests) { return ParsePipelineTests(tests, "t.yaml"); }

constexpr const char* kPassing = R"(tests:
  - name: doubles and splits
    mock_outputs:
      - name: Read
        elements: [{n: 1, kind: a}, {n: 2, kind: b}, {n: 3, kind: a}]
    expected_outputs:
      - name: Split.a
        elements: [{n: 6, kind: a}, {n: 2, kind: a}]
    expected_inputs:
      - name: WriteB
        elements:
          - {kind: b, n: 4.0}
)";

TEST(PipelineTests, APassingTestRunsOnlyWhatItNeedsAndWritesNoOutput) {
  Fixture f;
  auto tests = Parse(kPassing);
  ASSERT_TRUE(tests.ok()) << tests.status().ToString();
  ASSERT_EQ(tests->size(), 1u);
  auto r = f.Run((*tests)[0]);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->run_error.ok()) << r->run_error.ToString();
  ASSERT_EQ(r->checks.size(), 2u);
  EXPECT_TRUE(r->passed);  // order-free, field-order-free, 4.0 == 4
  EXPECT_FALSE(std::filesystem::exists(f.dir / "out"));
  EXPECT_FALSE(std::filesystem::exists(f.dir / "scratch-0"));
}

TEST(PipelineTests, AFailingExpectationListsMissingAndUnexpectedRows) {
  Fixture f;
  auto tests = Parse(R"(tests:
  - mock_outputs: [{name: Read, elements: [{n: 1, kind: a}, {n: 1, kind: a}]}]
    expected_outputs: [{name: Split.a, elements: [{n: 2, kind: a}, {n: 3, kind: a}]}]
)");
  ASSERT_TRUE(tests.ok()) << tests.status().ToString();
  EXPECT_EQ((*tests)[0].name, "unknown");
  auto r = f.Run((*tests)[0]);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->passed);
  ASSERT_EQ(r->checks.size(), 1u);
  const ExpectationResult& c = r->checks[0];
  ASSERT_EQ(c.missing.size(), 1u);
  EXPECT_EQ(c.missing[0].ToJson(), R"({"n":3,"kind":"a"})");
  ASSERT_EQ(c.unexpected.size(), 1u);  // the second {n: 2} is one too many: multisets
  EXPECT_EQ(c.unexpected[0].ToJson(), R"({"n":2,"kind":"a"})");
}

TEST(PipelineTests, MockInputsReplaceWhatATransformReads) {
  Fixture f;
  auto tests = Parse(R"(tests:
  - name: split only
    mock_inputs: [{name: Split, elements: [{n: 10, kind: b}]}]
    expected_outputs: [{name: Split.b, elements: [{n: 10, kind: b}]}, {name: Split.a, elements: []}]
)");
  ASSERT_TRUE(tests.ok()) << tests.status().ToString();
  auto r = f.Run((*tests)[0]);  // Read is not needed, so its path is never opened
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->passed) << r->run_error.ToString();
}

TEST(PipelineTests, ARunErrorFailsTheTestWithTheStageMessage) {
  Fixture f;
  auto tests = Parse(R"(tests:
  - mock_outputs: [{name: Read, elements: [{n: 1, kind: zzz}]}]
    expected_outputs: [{name: Split.a, elements: []}]
)");
  ASSERT_TRUE(tests.ok());
  auto r = f.Run((*tests)[0]);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->passed);
  EXPECT_THAT(r->run_error.message(), HasSubstr("Unknown output name \"zzz\""));
}

TEST(PipelineTests, InvalidTestsAreSpecErrorsWithTheirLine) {
  Fixture f;
  struct Case {
    const char* tests;
    const char* message;
  } build_cases[] = {
      {"tests:\n  - expected_outputs: [{name: Split.a, elements: []}]\n", "t.yaml:2: test 'unknown': non-mocked source Read (ReadFromJson, p.yaml:3)"},
      {"tests:\n  - expected_outputs:\n      - {name: Nope, elements: []}\n", "t.yaml:3: 'Nope' names no transform"},
      {"tests:\n  - expected_outputs:\n      - {name: Split.c, elements: []}\n", "has no output 'c'"},
      {"tests:\n  - mock_outputs: [{name: Split.a, elements: []}]\n    expected_inputs: [{name: WriteB, elements: []}]\n",
       "unmocked output Split.b of Split"},
      {"tests:\n  - mock_outputs: [{name: Read, elements: []}]\n    expected_outputs: [{name: WriteA, elements: []}]\n",
       "has no main output"},
  };
  for (const Case& c : build_cases) {
    auto tests = Parse(c.tests);
    ASSERT_TRUE(tests.ok()) << tests.status().ToString();
    auto r = f.Run((*tests)[0]);
    ASSERT_FALSE(r.ok()) << c.tests;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.tests;
  }
  Case parse_cases[] = {
      {"pipeline: {}\n", "t.yaml: no tests found"},
      {"tests: {a: 1}\n", "t.yaml:1:8: 'tests' must be a list"},
      {"tests:\n  - name: x\n    mocks: []\n    expected_outputs: [{name: A, elements: []}]\n", "t.yaml:3:5: test 'x' (line 2) has unknown attribute 'mocks'"},
      {"tests:\n  - name: x\n    mock_outputs: [{name: A}]\n    expected_outputs: [{name: A, elements: []}]\n", "missing elements"},
      {"tests:\n  - name: x\n    expected_outputs: [{elements: []}]\n", "missing a name"},
      {"tests:\n  - name: x\n    expected_outputs: [{name: A, elements: 3}]\n", "must be a list"},
      {"tests:\n  - name: x\n    mock_outputs: [{name: A, elements: []}]\n", "t.yaml:2:5: test 'x' (line 2) must have at least one expected_outputs"},
      {"tests:\n  - name: x\n    allowed_sources: Read\n    expected_outputs: [{name: A, elements: []}]\n", "allowed_sources of test 'x' (line 2) must be a list"},
      {"tests: [\n", "t.yaml:2:1: YAML syntax error"},
      {"tests:\n  - name: x\n    name: y\n    expected_outputs: [{name: A, elements: []}]\n", "t.yaml:3:5:"},
  };
  for (const Case& c : parse_cases) {
    // A bad list is a file error; a bad test is that test's error (the others still run, as on Beam).
    auto tests = Parse(c.tests);
    const Status s = tests.ok() ? (tests->empty() ? Status::OK() : (*tests)[0].spec_error) : tests.status();
    ASSERT_FALSE(s.ok()) << c.tests;
    EXPECT_THAT(s.message(), HasSubstr(c.message)) << c.tests;
    if (tests.ok()) {
      auto r = f.Run((*tests)[0]);
      ASSERT_FALSE(r.ok()) << c.tests;
      EXPECT_EQ(r.status().message(), s.message());
    }
  }
  auto mixed = Parse("tests:\n  - name: bad\n    mocks: []\n  - name: good\n    mock_outputs: [{name: Read, elements: []}]\n"
                     "    expected_outputs: [{name: Split.a, elements: []}]\n");
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  ASSERT_EQ(mixed->size(), 2u);
  EXPECT_FALSE((*mixed)[0].spec_error.ok());
  EXPECT_TRUE((*mixed)[1].spec_error.ok()) << (*mixed)[1].spec_error.ToString();
  EXPECT_EQ((*mixed)[1].line, 4);
}

TEST(PipelineTests, AllowedSourcesLetARealSourceRun) {
  testing::TempDir dir;
  testing::WriteFile(dir / "in.jsonl", "{\"n\": 5, \"kind\": \"b\"}\n");
  StageRegistry registry = testing::TestRegistry();
  std::string yaml = Pipeline(dir / "out");
  yaml.replace(yaml.find("/nonexistent/in.jsonl"), std::string("/nonexistent/in.jsonl").size(), dir / "in.jsonl");
  auto spec = LoadPipelineString(yaml, registry, "p.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto tests = Parse("tests:\n  - allowed_sources: [Read]\n    expected_outputs: [{name: Split.b, elements: [{n: 10, kind: b}]}]\n");
  ASSERT_TRUE(tests.ok());
  auto r = RunPipelineTest(*spec, (*tests)[0], "t.yaml", registry, dir / "scratch");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->passed) << r->run_error.ToString();
}

TEST(PipelineTests, ACombineRunsThroughItsShuffleInATest) {
  testing::TempDir dir;
  StageRegistry registry = testing::TestRegistry();
  auto spec = LoadPipelineString(R"(pipeline:
  transforms:
    - {type: Create, name: Rows, config: {elements: [{k: x, v: 1}, {k: x, v: 2}, {k: y, v: 5}]}}
    - {type: Combine, name: Sum, input: Rows, config: {group_by: k, combine: {v: sum}}}
)",
                                 registry, "p.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto tests = Parse("tests:\n  - expected_outputs: [{name: Sum, elements: [{k: y, v: 5}, {k: x, v: 3}]}]\n");
  ASSERT_TRUE(tests.ok());
  auto r = RunPipelineTest(*spec, (*tests)[0], "t.yaml", registry, dir / "scratch");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->passed) << r->run_error.ToString();
}

Value V(const std::string& yaml) { return ConfigToValue(ConfigNodeFromYaml(YAML::Load(yaml))); }

TEST(PyEquals, FollowsPythonEquality) {
  EXPECT_TRUE(PyEquals(V("{a: 1, b: [1, 2.0]}"), V("{b: [1.0, 2], a: 1.0}")));
  EXPECT_TRUE(PyEquals(V("true"), V("1")));
  EXPECT_FALSE(PyEquals(V("'1'"), V("1")));
  EXPECT_FALSE(PyEquals(V("{a: 1}"), V("{a: 1, b: null}")));
  EXPECT_FALSE(PyEquals(V("[1, 2]"), V("[2, 1]")));
  EXPECT_FALSE(PyEquals(V("0.1"), V("0.10000000000000002")));
}

TEST(PyJsonDumps, WritesWhatPythonsJsonDumpsWrites) {
  EXPECT_EQ(PyJsonDumps(V("{b: 1.0, a: [true, null, 'x'], 'c d': 1e-5}")), R"({"b": 1.0, "a": [true, null, "x"], "c d": 1e-05})");
  EXPECT_EQ(PyJsonDumps(V("'é😀'")), R"("\u00e9\ud83d\ude00")");
  EXPECT_EQ(YamlFlow(V("{b: 1.0, 'yes': 'no', 'c d': [1, 'x']}")), R"({b: 1.0, yes: "no", "c d": [1, x]})");
  // What YamlFlow writes reads back as the same value.
  for (const char* y : {"{a: 1.5, b: 'true', c: null, d: [1, {e: -0.0}]}", "'multi\nline \"q\"'", "1e+300"}) {
    EXPECT_TRUE(PyEquals(V(YamlFlow(V(y))), V(y))) << y << " -> " << YamlFlow(V(y));
  }
}

TEST(ApplyTestFixes, RewritesOnlyFailingElementsInBlockAndFlowStyle) {
  Fixture f;
  const std::string text = R"(# my tests
tests:
  - name: wrong   # a comment that stays
    mock_outputs:
      - name: Read
        elements: [{n: 2, kind: a}, {n: 1, kind: a}, {n: 1, kind: b}]
    expected_outputs:
      - name: Split.a
        elements:
          - {n: 99, kind: a}

          - n: 98
            kind: a
      - name: Split.b
        elements: [ {n: 7,
                     kind: b} ]   # flow, over two lines
    expected_inputs:
      - name: WriteA
        elements: [{n: 4, kind: a}, {n: 2, kind: a}]
  - name: untouched
    mock_outputs: [{name: Read, elements: []}]
    expected_outputs: [{name: Split.a, elements: [{n: 1}]}]
)";
  auto tests = Parse(text);
  ASSERT_TRUE(tests.ok()) << tests.status().ToString();
  std::vector<PipelineTestResult> results;
  for (const PipelineTest& t : *tests) {
    auto r = f.Run(t);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    results.push_back(std::move(*r));
  }
  TestFixes fixes = ApplyTestFixes(text, results);
  EXPECT_EQ(fixes.fixed, 3);
  EXPECT_TRUE(fixes.skipped.empty());
  const std::string& fixed = fixes.text;
  const std::string want = R"(# my tests
tests:
  - name: wrong   # a comment that stays
    mock_outputs:
      - name: Read
        elements: [{n: 2, kind: a}, {n: 1, kind: a}, {n: 1, kind: b}]
    expected_outputs:
      - name: Split.a
        elements:
          - {n: 2, kind: a}
          - {n: 4, kind: a}
      - name: Split.b
        elements: [{n: 2, kind: b}]   # flow, over two lines
    expected_inputs:
      - name: WriteA
        elements: [{n: 4, kind: a}, {n: 2, kind: a}]
  - name: untouched
    mock_outputs: [{name: Read, elements: []}]
    expected_outputs: [{name: Split.a, elements: []}]
)";
  EXPECT_EQ(fixed, want);
  // The fixed file passes.
  auto again = Parse(fixed);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  for (const PipelineTest& t : *again) {
    auto r = f.Run(t);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->passed) << t.name;
  }
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(ApplyTestFixes, AnAliasedElementsListIsLeftAloneAndNamed) {
  Fixture f;
  const std::string text = R"(rows: &rows [{n: 9, kind: a}]
tests:
  - mock_outputs: [{name: Read, elements: [{n: 1, kind: a}]}]
    expected_outputs:
      - name: Split.a
        elements: *rows
      - name: Split.b
        elements: *rows
)";
  auto tests = Parse(text);
  ASSERT_TRUE(tests.ok()) << tests.status().ToString();
  auto r = f.Run((*tests)[0]);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_FALSE(r->passed);
  TestFixes fixes = ApplyTestFixes(text, {std::move(*r)});
  EXPECT_EQ(fixes.fixed, 0);
  EXPECT_EQ(fixes.text, text);
  EXPECT_EQ(fixes.skipped, (std::vector<std::string>{"Split.a (line 5)", "Split.b (line 7)"}));
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(PipelineTests, AnErrorOutputThatRunsMustBeConsumedAsBeamRequires) {
  testing::TempDir dir;
  StageRegistry registry = testing::TestRegistry();
  auto spec = LoadPipelineString(R"(pipeline:
  transforms:
    - {type: Create, name: Rows, config: {elements: [{x: 1}, {x: 0}]}}
    - type: MapToFields
      name: Inverse
      input: Rows
      config: {language: python, fields: {y: 1 / x}, error_handling: {output: bad}}
    - {type: LogForTesting, input: Inverse.bad}
)",
                                 registry, "p.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto unconsumed = ParsePipelineTests("tests:\n  - expected_outputs: [{name: Inverse, elements: [{y: 1.0}]}]\n", "t.yaml");
  ASSERT_TRUE(unconsumed.ok());
  auto r = RunPipelineTest(*spec, (*unconsumed)[0], "t.yaml", registry, dir / "s1");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("t.yaml:2: test 'unknown': the error output Inverse.bad (p.yaml:4) is not consumed"));
  auto consumed = ParsePipelineTests(
      "tests:\n  - expected_outputs: [{name: Inverse, elements: [{y: 1.0}]}, {name: Inverse.bad, elements: []}]\n", "t.yaml");
  ASSERT_TRUE(consumed.ok());
  auto ok = RunPipelineTest(*spec, (*consumed)[0], "t.yaml", registry, dir / "s2");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->checks.size(), 2u);
  EXPECT_TRUE(ok->checks[0].passed);
  ASSERT_EQ(ok->checks[1].actual.size(), 1u);  // the x: 0 row, as Beam's error row
  EXPECT_EQ(ok->checks[1].actual[0].as_row().Find("element")->ToJson(), R"({"x":0})");
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

// --fix_tests on awkward layouts: every rewritten file parses again, every expectation then holds
// exactly the rows given, and every other expectation, test and name is as it was.
TEST(ApplyTestFixes, AwkwardLayoutsStayValidYamlWithTheNewRows) {
  const char* texts[] = {
      // items at the key's own indent, comments and blank lines inside and after the list
      "tests:\n- name: a\n  expected_outputs:\n  - name: X\n    elements:\n    - {v: 1}\n    # c\n\n    - v: 2\n  # trailing\n"
      "  expected_inputs:\n  - {name: Y, elements: [1, 2]}\n",
      // flow lists with brackets and quotes inside strings, over several lines
      "tests:\n  - expected_outputs:\n      - name: X\n        elements: [{s: \"a]b\"}, {s: 'it''s [x'},\n"
      "                   {s: \"q\\\"]\"}]   # after\n      - name: Z\n        elements: []\n",
      // CRLF line ends, a quoted key, the last line without a newline
      "tests:\r\n  - expected_outputs:\r\n      - name: X\r\n        \"elements\":\r\n          - {v: 1}\r\n          - {v: 2}",
      // nested block rows inside the list
      "tests:\n  - expected_outputs:\n      - name: X\n        elements:\n          - a: 1\n            b:\n              - 2\n"
      "              - 3\n          - a: 4\n      - name: W\n        elements: [{v: 0}]\n",
  };
  for (const char* text : texts) {
    auto tests = ParsePipelineTests(text, "t.yaml");
    ASSERT_TRUE(tests.ok()) << text << "\n" << tests.status().ToString();
    std::vector<PipelineTestResult> results;
    int n = 0;
    for (const PipelineTest& t : *tests) {
      ASSERT_TRUE(t.spec_error.ok()) << text << t.spec_error.ToString();
      PipelineTestResult r;
      r.test = &t;
      for (const auto* list : {&t.expected_outputs, &t.expected_inputs}) {
        for (const TestRows& e : *list) {
          ExpectationResult c;
          c.expected = &e;
          c.passed = (n % 3 == 2);  // some expectations stay as written
          Row row;
          row.Append("fixed", Value::Int(n++));
          row.Append("s", Value::String("]} #'\"\n"));
          c.actual = {Value::FromRow(row)};
          r.checks.push_back(std::move(c));
        }
      }
      results.push_back(std::move(r));
    }
    TestFixes fixes = ApplyTestFixes(text, results);
    EXPECT_TRUE(fixes.skipped.empty()) << text;
    auto again = ParsePipelineTests(fixes.text, "t.yaml");
    ASSERT_TRUE(again.ok()) << fixes.text << "\n" << again.status().ToString();
    if (std::string(text).find("\r\n") != std::string::npos) {  // a CRLF file keeps CRLF line ends
      for (std::size_t at = fixes.text.find('\n'); at != std::string::npos; at = fixes.text.find('\n', at + 1)) {
        EXPECT_EQ(fixes.text[at - 1], '\r') << fixes.text;
      }
    }
    ASSERT_EQ(again->size(), tests->size()) << fixes.text;
    for (std::size_t k = 0; k < tests->size(); ++k) {
      const PipelineTest& before = (*tests)[k];
      const PipelineTest& after = (*again)[k];
      ASSERT_TRUE(after.spec_error.ok()) << fixes.text;
      ASSERT_EQ(after.expected_outputs.size() + after.expected_inputs.size(),
                before.expected_outputs.size() + before.expected_inputs.size()) << fixes.text;
      std::size_t c = 0;
      for (const auto* lists : {&after.expected_outputs, &after.expected_inputs}) {
        for (const TestRows& e : *lists) {
          const ExpectationResult& check = results[k].checks[c++];
          EXPECT_EQ(e.name, check.expected->name) << fixes.text;
          const ConfigNode& want = check.passed ? check.expected->elements : e.elements;
          ASSERT_EQ(e.elements.items().size(), check.passed ? want.items().size() : 1u) << fixes.text;
          if (!check.passed) {
            EXPECT_TRUE(PyEquals(ConfigToValue(e.elements.items()[0]), check.actual[0])) << fixes.text;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace dfw
