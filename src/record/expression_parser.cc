#include "record/expression_parser.h"

namespace dfw::expr {

Result<Program> ParsePython(std::string_view source) {
  ASSIGN_OR_RETURN(std::vector<Token> toks, Tokenize(source));
  if (toks.size() == 1) return InvalidArgument("column 1: empty expression");
  return Parser(std::move(toks)).Run(source);
}

}  // namespace dfw::expr
