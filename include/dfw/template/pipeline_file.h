// A Beam YAML pipeline file as Beam's loader reads it (Beam 2.77 main.py + yaml_transform.py
// expand_jinja): rendered as a Jinja2 template with the --jinja_variables before it is parsed.
//
// What dfworker keeps exact that Beam does not promise: a file with no template syntax ({{, {%, {#)
// after its leading comment lines is returned byte for byte, and a rendered file keeps its leading
// comment and blank lines as empty lines (Beam drops them: strip_leading_comments), so line numbers
// of later YAML errors still point into the file.
#pragma once

#include <string>
#include <string_view>

#include "dfw/common/status.h"
#include "dfw/template/render.h"
#include "dfw/template/value.h"

namespace dfw::tmpl {

// Parses --jinja_variables: a JSON object (anything else is InvalidArgument naming the flag).
Result<Value> ParseJinjaVariables(std::string_view json);

// Whether `text` has template syntax after its leading comment lines.
bool HasTemplateSyntax(std::string_view text);

// The pipeline text to parse: `text` (the file at `path`) rendered with `variables` (a dict, or
// none for no variables). Templates it includes are searched for as given, then in the pipeline
// file's folder (Beam adds it), then in ".". Errors are InvalidArgument or ResourceExhausted,
// "FILE:LINE: what".
Result<std::string> RenderPipelineFile(const std::string& path, std::string_view text, const Value& variables,
                                       const TemplateLimits& limits = {});

}  // namespace dfw::tmpl
