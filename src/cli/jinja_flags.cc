#include "jinja_flags.h"

#include <algorithm>
#include <string_view>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "dfw/common/file.h"
#include "dfw/options/parse.h"
#include "dfw/python/python.h"

namespace dfw::cli {
namespace {

// Offset of the first line that is neither blank nor a '#' comment (Beam's strip_leading_comments).
std::size_t BodyStart(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view line = text.substr(pos, end - pos);
    const std::size_t first = line.find_first_not_of(" \t\r\n\f\v");
    if (first != std::string_view::npos && line[first] != '#') break;
    pos = end;
  }
  return pos;
}

bool HasTemplateSyntax(std::string_view body) {
  for (std::size_t i = body.find('{'); i != std::string_view::npos && i + 1 < body.size(); i = body.find('{', i + 1)) {
    if (body[i + 1] == '{' || body[i + 1] == '%' || body[i + 1] == '#') return true;
  }
  return false;
}

}  // namespace

void AddJinjaFlags(CLI::App* cmd, JinjaFlags& flags) {
  cmd->add_option("--jinja_variables", flags.variables,
                  "A JSON object of variables for the pipeline file, rendered as a Jinja template first, "
                  "e.g. '{\"K\": 3}' (docs/beam.md \"Jinja templates\")");
  cmd->add_option("--jinja_variable_flags", flags.variable_flags,
                  "Comma-separated flag names whose values (--NAME=VALUE) become Jinja variables");
}

Result<JinjaVariablesText> JinjaVariables(const JinjaFlags& flags, std::vector<std::string>& pipeline_args) {
  JinjaVariablesText vars;
  if (!flags.variables.empty()) {
    // nlohmann's SAX check builds nothing, so any depth is safe here; Python reads it later.
    if (!nlohmann::json::accept(flags.variables)) {
      return InvalidArgument("--jinja_variables: not valid JSON: '" + flags.variables + "'");
    }
    const std::size_t first = flags.variables.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || flags.variables[first] != '{') {
      return InvalidArgument("--jinja_variables: expected a JSON object such as '{\"K\": 3}', got '" + flags.variables + "'");
    }
    vars.json = flags.variables;
  }
  auto put = [&vars](const std::string& key, std::string value) {
    for (auto& [k, v] : vars.from_flags) {
      if (k == key) {
        v = std::move(value);
        return;
      }
    }
    vars.from_flags.emplace_back(key, std::move(value));
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
  return vars;
}

Result<std::string> ReadPipelineFile(const std::string& path, const JinjaVariablesText& variables) {
  Result<std::string> text = ReadWholeFile(path, kMaxPipelineFileBytes);
  if (!text.ok()) {
    const bool too_big = text.status().message().find("over the limit") != std::string::npos;
    return Status(text.status().code(), "pipeline file: " + text.status().message() +
                                            (too_big ? " (pipeline files are at most 4 MiB: put data in input files)" : ""));
  }
  const std::size_t start = BodyStart(*text);
  if (!HasTemplateSyntax(std::string_view(*text).substr(start))) return text;
  std::string source(static_cast<std::size_t>(std::count(text->begin(), text->begin() + static_cast<std::ptrdiff_t>(start), '\n')), '\n');
  source.append(*text, start);
  ASSIGN_OR_RETURN(std::string rendered, python::RenderPipelineTemplate(path, source, variables.json, variables.from_flags));
  // jinja2 drops one trailing newline; the file keeps it, as it keeps its lines (same YAML).
  if (text->ends_with('\n') && !rendered.ends_with('\n')) rendered.push_back('\n');
  if (rendered.size() > kMaxPipelineFileBytes) {
    return InvalidArgument(path + ": the rendered pipeline file is " + std::to_string(rendered.size() >> 20) +
                           " MiB; pipeline files are at most 4 MiB");
  }
  return rendered;
}

}  // namespace dfw::cli
