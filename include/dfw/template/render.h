// Renders a Jinja2 template the way Beam YAML's loader does (Beam 2.77 yaml_transform.expand_jinja:
// jinja2.Environment(undefined=StrictUndefined) with a file loader): an undefined variable is an
// error wherever it is used; {% include %}, {% import %} / {% from %} and {% extends %} load other
// files through `loader`, a path tried as given, then under each search path, then under ".".
//
// Differences from jinja2 (docs/beam.md "Jinja templates"): the subset of filters, tests and
// methods listed there; ints are 64-bit (overflow is an error); the trailing newline of a template
// is kept (jinja2 drops one unless keep_trailing_newline), so a file renders to itself byte for
// byte when it has no template syntax; no autoescape, no `datetime`.
//
// Not thread-safe per call; separate calls share nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/template/lexer.h"
#include "dfw/template/value.h"

namespace dfw::tmpl {

struct TemplateLimits {
  // Nesting of include/import/extends (a file that includes itself stops here).
  int max_include_depth = 16;
  // Nesting of macro calls (a macro that calls itself stops here).
  int max_call_depth = 64;
  // For-loop iterations of the whole render, all loops together.
  int64_t max_loop_iterations = 1'000'000;
  // Bytes the render may produce, in its output and in every string it builds.
  std::size_t max_output_bytes = std::size_t{16} << 20;
};

// Returns the text of the file at `path`, NotFound when there is none (any other error stops the
// render).
using TemplateLoader = std::function<Result<std::string>(const std::string& path)>;

// Reads real files (at most max_output_bytes each).
TemplateLoader FileTemplateLoader(std::size_t max_bytes = std::size_t{4} << 20);

struct RenderOptions {
  std::vector<std::string> search_paths;  // tried after the path as given, before "."
  TemplateLoader loader;                  // default: FileTemplateLoader()
  TemplateLimits limits;
  LexOptions whitespace;  // jinja2's trim_blocks / lstrip_blocks (Beam: both off; chat templates: both on)
};

// Renders `source` (the template named `name`, used in errors) with `variables` (a dict; its keys
// are the template's globals). Errors are InvalidArgument (ResourceExhausted for a limit),
// "NAME:LINE: what", naming the innermost file and the line; an error in an included file ends with
// "(included from NAME:LINE)".
Result<std::string> RenderTemplate(std::string_view source, const std::string& name, const Value& variables,
                                   const RenderOptions& options = {});

}  // namespace dfw::tmpl
