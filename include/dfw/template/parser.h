// Parses a Jinja2 template (the subset in docs/beam.md "Jinja templates") into a Template.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "dfw/common/status.h"
#include "dfw/template/ast.h"
#include "dfw/template/lexer.h"

namespace dfw::tmpl {

// Nesting deeper than this (brackets, operators, statements) is refused, so no input can exhaust
// the stack.
inline constexpr int kMaxParseDepth = 200;

// Errors are "NAME:LINE: what", e.g. "p.yaml:3: unknown tag 'endfor' (expected 'endif')".
Result<std::shared_ptr<const Template>> ParseTemplate(std::string_view source, const std::string& name,
                                                   const LexOptions& options = {});

}  // namespace dfw::tmpl
