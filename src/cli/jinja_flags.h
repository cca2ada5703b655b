// Beam YAML's Jinja flags on the subcommands that read a pipeline file (run, plan, export, bench,
// test): --jinja_variables (a JSON object) and --jinja_variable_flags (names of flags promoted to
// variables), read as Beam 2.77's main.py reads them, and the one call that reads a pipeline file
// and renders it with Jinja2 in the embedded CPython (dfw/python/python.h), as Beam does.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

#include "dfw/common/status.h"

namespace dfw::cli {

struct JinjaFlags {
  std::string variables;       // --jinja_variables: JSON object
  std::string variable_flags;  // --jinja_variable_flags: a,b
};

// The template variables: the --jinja_variables text (read by Python's json module when the file
// is rendered) and the values of the flags named in --jinja_variable_flags, which win (Beam).
struct JinjaVariablesText {
  std::string json;                                          // "" = none
  std::vector<std::pair<std::string, std::string>> from_flags;  // name (dashes as underscores), value
};

// Registers both flags on `cmd` (CLI11 options, so they never reach the pipeline options).
void AddJinjaFlags(CLI::App* cmd, JinjaFlags& flags);

// The variables. --jinja_variables must be one JSON object (checked here without building it). A
// flag named in --jinja_variable_flags is taken out of `pipeline_args` (as `--name=value` or
// `--name value`), unless it is a pipeline option's name: then it stays a pipeline option and the
// variable must come through --jinja_variables, as in Beam.
Result<JinjaVariablesText> JinjaVariables(const JinjaFlags& flags, std::vector<std::string>& pipeline_args);

// Reads the pipeline file at `path` (at most kMaxPipelineFileBytes) and renders it with
// `variables`. A file without template syntax ({{, {%, {# after its leading comment lines) comes
// back byte for byte and needs no Python; a rendered file keeps its leading comment lines as empty
// lines, so YAML errors still point at the file's lines. Errors: "pipeline file: ..." for a read,
// "PATH:LINE: ..." for the template; kUnavailable when Python or Jinja2 is not installed.
Result<std::string> ReadPipelineFile(const std::string& path, const JinjaVariablesText& variables);

}  // namespace dfw::cli
