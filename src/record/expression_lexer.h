// Private: the tokenizer for the Python expression subset.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw::expr {

enum class TokKind : uint8_t { kName, kNumber, kString, kOp, kEnd, kFString };

struct Token {
  TokKind kind = TokKind::kEnd;
  int column = 0;      // 1-based byte column
  std::string text;    // name or operator spelling; decoded contents for strings
  Value number;        // kNumber: int or float
  // kFString: literal text (escapes decoded), then per replacement field its expression source,
  // its conversion and format spec (conversion char or ' ', then the spec), then literal text...
  std::vector<std::string> parts;
};

// Splits `source` into tokens ending with one kEnd token. Whitespace, newlines, backslash line
// continuations and `#` comments separate tokens. Errors name the column and the problem
// ("column 3: f-strings are not supported in expressions here").
Result<std::vector<Token>> Tokenize(std::string_view source);
// As above; with `fstrings`, f"..." literals become kFString tokens (def callables) instead of an error.
Result<std::vector<Token>> Tokenize(std::string_view source, bool fstrings);

}  // namespace dfw::expr
