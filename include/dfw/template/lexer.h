// Splits a Jinja2 template into tokens: raw text, the delimiters {{ }} {% %} (comments {# #} are
// dropped here) and, inside them, names, literals and operators. Whitespace control is applied
// here: `{%-` / `{{-` / `{#-` strip the whitespace before the tag, `-%}` / `-}}` / `-#}` the
// whitespace after it. `{% raw %}...{% endraw %}` becomes one text token. Jinja2's defaults
// otherwise (no trim_blocks, no lstrip_blocks) unless LexOptions turns them on, as transformers'
// chat-template environment does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw::tmpl {

enum class TokenKind {
  kText,        // text outside tags (text holds it)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword (text)
  kString,      // string literal, unescaped (text)
  kInt,         // integer literal (int_value)
  kFloat,       // float literal (float_value)
  kOp,          // operator or punctuation (text): + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } . , : |
  kEnd,         // end of the template
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;  // 1-based line where the token starts
};

// jinja2.Environment's whitespace options.
struct LexOptions {
  bool trim_blocks = false;    // drop the first newline after a block tag or comment
  bool lstrip_blocks = false;  // drop spaces and tabs from the start of a line up to a block tag or comment
};

// Errors are "NAME:LINE: what" (an unclosed tag or string, an unknown character).
Result<std::vector<Token>> Tokenize(std::string_view source, const std::string& name, const LexOptions& options = {});

}  // namespace dfw::tmpl
