// The parsed form of a template: expressions and statements, each with the line it starts on.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dfw/template/value.h"

namespace dfw::tmpl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // kids: items
    kDict,     // kids: key, value, key, value, ...
    kAttr,     // kids[0].name
    kItem,     // kids[0][kids[1]]
    kSlice,    // kids[0][kids[1]:kids[2]:kids[3]] (a missing part is a null kid)
    kCall,     // kids[0](kids[1..], kwargs)
    kFilter,   // kids[0] | name(kids[1..], kwargs)
    kTest,     // kids[0] is [not] name(kids[1..]); negate
    kUnary,    // name (op: "not", "-", "+") kids[0]
    kBinary,   // kids[0] name(op) kids[1]; op one of or and == != < <= > >= in notin + - * / // % ** ~
    kCond,     // kids[0] if kids[1] else kids[2] (kids.size() == 2: no else)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  Value value;
  std::string name;
  bool negate = false;
  std::vector<ExprPtr> kids;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conditions[i] -> bodies[i]; else_body
    kFor,       // for targets in expr [if cond] body else_body
    kSet,       // set targets = expr, or {% set name %}body{% endset %} (expr null)
    kInclude,   // include expr
    kImport,    // import expr as name / from expr import names (as aliases)
    kMacro,     // macro name(params = defaults) body
    kBlock,     // block name body
    kExtends,   // extends expr
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  std::string name;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  std::vector<std::string> targets;                         // for/set targets; from-import names
  std::vector<std::string> aliases;                         // from-import: the local names
  std::vector<std::pair<std::string, ExprPtr>> params;      // macro parameters (default or null)
};

// A parsed template. `blocks` points into `body` (every {% block %}, nested ones too).
struct Template {
  std::string name;
  Body body;
  std::map<std::string, const Node*> blocks;
  bool extends = false;  // has a top-level {% extends %}
};

}  // namespace dfw::tmpl
