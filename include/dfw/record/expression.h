// Expressions used by MapToFields, Filter and friends (beam-yaml.md §6).
//
// Two languages:
//  - kGeneric (no `language:` in the YAML): a field name, a literal, or one comparison
//    `atomic OP atomic` with OP in == != < <= > >=, exactly as Beam's generic language.
//  - kPython: the Python *expression* subset (literals, names bound to row fields, arithmetic,
//    chained comparisons, and/or/not, in/not in, conditional expressions, indexing/slicing,
//    builtins len/str/int/float/round/abs/min/max/bool, and the str methods lower/upper/strip/
//    split/startswith/endswith/replace). Anything else is a compile error naming the construct:
//    the fast path. Stages hand what it does not compile to CPython (dfw/python/python.h).
//
// Compile once per transform; evaluate per row without re-parsing.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw {

enum class ExprLanguage { kGeneric, kPython };

class CompiledExpression {
 public:
  virtual ~CompiledExpression() = default;

  // Evaluates against `row`. Errors are Python-style and name the problem, e.g.
  // "NameError: name 'x' is not defined; fields of this row: a, b" or
  // "TypeError: unsupported operand type(s) for +: 'int' and 'str'".
  // Thread-safe: const and stateless, called concurrently from TBB tasks.
  virtual Result<Value> Evaluate(const Row& row) const = 0;

  // Evaluate over rows[0..n) into out (resized to n). An expression run elsewhere (CPython, see
  // dfw/python/python.h) overrides it to make one request per batch. Thread-safe as Evaluate.
  virtual void EvaluateBatch(const Row* rows, std::size_t n, std::vector<Result<Value>>& out) const {
    out.clear();
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.push_back(Evaluate(rows[i]));
  }

  // Field names the expression reads (free names that are not builtins), in first-use order.
  virtual const std::vector<std::string>& referenced_fields() const = 0;

  // The source text it was compiled from.
  virtual const std::string& source() const = 0;
};

// Compiles `source`. A syntax error or an unsupported construct is kInvalidArgument with the
// column and the construct named ("column 5: lambda is not supported in expressions here").
Result<std::unique_ptr<CompiledExpression>> CompileExpression(std::string_view source, ExprLanguage language);

// Python truthiness: None/False/0/0.0/""/[]/empty row are false; everything else true.
bool IsTruthy(const Value& v);

}  // namespace dfw
