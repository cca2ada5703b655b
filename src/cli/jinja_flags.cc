#include "jinja_flags.h"

#include "commands.h"
#include "dfw/common/file.h"
#include "dfw/options/parse.h"
#include "dfw/template/pipeline_file.h"

namespace dfw::cli {

void AddJinjaFlags(CLI::App* cmd, JinjaFlags& flags) {
  cmd->add_option("--jinja_variables", flags.variables,
                  "A JSON object of variables for the pipeline file, rendered as a Jinja template first, "
                  "e.g. '{\"K\": 3}' (docs/beam.md \"Jinja templates\")");
  cmd->add_option("--jinja_variable_flags", flags.variable_flags,
                  "Comma-separated flag names whose values (--NAME=VALUE) become Jinja variables");
}

Result<tmpl::Value> JinjaVariables(const JinjaFlags& flags, std::vector<std::string>& pipeline_args) {
  tmpl::ValueDict vars;
  if (!flags.variables.empty()) {
    ASSIGN_OR_RETURN(tmpl::Value parsed, tmpl::ParseJinjaVariables(flags.variables));
    vars = parsed.as_dict();
  }
  auto put = [&vars](const std::string& key, std::string value) {
    for (auto& [k, v] : vars) {
      if (k == key) {
        v = tmpl::Value::String(std::move(value));
        return;
      }
    }
    vars.emplace_back(key, tmpl::Value::String(std::move(value)));
  };
  std::size_t start = 0;
  while (start <= flags.variable_flags.size() && !flags.variable_flags.empty()) {
    std::size_t comma = flags.variable_flags.find(',', start);
    if (comma == std::string::npos) comma = flags.variable_flags.size();
    const std::string name = flags.variable_flags.substr(start, comma - start);
    start = comma + 1;
    if (name.empty()) continue;
    std::string underscored = name;
    for (char& c : underscored) c = c == '-' ? '_' : c;
    if (IsKnownPipelineFlag(underscored)) continue;  // Beam skips names that are pipeline options
    const std::string spelled = "--" + name;
    for (std::size_t i = 0; i < pipeline_args.size();) {
      const std::string& arg = pipeline_args[i];
      if (arg.rfind(spelled + "=", 0) == 0) {
        put(underscored, arg.substr(spelled.size() + 1));
        pipeline_args.erase(pipeline_args.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (arg == spelled) {
        if (i + 1 >= pipeline_args.size()) return InvalidArgument("--jinja_variable_flags: " + spelled + " expects a value");
        put(underscored, pipeline_args[i + 1]);
        pipeline_args.erase(pipeline_args.begin() + static_cast<std::ptrdiff_t>(i),
                            pipeline_args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      } else {
        ++i;
      }
    }
    if (comma == flags.variable_flags.size()) break;
  }
  return tmpl::Value::Dict(std::move(vars));
}

Result<std::string> ReadPipelineFile(const std::string& path, const tmpl::Value& variables) {
  Result<std::string> text = ReadWholeFile(path, kMaxPipelineFileBytes);
  if (!text.ok()) {
    const bool too_big = text.status().message().find("over the limit") != std::string::npos;
    return Status(text.status().code(), "pipeline file: " + text.status().message() +
                                            (too_big ? " (pipeline files are at most 4 MiB: put data in input files)" : ""));
  }
  tmpl::TemplateLimits limits;
  limits.max_output_bytes = kMaxPipelineFileBytes;  // the rendered file is a pipeline file too
  return tmpl::RenderPipelineFile(path, *text, variables, limits);
}

}  // namespace dfw::cli
