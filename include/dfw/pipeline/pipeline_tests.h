// A pipeline's own tests, as Beam YAML runs them (apache_beam/yaml/yaml_testing.py; `python -m
// apache_beam.yaml.main --yaml_pipeline_file=P --test`): a top-level `tests:` list (or a test-suite
// file holding one), each test naming transforms of the pipeline:
//
//   tests:
//     - name: small rows go left
//       mock_outputs:   [{name: ReadRows, elements: [{n: 1}, {n: 9}]}]    # replace a transform's output
//       mock_inputs:    [{name: Parse, elements: [...]}]                  # replace what a transform reads
//       expected_outputs: [{name: Split.small, elements: [{n: 1}]}]       # rows a transform produces
//       expected_inputs:  [{name: WriteSmall, elements: [{n: 1}]}]        # rows a transform receives
//       allowed_sources: [ReadConfig]                                     # sources that may run unmocked
//
// Beam's rules, kept here: only the transforms an expectation needs run (so sinks never write); a
// mocked output replaces the transform (every output of it that is used must then be mocked); a
// source that runs must be mocked, be a `Create`, or be in `allowed_sources` ("Non-mocked source");
// rows compare as multisets with Python's == (1 == 1.0 == True, mappings without field order).
// Each test runs in this process (RunAllBundles over a scratch folder that is removed afterwards).
#pragma once

#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/pipeline/spec.h"
#include "dfw/record/value.h"
#include "dfw/stages/stage.h"

namespace dfw {

// One `name` + `elements` entry of mock_inputs / mock_outputs / expected_inputs / expected_outputs.
struct TestRows {
  std::string name;       // a transform ("Split"), or one of its outputs ("Split.small")
  ConfigNode elements;    // the `elements` list as written (rows or plain values)
  int line = 0;           // 1-based position of the entry (its `name`), for messages
  // Where the `elements` value is in the file's text, for --fix_tests (TestFixes).
  std::size_t elements_key = 0;     // byte offset of the `elements` key (its opening quote when quoted)
  std::size_t elements_offset = 0;  // byte offset of the value's first character
  int elements_column = 0;          // 0-based column of that character
  bool elements_flow = false;       // written as [..] (else a block list of `- ` items)
};

struct PipelineTest {
  std::string name;  // `name`, "unknown" when absent (as Beam)
  int line = 0;      // 1-based line of the test in its file
  std::vector<TestRows> mock_inputs, mock_outputs, expected_inputs, expected_outputs;
  std::vector<std::string> allowed_sources;  // transform names or types; Create is always allowed
  // Not OK when this test's specification is invalid (what Beam's validate_test_spec refuses):
  // the test is then reported invalid and the others still run, as on Beam.
  Status spec_error;
};

// The `tests:` list of a YAML document (a pipeline file or a test-suite file). kInvalidArgument
// "FILE:LINE:COL: what" when there is no list of tests (YAML syntax, not a list, none). A test that
// Beam's validate_test_spec refuses (not a mapping, an unknown key, an entry without name or
// elements, no expected_*) comes back with `spec_error` set, in its place in the list.
Result<std::vector<PipelineTest>> ParsePipelineTests(const std::string& yaml_text, const std::string& file);

// One expectation's verdict. Rows compare as multisets with Python's ==.
struct ExpectationResult {
  std::string kind;            // "expected_outputs" or "expected_inputs"
  const TestRows* expected = nullptr;
  bool passed = false;
  std::vector<Value> actual;      // what arrived (rows as row Values), in arrival order
  std::vector<Value> missing;     // expected, not produced (with multiplicity)
  std::vector<Value> unexpected;  // produced, not expected
};

struct PipelineTestResult {
  const PipelineTest* test = nullptr;
  bool passed = false;
  Status run_error;  // the test pipeline failed (a stage error): the test fails with it
  std::vector<ExpectationResult> checks;
  double seconds = 0;
};

// Runs one test of `spec` (the loaded pipeline). `registry` must hold the pipeline's stage types;
// it is copied and a recording sink added. kInvalidArgument "FILE:LINE: ..." when the test cannot be
// built (a name that is no transform or output, an ambiguous name, a non-mocked source, an output of
// a partly mocked transform left unmocked, an expectation on a sink's output): an invalid test spec,
// not a failure. `scratch_dir` must not exist; it is created and removed.
Result<PipelineTestResult> RunPipelineTest(const PipelineSpec& spec, const PipelineTest& test, const std::string& test_file,
                                           const StageRegistry& registry, const std::string& scratch_dir);

// Python's == on row values: int/float/bool numerically, rows as mappings (field order ignored),
// lists element by element.
bool PyEquals(const Value& a, const Value& b);
// A key equal for exactly the values PyEquals calls equal (for multiset matching).
std::string PyEqualityKey(const Value& v);

// `value` as Python's json.dumps writes it (", " and ": ", ASCII only, 1.0 stays 1.0): the key
// Beam's --fix_tests sorts fixed elements by.
std::string PyJsonDumps(const Value& value);

// `value` as a one-line YAML flow node that reads back (ConfigToValue) as the same value.
std::string YamlFlow(const Value& value);

// --fix_tests: `text` (the file holding the tests) with the `elements` of each failing expectation
// replaced by what arrived, sorted by PyJsonDumps (Beam's order); everything else in the text is
// kept byte for byte. Expectations whose rows are replaced must come from this text. An
// expectation whose `elements` is not written in place after its key (a YAML alias `*rows`) is
// left as it is and named in `skipped`: rewriting the anchor would change its other uses.
struct TestFixes {
  std::string text;
  int fixed = 0;
  std::vector<std::string> skipped;  // "NAME (line L)" of each expectation left unfixed
};
TestFixes ApplyTestFixes(const std::string& text, const std::vector<PipelineTestResult>& results);

}  // namespace dfw

namespace dfw {

// --create_test (Beam's create_test, made deterministic): one test recorded from the pipeline —
// each source other than Create mocked with its first `max_rows` rows (mock_outputs), and the rows
// each output transform (a sink or LogForTesting) then receives as expected_inputs. Returns
// `tests_text` (the file holding the tests; "" for a new test-suite file) with the test appended
// to its `tests:` block list (or a new `tests:` key). kInvalidArgument when the pipeline has no
// output transform, or `tests:` is a non-empty flow list; a run error as it comes.
Result<std::string> CreatePipelineTest(const PipelineSpec& spec, const StageRegistry& registry, const std::string& tests_text,
                                       const std::string& tests_file, const std::string& scratch_dir,
                                       std::size_t max_rows = 40);

}  // namespace dfw
