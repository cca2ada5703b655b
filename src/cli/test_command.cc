// `dfworker test`: the pipeline's own tests (test_command.h), each in this process.
#include "test_command.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "dfw/common/file.h"
#include "dfw/common/logging.h"
#include "dfw/options/parse.h"
#include "dfw/pipeline/dependencies.h"
#include "dfw/pipeline/pipeline_tests.h"
#include "dfw/pipeline/spec.h"
#include "dfw/python/python.h"
#include "dfw/stages/stage.h"

namespace dfw::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kShownRows = 20;  // rows of a diff printed per side (the count says the rest)

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string CheckLabel(const ExpectationResult& c, const std::string& file) {
  return fmt::format("{} '{}' ({}:{})", c.kind, c.expected->name, file, c.expected->line);
}

// The readable diff of one failing expectation: what was expected and did not come, what came
// and was not expected, each row as YAML that can be pasted into the test.
std::string Diff(const ExpectationResult& c, const std::string& file, const std::string& indent) {
  std::string out = fmt::format("{}{}: {} missing, {} unexpected ({} expected, {} arrived)\n", indent, CheckLabel(c, file),
                                c.missing.size(), c.unexpected.size(), c.expected->elements.items().size(), c.actual.size());
  auto rows = [&](const std::vector<Value>& values, const char* mark, const char* what) {
    for (std::size_t k = 0; k < values.size() && k < kShownRows; ++k) {
      out += fmt::format("{}  {} {}{}\n", indent, mark, YamlFlow(values[k]), k == 0 ? std::string("    # ") + what : "");
    }
    if (values.size() > kShownRows) out += fmt::format("{}  {} ... and {} more\n", indent, mark, values.size() - kShownRows);
  };
  rows(c.missing, "-", "missing: expected, not produced");
  rows(c.unexpected, "+", "unexpected: produced, not expected");
  return out;
}

Status WriteJunit(const std::string& path, const std::string& suite, const std::string& file,
                  const std::vector<PipelineTestResult>& results, const std::vector<std::string>& invalid) {
  int failures = 0;
  double seconds = 0;
  std::string cases;
  for (const PipelineTestResult& r : results) {
    seconds += r.seconds;
    cases += fmt::format("  <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\">\n", XmlEscape(suite),
                         XmlEscape(r.test->name + " (line " + std::to_string(r.test->line) + ")"), r.seconds);
    if (!r.passed) {
      ++failures;
      std::string body = r.run_error.ok() ? "" : r.run_error.ToString() + "\n";
      for (const ExpectationResult& c : r.checks) if (!c.passed) body += Diff(c, file, "");
      cases += fmt::format("    <failure message=\"{}\">{}</failure>\n",
                           XmlEscape(r.run_error.ok() ? "rows differ" : r.run_error.message()), XmlEscape(body));
    }
    cases += "  </testcase>\n";
  }
  for (const std::string& e : invalid) {
    cases += fmt::format("  <testcase classname=\"{}\" name=\"invalid test\">\n    <error message=\"{}\"/>\n  </testcase>\n",
                         XmlEscape(suite), XmlEscape(e));
  }
  const std::string xml = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
      "time=\"{:.3f}\">\n{}</testsuite>\n",
      XmlEscape(suite), results.size() + invalid.size(), failures, invalid.size(), seconds, cases);
  return WriteFileAtomically(path, xml, /*sync=*/false, 0644);
}

// A scratch folder under $TMPDIR (or /tmp) for one test's staging; RunPipelineTest removes what it makes.
Result<std::string> MakeScratchParent() {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / "dfworker-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return ErrnoError("create a scratch folder under " + base.string(), errno);
  return pattern;
}

// Writes the tests file as Beam writes it, through the path given: an existing file (or the target
// of a symlink) is replaced whole, keeping its owner, group and mode (ReplaceFileContents); a new
// one (--create_test with a --test_suite that does not exist yet) is created 0644.
Status WriteTestsFile(const std::string& path, const std::string& text) {
  Status s = ReplaceFileContents(path, text);
  if (s.code() != StatusCode::kNotFound) return s;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return s;  // a dangling symlink: not created through
  return WriteFileAtomically(path, text, true, kOutputFileMode);
}

}  // namespace

std::string PipelinePythonEnv(const std::string& yaml, const std::string& file, const std::vector<std::string>& pipeline_args) {
  OptionsParser parser;
  if (!yaml.empty()) parser.AddYamlFile(yaml, file);
  parser.AddCommandLine(pipeline_args);
  const PipelineOptions options = std::move(parser).Finish();
  return options.python_env ? options.python_env->value : std::string();
}

Status UsePipelinePythonEnv(const std::string& yaml, const std::string& file, const std::vector<std::string>& pipeline_args) {
  return python::UseEnvironment(PipelinePythonEnv(yaml, file, pipeline_args));
}

Status UsePipelineDependencies(const std::string& yaml, const std::string& file, const std::string& base_environment) {
  ASSIGN_OR_RETURN(std::vector<std::string> packages, PythonDependencies(yaml, file));
  if (packages.empty()) return Status::OK();
  python::DependencyOptions install;
  install.base_environment = base_environment;
  spdlog::info("dependencies: {} Python package(s) for the pipeline's transforms, in a venv cached per list "
               "(installed by pip the first time)", packages.size());
  ASSIGN_OR_RETURN(std::string venv, python::InstallDependencies(packages, install));
  return python::UseEnvironment(venv);
}

int RunPipelineTests(const PipelineTestFlags& flags, std::vector<std::string> pipeline_args) {
  constexpr const char* kWho = "dfworker test";
  if (flags.pipeline_path.empty()) return InvocationError(kWho, "a pipeline file is expected");
  if (flags.fix_tests && flags.create_test) return InvocationError(kWho, "at most one of --create_test and --fix_tests may be given");
  if (Status s = InitLogging(flags.log_level); !s.ok()) return InvocationError(kWho, s.message());
  Result<JinjaVariablesText> variables = JinjaVariables(flags.jinja, pipeline_args);
  if (!variables.ok()) return InvocationError(kWho, variables.status().message());
  // Jinja renders in the user's Python: the command line's --python_env applies before the file is read.
  if (Status s = UsePipelinePythonEnv("", flags.pipeline_path, pipeline_args); !s.ok()) return InvocationError(kWho, s.message());
  Result<std::string> yaml = ReadPipelineFile(flags.pipeline_path, *variables);
  if (!yaml.ok()) return InvocationError(kWho, yaml.status().message());
  const std::string python_env = PipelinePythonEnv(*yaml, flags.pipeline_path, pipeline_args);
  if (Status s = python::UseEnvironment(python_env); !s.ok()) return InvocationError(kWho, s.message());
  if (Status s = UsePipelineDependencies(*yaml, flags.pipeline_path, python_env); !s.ok()) return InvocationError(kWho, s.message());
  StageRegistry registry;
  RegisterBuiltinStages(registry);
  Result<PipelineSpec> spec = LoadPipelineString(*yaml, registry, flags.pipeline_path);
  if (!spec.ok()) return InvocationError(kWho, spec.status().message());

  // The file that holds the tests, as written (what --fix_tests and --create_test rewrite).
  const std::string tests_file = flags.test_suite.empty() ? flags.pipeline_path : flags.test_suite;
  std::string tests_text;
  if (flags.test_suite.empty()) {
    tests_text = *yaml;
    if (flags.fix_tests || flags.create_test) {
      Result<std::string> raw = ReadWholeFile(flags.pipeline_path, kMaxPipelineFileBytes);
      if (!raw.ok()) return InvocationError(kWho, raw.status().message());
      if (*raw != *yaml) {
        return InvocationError(kWho, "in-file test fixing is not supported for a templated pipeline (its text is rendered "
                                     "before it is read); keep the tests in a file of their own and pass --test_suite FILE");
      }
    }
  } else {
    Result<std::string> text = ReadWholeFile(flags.test_suite, FileKind{"test suite", kMaxPipelineFileBytes});
    if (!text.ok() && !(flags.create_test && !fs::exists(flags.test_suite))) {
      return InvocationError(kWho, "--test_suite: " + text.status().message());
    }
    tests_text = text.ok() ? *text : std::string();
  }

  // A file the rewrite could not write (read-only, another user's, a FIFO) is refused before the
  // tests run, not after.
  if (flags.fix_tests || flags.create_test) {
    if (Status s = CheckFileReplaceable(tests_file); !s.ok() && s.code() != StatusCode::kNotFound) {
      return InvocationError(kWho, (flags.fix_tests ? "--fix_tests: " : "--create_test: ") + s.message());
    }
  }
  Result<std::string> scratch = MakeScratchParent();
  if (!scratch.ok()) return InvocationError(kWho, scratch.status().message());
  std::error_code ec;
  if (flags.create_test) {
    Result<std::string> updated = CreatePipelineTest(*spec, registry, tests_text, tests_file, *scratch + "/create");
    fs::remove_all(*scratch, ec);
    if (!updated.ok()) return InvocationError(kWho, updated.status().message());
    if (Status s = WriteTestsFile(tests_file, *updated); !s.ok()) {
      return InvocationError(kWho, s.message());
    }
    std::cout << "recorded one test in " << tests_file << "\n";
    return 0;
  }

  Result<std::vector<PipelineTest>> tests = ParsePipelineTests(tests_text, tests_file);
  if (!tests.ok()) {
    fs::remove_all(*scratch, ec);
    return InvocationError(kWho, tests.status().message());
  }

  std::cout << fmt::format("{}: {} test{}{}\n", flags.pipeline_path, tests->size(), tests->size() == 1 ? "" : "s",
                           flags.test_suite.empty() ? "" : " from " + flags.test_suite);
  std::vector<PipelineTestResult> results;
  std::vector<std::string> invalid;
  int passed = 0, failed = 0, fixable = 0;
  double seconds = 0;
  for (std::size_t k = 0; k < tests->size(); ++k) {
    const PipelineTest& t = (*tests)[k];
    Result<PipelineTestResult> r =
        RunPipelineTest(*spec, t, tests_file, registry, *scratch + "/test-" + std::to_string(k));
    if (!r.ok()) {
      std::cout << fmt::format("INVALID  {} (line {})\n         {}\n", t.name, t.line, r.status().message());
      invalid.push_back(r.status().message());
      continue;
    }
    seconds += r->seconds;
    if (r->passed) {
      ++passed;
      std::cout << fmt::format("PASS     {} (line {})  {:.3f} s\n", t.name, t.line, r->seconds);
    } else {
      ++failed;
      std::cout << fmt::format("FAIL     {} (line {})  {:.3f} s\n", t.name, t.line, r->seconds);
      if (!r->run_error.ok()) std::cout << "         the test pipeline failed: " << r->run_error.message() << "\n";
      for (const ExpectationResult& c : r->checks) {
        if (c.passed) continue;
        ++fixable;
        std::cout << Diff(c, tests_file, "         ");
      }
    }
    results.push_back(std::move(*r));
  }
  fs::remove_all(*scratch, ec);
  std::cout << fmt::format("{} passed, {} failed{} ({:.2f} s)\n", passed, failed,
                           invalid.empty() ? "" : fmt::format(", {} invalid", invalid.size()), seconds);
  if (!flags.junit_xml.empty()) {
    if (Status s = WriteJunit(flags.junit_xml, flags.pipeline_path, tests_file, results, invalid); !s.ok()) {
      return InvocationError(kWho, "--junit_xml: " + s.message());
    }
  }
  if (flags.fix_tests && fixable > 0) {  // (as Beam: the valid tests are fixed even when another is invalid)
    const TestFixes fixes = ApplyTestFixes(tests_text, results);
    if (fixes.fixed > 0) {
      if (Status s = WriteTestsFile(tests_file, fixes.text); !s.ok()) {
        return InvocationError(kWho, s.message());
      }
    }
    std::cout << fmt::format("fixed {} expectation{} in {}\n", fixes.fixed, fixes.fixed == 1 ? "" : "s", tests_file);
    for (const std::string& name : fixes.skipped) {
      std::cout << "not fixed: " << name << ": its elements are not written after its key (an alias?); edit it by hand\n";
    }
    // As on Beam: with --fix_tests a row mismatch is recorded, not a failure; a failed run still is.
    const bool run_failed = std::any_of(results.begin(), results.end(), [](const PipelineTestResult& r) { return !r.run_error.ok(); });
    if (!invalid.empty()) return kInvalid;
    return run_failed || !fixes.skipped.empty() ? 1 : 0;
  }
  if (!invalid.empty()) return kInvalid;
  return failed > 0 ? 1 : 0;
}

void AddTestCommand(CLI::App& app, CliContext& context) {
  auto flags = std::make_shared<PipelineTestFlags>();
  CLI::App* cmd = app.add_subcommand("test", "Run the pipeline's own tests (its tests: list, as Beam YAML's --test does)");
  cmd->footer("Each test runs in this process with its mocks; exit 0 when all pass, 1 when one fails, 2 for an invalid "
              "test. See docs/beam.md (\"The pipeline's own tests\").");
  cmd->allow_extras();  // pipeline flags are accepted (and --jinja_variable_flags reads them)
  cmd->add_option("pipeline", flags->pipeline_path, "Pipeline file")->required();
  cmd->add_option("--test_suite", flags->test_suite, "A YAML file whose tests: list to run instead of the pipeline's own");
  cmd->add_flag("--fix_tests", flags->fix_tests, "Rewrite each failing expectation's elements with the rows that arrived");
  cmd->add_flag("--create_test", flags->create_test,
                "Append one test recorded from a run: each source mocked with its first rows, each output expected");
  cmd->add_option("--junit_xml", flags->junit_xml, "Also write a JUnit XML report to this file");
  cmd->add_option("--log_level", flags->log_level, "Log level of the test pipelines (default error)");
  AddJinjaFlags(cmd, flags->jinja);
  cmd->callback([cmd, flags, &context] {
    if (!cmd->remaining().empty()) {
      context.exit_code = InvocationError("dfworker test", "unexpected argument '" + cmd->remaining().front() + "'");
      return;
    }
    context.exit_code = RunPipelineTests(*flags, context.pipeline_args);
  });
}

}  // namespace dfw::cli
