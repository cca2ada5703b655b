// --create_test (dfw/pipeline/pipeline_tests.h): a test recorded from the pipeline itself.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "dfw/pipeline/pipeline_tests.h"
#include "yaml_text.h"

namespace dfw {
namespace {

// The first `max_rows` rows of a source, read through its own splits (nothing else runs), and the
// error rows (records it could not read) met on the way, when it has an error output.
struct SourceRows {
  std::vector<Value> rows, errors;
};

Result<SourceRows> FirstRows(const TransformSpec& t, const StageRegistry& registry, std::size_t max_rows) {
  const StageTypeInfo* info = registry.Find(t.config.type);
  if (info == nullptr) return InvalidArgument(t.config.Where() + ": transform type is not registered");
  ASSIGN_OR_RETURN(std::unique_ptr<Stage> stage, info->factory(t.config));
  ASSIGN_OR_RETURN(std::vector<SourceSplit> splits, stage->Split(int64_t{64} << 20));
  SourceRows got;
  std::vector<Value>& rows = got.rows;
  for (const SourceSplit& split : splits) {
    ASSIGN_OR_RETURN(std::unique_ptr<SplitReader> reader, stage->OpenSplit(split));
    for (bool more = true; more && rows.size() < max_rows;) {
      StageOutput out(&t.config);
      ASSIGN_OR_RETURN(more, reader->Next(out, max_rows - rows.size()));
      for (Row& r : out.main()) if (rows.size() < max_rows) rows.push_back(Value::FromRow(std::move(r)));
      for (Row& r : out.errors()) if (got.errors.size() < max_rows) got.errors.push_back(Value::FromRow(std::move(r)));
    }
    if (rows.size() >= max_rows) break;
  }
  return got;
}

// One `- name: X\n  elements: ...` entry at `indent`, rows as a block list of flow rows.
std::string RowsEntry(const std::string& name, const std::vector<const Value*>& rows, const std::string& indent) {
  std::string out = fmt::format("{}- name: {}\n{}  elements:", indent, YamlFlow(Value::String(name)), indent);
  if (rows.empty()) return out + " []\n";
  out += "\n";
  for (const Value* v : rows) out += fmt::format("{}    - {}\n", indent, YamlFlow(*v));
  return out;
}

struct Recording {
  std::string name;
  std::vector<Value> rows;
};

// The test as YAML text, its first line at `indent` (the column of the `tests:` items).
std::string TestText(const std::vector<Recording>& mocks, const std::vector<Recording>& expected, const std::string& indent) {
  auto sorted = [](const std::vector<Value>& rows) {
    std::vector<std::pair<std::string, const Value*>> keyed;
    for (const Value& v : rows) keyed.emplace_back(PyJsonDumps(v), &v);
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<const Value*> out;
    for (const auto& k : keyed) out.push_back(k.second);
    return out;
  };
  std::string out = indent + "- name: recorded\n";
  if (!mocks.empty()) out += indent + "  mock_outputs:\n";
  for (const Recording& m : mocks) out += RowsEntry(m.name, sorted(m.rows), indent + "    ");
  out += indent + "  expected_inputs:\n";
  for (const Recording& e : expected) out += RowsEntry(e.name, sorted(e.rows), indent + "    ");
  return out;
}

}  // namespace

Result<std::string> CreatePipelineTest(const PipelineSpec& spec, const StageRegistry& registry, const std::string& tests_text,
                                       const std::string& tests_file, const std::string& scratch_dir, std::size_t max_rows) {
  std::vector<Recording> mocks, expected;
  for (const TransformSpec& t : spec.transforms) {
    if (t.traits.is_source && t.config.type != "Create") {
      ASSIGN_OR_RETURN(SourceRows got, FirstRows(t, registry, max_rows));
      mocks.push_back({t.config.name, std::move(got.rows)});
      // Beam: when one used output of a transform is mocked, all its used outputs must be.
      if (!t.config.error_output.empty()) mocks.push_back({t.config.name + "." + t.config.error_output, std::move(got.errors)});
    }
    if (t.traits.is_sink || t.config.type == "LogForTesting") expected.push_back({t.config.name, {}});
  }
  if (expected.empty()) {
    return InvalidArgument(spec.file + ": no output transforms (a sink such as WriteToJson, or LogForTesting) to record a test for");
  }
  // Run the test with empty expectations: what arrives is what the recorded test expects.
  const std::string draft = "tests:\n" + TestText(mocks, expected, "  ");
  ASSIGN_OR_RETURN(std::vector<PipelineTest> parsed, ParsePipelineTests(draft, tests_file));
  ASSIGN_OR_RETURN(PipelineTestResult result, RunPipelineTest(spec, parsed[0], tests_file, registry, scratch_dir));
  if (!result.run_error.ok()) return result.run_error;
  for (std::size_t k = 0; k < expected.size() && k < result.checks.size(); ++k) expected[k].rows = result.checks[k].actual;

  // Append it to the file's tests: list (block style), or add one.
  std::string text = tests_text;
  YAML::Node tests;
  bool has_tests = false;  // (a default YAML::Node is a defined null, not an absent key)
  try {
    const YAML::Node root = text.empty() ? YAML::Node() : YAML::Load(text);
    if (root.IsMap() && root["tests"].IsDefined()) {
      tests = root["tests"];
      has_tests = true;
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}: {}", tests_file, e.msg));
  }
  if (has_tests && tests.IsNull()) {
    return InvalidArgument(tests_file + ": 'tests:' is empty; write 'tests: []' or remove the key, then record again");
  }
  if (!has_tests) {
    if (!text.empty() && text.back() != '\n') text += "\n";
    return text + "tests:\n" + TestText(mocks, expected, "  ");
  }
  if (!tests.IsSequence()) return InvalidArgument(tests_file + ": 'tests' must be a list of test specifications");
  const auto at = static_cast<std::size_t>(tests.Mark().pos);
  if (tests.Style() == YAML::EmitterStyle::Flow || (at < text.size() && text[at] == '[')) {
    if (tests.size() > 0) {
      return InvalidArgument(tests_file + ": 'tests:' is a flow list ([...]); --create_test appends to a block list (- items)");
    }
    const std::size_t end = pipeline_internal::FlowEnd(text, at);
    return text.substr(0, at) + "\n" + TestText(mocks, expected, "  ") + text.substr(end);
  }
  const int column = tests.Mark().column;
  const std::size_t end = pipeline_internal::BlockEnd(text, at, column);
  std::string item = TestText(mocks, expected, std::string(static_cast<std::size_t>(column), ' '));
  item.pop_back();  // the text after `end` starts with the block's own newline
  return text.substr(0, end) + "\n" + item + text.substr(end);
}

}  // namespace dfw
