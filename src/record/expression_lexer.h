// Private: the tokenizer for the Python expression subset.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw::expr {

enum class TokKind : uint8_t { kName, kNumber, kString, kOp, kEnd };

struct Token {
  TokKind kind = TokKind::kEnd;
  int column = 0;      // 1-based byte column
  std::string text;    // name or operator spelling; decoded contents for strings
  Value number;        // kNumber: int or float
};

// Splits `source` into tokens ending with one kEnd token. Whitespace, newlines, backslash line
// continuations and `#` comments separate tokens. Errors name the column and the problem
// ("column 3: f-strings are not supported in expressions here").
Result<std::vector<Token>> Tokenize(std::string_view source);

}  // namespace dfw::expr
