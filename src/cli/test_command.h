// `dfworker test PIPELINE.yaml [--test_suite FILE] [--fix_tests] [--create_test] [--junit_xml F]`
// (also `dfworker run PIPELINE.yaml --test ...`, as Beam spells it): the pipeline's own `tests:`,
// each run in this process (dfw/pipeline/pipeline_tests.h).
#pragma once

#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "jinja_flags.h"

namespace dfw::cli {

struct PipelineTestFlags {
  std::string pipeline_path;
  std::string test_suite;   // --test_suite: the tests live in this file, not in the pipeline's tests:
  bool fix_tests = false;   // --fix_tests: rewrite failing expectations with the rows that arrived
  bool create_test = false; // --create_test: append one test recorded from a run with mocked sources
  std::string junit_xml;    // --junit_xml: also write a JUnit XML report here
  std::string log_level = "error";  // the test pipelines' logs (LogForTesting rows are info)
  JinjaFlags jinja;
};

// Exit code: 0 every test passed, 1 one failed, 2 an invalid invocation or test specification.
int RunPipelineTests(const PipelineTestFlags& flags, std::vector<std::string> pipeline_args);

// --python_env (docs/options.md) from the pipeline file's options: block (`yaml`, "" before the
// file is rendered) and the command line, which wins; else DFW_PYTHON_ENV when set. Configures the
// embedded Python with it (dfw/python/python.h UseEnvironment); kInvalidArgument for a path that is
// not a Python 3.11 venv or prefix.
Status UsePipelinePythonEnv(const std::string& yaml, const std::string& file, const std::vector<std::string>& pipeline_args);
// The --python_env value UsePipelinePythonEnv uses ("" when none is given).
std::string PipelinePythonEnv(const std::string& yaml, const std::string& file, const std::vector<std::string>& pipeline_args);

// Beam YAML's `dependencies:` of the pipeline's transforms (dfw/pipeline/dependencies.h): when there
// are any, installs them into a venv cached per list (dfw/python/python.h InstallDependencies, pip
// from --python_env's Python, honouring PIP_INDEX_URL / PIP_NO_INDEX / PIP_FIND_LINKS) and makes it
// the embedded Python's environment, for this process and the SDK processes it starts; the venv is
// made from `base_environment` (--python_env, "" = the system's). Call after UsePipelinePythonEnv.
// kInvalidArgument for a bad list (file:line:col),
// kUnavailable naming what pip could not install and how to install it by hand.
Status UsePipelineDependencies(const std::string& yaml, const std::string& file, const std::string& base_environment);

}  // namespace dfw::cli
