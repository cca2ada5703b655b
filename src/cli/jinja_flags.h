// Beam YAML's Jinja flags on the subcommands that read a pipeline file (run, plan, export, bench):
// --jinja_variables (a JSON object) and --jinja_variable_flags (names of flags promoted to
// variables), read as Beam 2.77's main.py reads them, and the one call that reads a pipeline file
// and renders it (dfw/template/pipeline_file.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/template/value.h"

namespace dfw::cli {

struct JinjaFlags {
  std::string variables;       // --jinja_variables: JSON object
  std::string variable_flags;  // --jinja_variable_flags: a,b
};

// Registers both flags on `cmd` (CLI11 options, so they never reach the pipeline options).
void AddJinjaFlags(CLI::App* cmd, JinjaFlags& flags);

// The template variables: --jinja_variables, updated by the value of each flag named in
// --jinja_variable_flags (Beam: those win). A named flag is taken out of `pipeline_args` (as
// `--name=value` or `--name value`), unless it is a pipeline option's name: then it stays a pipeline
// option and the variable must come through --jinja_variables, as in Beam.
Result<tmpl::Value> JinjaVariables(const JinjaFlags& flags, std::vector<std::string>& pipeline_args);

// Reads the pipeline file at `path` (at most kMaxPipelineFileBytes) and renders it with
// `variables`. A file without template syntax comes back byte for byte. Errors: "pipeline file:
// ..." for a read, "PATH:LINE: ..." for the template.
Result<std::string> ReadPipelineFile(const std::string& path, const tmpl::Value& variables);

}  // namespace dfw::cli
