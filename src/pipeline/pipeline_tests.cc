// A pipeline's own tests (dfw/pipeline/pipeline_tests.h): reading `tests:`, building the test
// pipeline Beam's way (only what the expectations need, mocks as Create), running it in this
// process and comparing rows as multisets.
#include "dfw/pipeline/pipeline_tests.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "dfw/common/strings.h"
#include "dfw/common/yaml_document.h"
#include "dfw/pipeline/staged_run.h"
#include "dfw/stages/config.h"
#include "dfw/stages/config_yaml.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;

int LineOf(const YAML::Node& n) { return n.Mark().is_null() ? 1 : n.Mark().line + 1; }

Status SpecError(const std::string& file, const YAML::Node& at, const std::string& msg) {
  if (at.IsDefined() && !at.Mark().is_null()) {
    return InvalidArgument(fmt::format("{}:{}:{}: {}", file, at.Mark().line + 1, at.Mark().column + 1, msg));
  }
  return InvalidArgument(fmt::format("{}: {}", file, msg));
}

Status ParseRowsList(const std::string& file, const YAML::Node& list, const std::string& what, const std::string& test_id,
                     std::vector<TestRows>& out) {
  if (!list.IsDefined() || list.IsNull()) return Status::OK();
  if (!list.IsSequence()) return SpecError(file, list, fmt::format("{} of test {} must be a list", what, test_id));
  int ix = 0;
  for (const YAML::Node& item : list) {
    if (!item.IsMap()) return SpecError(file, item, fmt::format("{} {} of test {} must be a mapping {{name, elements}}", what, ix, test_id));
    for (const auto& kv : item) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (key != "name" && key != "elements") {
        return SpecError(file, kv.first, fmt::format("{} {} of test {}: unknown key '{}'; allowed: name, elements", what, ix, test_id, key));
      }
    }
    if (!item["name"].IsDefined() || !item["name"].IsScalar() || item["name"].Scalar().empty()) {
      return SpecError(file, item, fmt::format("{} {} of test {} is missing a name", what, ix, test_id));
    }
    const YAML::Node elements = item["elements"];
    if (!elements.IsDefined()) return SpecError(file, item, fmt::format("{} {} of test {} is missing elements", what, ix, test_id));
    if (!elements.IsSequence()) {
      return SpecError(file, elements.IsNull() ? item : elements,
                       fmt::format("elements of {} {} of test {} must be a list", what, ix, test_id));
    }
    TestRows rows;
    rows.name = item["name"].Scalar();
    rows.elements = ConfigNodeFromYaml(elements);
    rows.line = LineOf(item["name"]);
    for (const auto& kv : item) {
      if (kv.first.IsScalar() && kv.first.Scalar() == "elements" && !kv.first.Mark().is_null()) {
        rows.elements_key = static_cast<std::size_t>(kv.first.Mark().pos);
      }
    }
    rows.elements_offset = elements.Mark().is_null() ? 0 : static_cast<std::size_t>(elements.Mark().pos);
    rows.elements_column = elements.Mark().is_null() ? 0 : elements.Mark().column;
    rows.elements_flow = elements.Style() == YAML::EmitterStyle::Flow;
    out.push_back(std::move(rows));
    ++ix;
  }
  return Status::OK();
}

// One entry of `tests:` into `test` (its line already set); the status says why it is invalid.
Status ParseOneTest(const std::string& file, const YAML::Node& t, PipelineTest& test) {
  if (!t.IsMap()) return SpecError(file, t, "a test specification must be a mapping");
  // (yaml-cpp: IsDefined first; the other Is* of an absent key throw)
  test.name = t["name"].IsDefined() && t["name"].IsScalar() ? t["name"].Scalar() : "unknown";
  const std::string id = fmt::format("'{}' (line {})", test.name, test.line);
  static const std::vector<std::string> kKeys = {"name", "mock_inputs", "mock_outputs", "expected_outputs",
                                                 "expected_inputs", "allowed_sources"};
  for (const auto& kv : t) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return SpecError(file, kv.first, fmt::format("test {} has unknown attribute '{}'{}; allowed: {}", id, key,
                                                   DidYouMeanSuffix(key, kKeys), Join(kKeys)));
    }
  }
  RETURN_IF_ERROR(ParseRowsList(file, t["mock_inputs"], "mock_inputs", id, test.mock_inputs));
  RETURN_IF_ERROR(ParseRowsList(file, t["mock_outputs"], "mock_outputs", id, test.mock_outputs));
  RETURN_IF_ERROR(ParseRowsList(file, t["expected_outputs"], "expected_outputs", id, test.expected_outputs));
  RETURN_IF_ERROR(ParseRowsList(file, t["expected_inputs"], "expected_inputs", id, test.expected_inputs));
  const YAML::Node allowed = t["allowed_sources"];
  if (allowed.IsDefined() && !allowed.IsNull()) {
    if (!allowed.IsSequence()) return SpecError(file, allowed, fmt::format("allowed_sources of test {} must be a list", id));
    for (const YAML::Node& a : allowed) {
      if (!a.IsScalar()) return SpecError(file, a, fmt::format("allowed_sources of test {}: expected transform names", id));
      test.allowed_sources.push_back(a.Scalar());
    }
  }
  if (test.expected_outputs.empty() && test.expected_inputs.empty()) {
    return SpecError(file, t, fmt::format("test {} must have at least one expected_outputs or expected_inputs", id));
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<PipelineTest>> ParsePipelineTests(const std::string& yaml_text, const std::string& file) {
  try {
    const YAML::Node root = YAML::Load(yaml_text);
    // A repeated key or an alias bomb is refused with its place, as in a pipeline file.
    if (std::optional<YamlProblem> problem = FindYamlProblem(root)) {
      if (problem->line < 0) return InvalidArgument(fmt::format("{}: {}", file, problem->message));
      return InvalidArgument(fmt::format("{}:{}:{}: {}", file, problem->line + 1, problem->column + 1, problem->message));
    }
    const YAML::Node tests = root.IsMap() ? root["tests"] : YAML::Node();
    if (!tests.IsDefined() || tests.IsNull() || (tests.IsSequence() && tests.size() == 0)) {
      return InvalidArgument(file + ": no tests found (a top-level 'tests:' list); write one, or record one from a run "
                                    "with --create_test");
    }
    if (!tests.IsSequence()) return SpecError(file, tests, "'tests' must be a list of test specifications");
    std::vector<PipelineTest> out;
    for (const YAML::Node& t : tests) {
      PipelineTest test;
      test.line = LineOf(t);
      test.spec_error = ParseOneTest(file, t, test);
      out.push_back(std::move(test));
    }
    return out;
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return InvalidArgument(fmt::format("{}: {}", file, e.msg));
    return InvalidArgument(fmt::format("{}:{}:{}: YAML syntax error: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (...) {
    return FromCurrentException(file);
  }
}

namespace {

constexpr const char* kRecorderType = "__TestRecorder";

// Rows the recording sinks received, by sink name. Shared by the sinks of one test run.
struct Recorded {
  std::mutex mu;
  std::map<std::string, std::vector<Row>> rows;
};

class Recorder final : public Stage {
 public:
  Recorder(Recorded* into, std::string name) : into_(into), name_(std::move(name)) {}
  Status Process(RowBatch& in, StageOutput&) override {
    std::lock_guard<std::mutex> lock(into_->mu);
    auto& v = into_->rows[name_];
    for (Row& r : in) v.push_back(std::move(r));
    return Status::OK();
  }

 private:
  Recorded* into_;
  std::string name_;
};

// The recording sink of expectation k of `kind` (unique, so two expectations never share rows).
std::string RecorderName(const std::string& kind, std::size_t k) {
  return fmt::format("Check{}[{}]", kind == "expected_outputs" ? "ExpectedOutput" : "ExpectedInput", k);
}

// Builds the test pipeline: Beam's inject_test_tranforms, over an already wired spec.
class TestBuilder {
 public:
  TestBuilder(const PipelineSpec& spec, const PipelineTest& test, std::string file)
      : spec_(spec), test_(test), file_(std::move(file)) {}

  Result<PipelineSpec> Build() {
    for (const TestRows& m : test_.mock_inputs) {
      ASSIGN_OR_RETURN(int t, ResolveTransform(m.name, m.line));
      mocked_inputs_[t] = &m;
    }
    for (const TestRows& m : test_.mock_outputs) {
      ASSIGN_OR_RETURN(auto ref, ResolveOutput(m.name, m.line));
      mocked_outputs_[ref.first][ref.second] = &m;
    }
    for (std::size_t k = 0; k < test_.expected_outputs.size(); ++k) {
      const TestRows& e = test_.expected_outputs[k];
      ASSIGN_OR_RETURN(auto ref, ResolveOutput(e.name, e.line));
      ASSIGN_OR_RETURN(InputRef in, RequireOutput(ref.first, ref.second, e.line));
      AddRecorder(RecorderName("expected_outputs", k), {in}, e.line);
    }
    for (std::size_t k = 0; k < test_.expected_inputs.size(); ++k) {
      const TestRows& e = test_.expected_inputs[k];
      ASSIGN_OR_RETURN(int t, ResolveTransform(e.name, e.line));
      if (spec_.transforms[t].traits.is_source && !mocked_inputs_.count(t)) {
        return Error(e.line, fmt::format("expected_inputs '{}': {} is a source and has no input", e.name, spec_.transforms[t].config.type));
      }
      ASSIGN_OR_RETURN(std::vector<InputRef> ins, CreateInputs(t, e.line));
      AddRecorder(RecorderName("expected_inputs", k), ins, e.line);
    }
    // Beam's check: every source that runs is mocked (a Create), a Create, or allowed.
    for (int t : used_order_) {
      const TransformSpec& s = spec_.transforms[t];
      if (!s.traits.is_source || s.config.type == "Create") continue;
      const auto& allowed = test_.allowed_sources;
      if (std::find(allowed.begin(), allowed.end(), s.config.name) != allowed.end() ||
          std::find(allowed.begin(), allowed.end(), s.config.type) != allowed.end()) {
        continue;
      }
      return Error(test_.line, fmt::format("test '{}': non-mocked source {} ({}, {}:{}); mock its output "
                                           "(mock_outputs: [{{name: {}, elements: [...]}}]) or list it in allowed_sources",
                                           test_.name, s.config.name, s.config.type, s.config.file, s.config.line,
                                           s.config.name));
    }
    // Beam's ensure_errors_consumed holds in the test pipeline too: a transform that runs with
    // error_handling needs its error output read there (an expectation on it will do).
    for (int t : used_order_) {
      const StageConfig& c = spec_.transforms[t].config;
      if (c.error_output.empty()) continue;
      const int at = used_.at(t);
      const bool consumed = std::any_of(out_.transforms.begin(), out_.transforms.end(), [&](const TransformSpec& s) {
        return std::any_of(s.inputs.begin(), s.inputs.end(), [&](const InputRef& in) { return in.from == at && in.error; });
      });
      if (!consumed) {
        return Error(test_.line, fmt::format("test '{}': the error output {}.{} ({}:{}) is not consumed in this test; Beam "
                                             "requires it (\"Unconsumed error output\"): add an expectation on it, e.g. "
                                             "expected_outputs: [{{name: {}.{}, elements: []}}]",
                                             test_.name, c.name, c.error_output, c.file, c.line, c.name, c.error_output));
      }
    }
    out_.file = spec_.file;
    return std::move(out_);
  }

 private:
  Status Error(int line, const std::string& msg) const { return InvalidArgument(fmt::format("{}:{}: {}", file_, line, msg)); }

  // A transform by name, or by type when that type is unique and unnamed (Beam's scope rules).
  Result<int> ResolveTransform(const std::string& name, int line) const {
    std::vector<int> by_name, by_type;
    std::vector<std::string> names;
    for (int i = 0; i < static_cast<int>(spec_.transforms.size()); ++i) {
      const StageConfig& c = spec_.transforms[i].config;
      names.push_back(c.name);
      if (c.name == name) by_name.push_back(i);
      if (c.type == name) by_type.push_back(i);
    }
    // The loader renames repeated unnamed types (Filter, Filter_2): the bare type is then ambiguous.
    if (by_type.size() > 1 && !by_name.empty() && spec_.transforms[by_name[0]].config.type == name) {
      return Error(line, fmt::format("'{}' is ambiguous: {} transforms have that type; give them names", name, by_type.size()));
    }
    if (by_name.size() == 1) return by_name[0];
    return Error(line, fmt::format("'{}' names no transform of the pipeline{}; transforms: {}", name,
                                   DidYouMeanSuffix(name, names), Join(names)));
  }

  // "T" (main output) or "T.out" (a named or error output): the transform and the output's key ("" = main).
  Result<std::pair<int, std::string>> ResolveOutput(const std::string& ref, int line) const {
    Result<int> whole = ResolveTransform(ref, line);
    if (whole.ok()) return std::make_pair(*whole, std::string());
    const std::size_t dot = ref.rfind('.');
    if (dot == std::string::npos) return whole.status();
    ASSIGN_OR_RETURN(int t, ResolveTransform(ref.substr(0, dot), line));
    std::string out = ref.substr(dot + 1);
    const TransformSpec& s = spec_.transforms[t];
    if (out != s.config.error_output && std::find(s.outputs.begin(), s.outputs.end(), out) == s.outputs.end()) {
      std::vector<std::string> have = s.outputs;
      if (!s.config.error_output.empty()) have.push_back(s.config.error_output);
      return Error(line, fmt::format("'{}': transform '{}' has no output '{}'{}", ref, s.config.name, out,
                                     have.empty() ? std::string(" (it has only its main output)") : "; its outputs: " + Join(have)));
    }
    return std::make_pair(t, out);
  }

  static std::string OutputKey(const TransformSpec& s, const InputRef& in) {
    if (in.error) return s.config.error_output;
    if (in.tag >= 0) return s.outputs[static_cast<std::size_t>(in.tag)];
    return "";
  }

  // The InputRef, in the test pipeline, of output `key` of original transform `t`.
  Result<InputRef> RequireOutput(int t, const std::string& key, int line) {
    const TransformSpec& s = spec_.transforms[t];
    auto mocked = mocked_outputs_.find(t);
    if (mocked != mocked_outputs_.end()) {
      auto m = mocked->second.find(key);
      if (m == mocked->second.end()) {
        const std::string shown = key.empty() ? s.config.name : s.config.name + "." + key;
        return Error(line, fmt::format("unmocked output {} of {}: if any used output of a transform is mocked, all its "
                                       "used outputs must be mocked", shown, s.config.name));
      }
      return InputRef{MockCreate("MockOutput[" + m->second->name + "]", *m->second, &mock_output_index_[m->second]), false, -1};
    }
    if (key.empty() && (s.traits.is_sink || s.traits.no_main_output)) {
      return Error(line, fmt::format("'{}' ({}) has no main output to check", s.config.name, s.config.type));
    }
    ASSIGN_OR_RETURN(int at, UseTransform(t, line));
    InputRef ref{at, false, -1};
    if (!key.empty() && key == s.config.error_output) {
      ref.error = true;
    } else if (!key.empty()) {
      ref.tag = static_cast<int>(std::find(s.outputs.begin(), s.outputs.end(), key) - s.outputs.begin());
    }
    return ref;
  }

  // The inputs transform `t` reads in the test pipeline (its mock_inputs Create, or its own inputs).
  Result<std::vector<InputRef>> CreateInputs(int t, int line) {
    auto mocked = mocked_inputs_.find(t);
    if (mocked != mocked_inputs_.end()) {
      return std::vector<InputRef>{InputRef{MockCreate("MockInput[" + mocked->second->name + "]", *mocked->second,
                                                       &mock_input_index_[mocked->second]),
                                            false, -1}};
    }
    std::vector<InputRef> ins;
    for (const InputRef& in : spec_.transforms[t].inputs) {
      ASSIGN_OR_RETURN(InputRef r, RequireOutput(in.from, OutputKey(spec_.transforms[in.from], in), line));
      ins.push_back(r);
    }
    return ins;
  }

  Result<int> UseTransform(int t, int line) {
    auto done = used_.find(t);
    if (done != used_.end()) return done->second;
    ASSIGN_OR_RETURN(std::vector<InputRef> ins, CreateInputs(t, line));
    TransformSpec copy = spec_.transforms[t];
    copy.inputs = std::move(ins);
    if (copy.traits.is_source && !copy.inputs.empty()) {  // a mocked source input: it becomes a pass-through
      return Error(line, fmt::format("mock_inputs '{}': {} is a source and reads no input; mock its output instead",
                                     copy.config.name, copy.config.type));
    }
    const int at = static_cast<int>(out_.transforms.size());
    out_.transforms.push_back(std::move(copy));
    used_[t] = at;
    used_order_.push_back(t);
    return at;
  }

  // A Create of the rows; made once per mock (`slot` caches its index).
  int MockCreate(const std::string& name, const TestRows& rows, std::optional<int>* slot) {
    if (slot->has_value()) return **slot;
    TransformSpec create;
    create.config.name = name;
    create.config.type = "Create";
    create.config.file = file_;
    create.config.line = rows.line;
    create.config.column = 1;
    ConfigNode config = ConfigNode::Map();
    config.Set("elements", rows.elements);
    create.config.config = std::move(config);
    create.traits.is_source = true;
    const int at = static_cast<int>(out_.transforms.size());
    out_.transforms.push_back(std::move(create));
    *slot = at;
    return at;
  }

  void AddRecorder(const std::string& name, std::vector<InputRef> ins, int line) {
    TransformSpec rec;
    rec.config.name = name;
    rec.config.type = kRecorderType;
    rec.config.file = file_;
    rec.config.line = line;
    rec.config.column = 1;
    rec.config.config = ConfigNode::Map();
    rec.traits.is_sink = true;
    rec.traits.serial = true;
    rec.inputs = std::move(ins);
    out_.transforms.push_back(std::move(rec));
  }

  const PipelineSpec& spec_;
  const PipelineTest& test_;
  std::string file_;
  std::map<int, const TestRows*> mocked_inputs_;
  std::map<int, std::map<std::string, const TestRows*>> mocked_outputs_;
  std::map<const TestRows*, std::optional<int>> mock_input_index_, mock_output_index_;
  std::map<int, int> used_;       // original transform -> index in out_
  std::vector<int> used_order_;   // original transforms used, in the order they were added
  PipelineSpec out_;
};

// A key equal for values Python's == calls equal (numbers by value, bool as 0/1, mappings sorted).
void AppendEqualityKey(const Value& v, std::string& out) {
  switch (v.kind()) {
    case Value::Kind::kNull: out += "N"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "#1" : "#0"; return;
    case Value::Kind::kInt: out += "#" + std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: {
      const double d = v.as_float();
      // The range check first: casting a double outside int64's range is undefined.
      if (d > -9.2e18 && d < 9.2e18 && d == static_cast<double>(static_cast<int64_t>(d))) {
        out += "#" + std::to_string(static_cast<int64_t>(d));
      } else {
        out += fmt::format("#{}", d);
      }
      return;
    }
    case Value::Kind::kString: out += "S" + std::to_string(v.as_string().size()) + ":" + v.as_string(); return;
    case Value::Kind::kBytes: out += "B" + std::to_string(v.as_bytes().size()) + ":" + v.as_bytes(); return;
    case Value::Kind::kTimestamp: {  // equal to its seconds as a number (Beam's Timestamp.__eq__)
      const int64_t us = v.as_timestamp_us();
      if (us % 1000000 == 0) AppendEqualityKey(Value::Int(us / 1000000), out);
      else AppendEqualityKey(Value::Float(static_cast<double>(us) / 1e6), out);
      return;
    }
    case Value::Kind::kList: {
      out += "[";
      for (const Value& e : v.as_list()) {
        AppendEqualityKey(e, out);
        out += ",";
      }
      out += "]";
      return;
    }
    case Value::Kind::kRow: {
      std::vector<const Field*> fields;
      for (const Field& f : v.as_row().fields()) fields.push_back(&f);
      std::sort(fields.begin(), fields.end(), [](const Field* a, const Field* b) { return a->name < b->name; });
      out += "{";
      for (const Field* f : fields) {
        out += std::to_string(f->name.size()) + ":" + f->name + "=";
        AppendEqualityKey(f->value, out);
        out += ",";
      }
      out += "}";
      return;
    }
  }
}

std::string EqualityKey(const Value& v) {
  std::string k;
  AppendEqualityKey(v, k);
  return k;
}

ExpectationResult Compare(const std::string& kind, const TestRows& expected, std::vector<Row> actual_rows) {
  ExpectationResult r;
  r.kind = kind;
  r.expected = &expected;
  std::map<std::string, std::vector<Value>> want;  // key -> expected values not yet matched
  for (const ConfigNode& e : expected.elements.items()) {
    Value v = ConfigToValue(e);
    want[EqualityKey(v)].push_back(std::move(v));
  }
  for (Row& row : actual_rows) {
    Value v = Value::FromRow(std::move(row));
    auto it = want.find(EqualityKey(v));
    if (it != want.end() && !it->second.empty()) {
      it->second.pop_back();
    } else {
      r.unexpected.push_back(v);
    }
    r.actual.push_back(std::move(v));
  }
  // Missing rows in the order they were written.
  std::map<std::string, std::size_t> left;
  for (const auto& [k, vs] : want) left[k] = vs.size();
  for (const ConfigNode& e : expected.elements.items()) {
    Value v = ConfigToValue(e);
    std::size_t& n = left[EqualityKey(v)];
    if (n > 0) {
      --n;
      r.missing.push_back(std::move(v));
    }
  }
  r.passed = r.missing.empty() && r.unexpected.empty();
  return r;
}

}  // namespace

bool PyEquals(const Value& a, const Value& b) { return EqualityKey(a) == EqualityKey(b); }

std::string PyEqualityKey(const Value& v) { return EqualityKey(v); }

Result<PipelineTestResult> RunPipelineTest(const PipelineSpec& spec, const PipelineTest& test, const std::string& test_file,
                                           const StageRegistry& registry, const std::string& scratch_dir) {
  RETURN_IF_ERROR(test.spec_error);
  ASSIGN_OR_RETURN(PipelineSpec test_spec, TestBuilder(spec, test, test_file).Build());
  Recorded recorded;
  StageRegistry reg = registry;
  StageFactory make = [&recorded](const StageConfig& c) -> Result<std::unique_ptr<Stage>> {
    return std::unique_ptr<Stage>(new Recorder(&recorded, c.name));
  };
  RETURN_IF_ERROR(reg.Register({kRecorderType, make, {}, {}, StageTraits{.is_sink = true, .serial = true}}));

  PipelineTestResult result;
  result.test = &test;
  const auto started = std::chrono::steady_clock::now();
  {
    MetricsRegistry metrics;
    RunnerOptions options;
    options.threads = 1;
    options.bundle_bytes = int64_t{64} << 20;  // one bundle per source: a test's inputs are small
    Result<RunSummary> run = RunAllBundles(test_spec, reg, options, scratch_dir, &metrics);
    if (!run.ok()) result.run_error = run.status();
  }
  std::error_code ec;
  fs::remove_all(scratch_dir, ec);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (result.run_error.ok()) {
    for (const char* kind : {"expected_outputs", "expected_inputs"}) {
      const auto& list = std::string(kind) == "expected_outputs" ? test.expected_outputs : test.expected_inputs;
      for (std::size_t k = 0; k < list.size(); ++k) {
        result.checks.push_back(Compare(kind, list[k], std::move(recorded.rows[RecorderName(kind, k)])));
      }
    }
  }
  result.passed = result.run_error.ok() &&
                  std::all_of(result.checks.begin(), result.checks.end(), [](const ExpectationResult& c) { return c.passed; });
  return result;
}

}  // namespace dfw
