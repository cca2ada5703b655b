// Atoms, displays, calls, attributes and subscripts of the Python expression parser.
#include <string>

#include "record/expression_parser.h"

namespace dfw::expr {
namespace {

std::vector<std::string> SpecNames(const std::vector<CallSpec>& specs) {
  std::vector<std::string> v;
  for (const auto& s : specs) v.emplace_back(s.name);
  return v;
}

int FindSpec(const std::vector<CallSpec>& specs, std::string_view name) {
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string Arity(const CallSpec& s) {
  auto plural = [](int n) { return std::to_string(n) + (n == 1 ? " argument" : " arguments"); };
  if (s.max_args >= kMaxCallArgs) return "at least " + plural(s.min_args);
  if (s.min_args == s.max_args) return plural(s.min_args);
  return std::to_string(s.min_args) + " to " + plural(s.max_args);
}

}  // namespace

Result<int32_t> Parser::FoldList(Node n) {
  bool all_const = true;
  for (int32_t k : n.kids) all_const = all_const && p_.nodes[k].kind == NodeKind::kConst;
  if (!all_const) return Add(std::move(n));
  // A constant display (`x in ['a', 'b']`) is built once here instead of once per row.
  List items;
  items.reserve(n.kids.size());
  for (int32_t k : n.kids) items.push_back(p_.nodes[k].value);
  return Add(Node{.kind = NodeKind::kConst, .column = n.column, .value = Value::FromList(std::move(items))});
}

Result<int32_t> Parser::ParseDisplay(std::string_view close, int col) {
  Node n{.kind = NodeKind::kList, .column = col};
  while (!AtOp(close)) {
    if (AtOp("*")) return Error(Peek().column, "unpacking with '*' is not supported in expressions here");
    ASSIGN_OR_RETURN(int32_t k, ParseTernary());
    n.kids.push_back(k);
    if (AtName("for")) return Unexpected(Peek());
    if (!AtOp(",")) break;
    Next();
  }
  RETURN_IF_ERROR(Expect(close));
  return FoldList(std::move(n));
}

Result<int32_t> Parser::ParseAtom() {
  const Token& t = Peek();
  int col = t.column;
  switch (t.kind) {
    case TokKind::kNumber: {
      Value v = Next().number;
      return Add(Node{.kind = NodeKind::kConst, .column = col, .value = std::move(v)});
    }
    case TokKind::kString:
    case TokKind::kFString: {
      std::string s;
      while (At(TokKind::kString)) s += Next().text;  // "a" "b" is "ab", as in Python
      return Add(Node{.kind = NodeKind::kConst, .column = col, .value = Value::String(std::move(s))});
    }
    case TokKind::kName: {
      if (t.text == "True" || t.text == "False") {
        bool b = Next().text == "True";
        return Add(Node{.kind = NodeKind::kConst, .column = col, .value = Value::Bool(b)});
      }
      if (t.text == "None") {
        Next();
        return Add(Node{.kind = NodeKind::kConst, .column = col});
      }
      for (const char* kw : {"if", "else", "in", "is", "and", "or", "not", "lambda", "for", "def", "class", "import", "from",
                             "return", "del", "global", "nonlocal", "assert", "raise", "try", "while", "with", "pass",
                             "break", "continue", "elif", "except", "finally", "as", "await", "async", "yield"})
        if (t.text == kw) return Unexpected(t);
      std::string name = Next().text;
      if (AtOp("(")) {
        return ParseCall(-1, name, col);
      }
      NoteField(name);
      return Add(Node{.kind = NodeKind::kName, .column = col, .name = std::move(name)});
    }
    case TokKind::kOp: {
      if (t.text == "[") {
        Next();
        return ParseDisplay("]", col);
      }
      if (t.text != "(") return Unexpected(t);
      Next();
      if (AtOp(")")) {
        Next();
        return Add(Node{.kind = NodeKind::kConst, .column = col, .value = Value::FromList({})});
      }
      ASSIGN_OR_RETURN(int32_t inner, ParseTernary());
      if (AtName("for")) return Unexpected(Peek());
      if (AtOp(",")) {  // a tuple: evaluated as a list
        Node n{.kind = NodeKind::kList, .column = col, .kids = {inner}};
        while (AtOp(",")) {
          Next();
          if (AtOp(")")) break;
          ASSIGN_OR_RETURN(int32_t k, ParseTernary());
          n.kids.push_back(k);
        }
        RETURN_IF_ERROR(Expect(")"));
        return FoldList(std::move(n));
      }
      RETURN_IF_ERROR(Expect(")"));
      return inner;
    }
    default:
      return Unexpected(t);
  }
}

Result<int32_t> Parser::ParsePostfix() {
  ASSIGN_OR_RETURN(int32_t node, ParseAtom());
  while (true) {
    if (AtOp(".")) {
      Next();
      if (!At(TokKind::kName)) return Error(Peek().column, "expected an attribute name after '.'");
      int col = Peek().column;
      std::string name = Next().text;
      if (AtOp("(")) {
        ASSIGN_OR_RETURN(node, ParseCall(node, name, col));
      } else {
        ASSIGN_OR_RETURN(node, Add(Node{.kind = NodeKind::kAttr, .column = col, .kids = {node}, .name = std::move(name)}));
      }
    } else if (AtOp("[")) {
      ASSIGN_OR_RETURN(node, ParseSubscript(node));
    } else if (AtOp("(")) {
      return Error(Peek().column, "calling the result of an expression is not supported; only the builtins (" +
                                      Names(Builtins()) + ") and methods can be called");
    } else {
      return node;
    }
  }
}

Result<int32_t> Parser::ParseSubscript(int32_t obj) {
  int col = Next().column;  // '['
  int32_t lo = -1, hi = -1, step = -1;
  if (!AtOp(":")) {
    ASSIGN_OR_RETURN(lo, ParseTernary());
  }
  if (AtOp("]")) {
    if (lo < 0) return Error(Peek().column, "empty subscript");
    Next();
    return Add(Node{.kind = NodeKind::kIndex, .column = col, .kids = {obj, lo}});
  }
  RETURN_IF_ERROR(Expect(":"));
  if (!AtOp(":") && !AtOp("]")) {
    ASSIGN_OR_RETURN(hi, ParseTernary());
  }
  if (AtOp(":")) {
    Next();
    if (!AtOp("]")) {
      ASSIGN_OR_RETURN(step, ParseTernary());
    }
  }
  RETURN_IF_ERROR(Expect("]"));
  return Add(Node{.kind = NodeKind::kSlice, .column = col, .kids = {obj, lo, hi, step}});
}

// `self` < 0: a call of the builtin `name`; otherwise a call of method `name` on node `self`.
Result<int32_t> Parser::ParseCall(int32_t self, const std::string& name, int col) {
  bool method = self >= 0;
  const std::vector<CallSpec>& specs = method ? Methods() : Builtins();
  int fn = FindSpec(specs, name);
  if (fn < 0) {
    std::string what = method ? "unknown method '" + name + "()'" : "call to unknown function '" + name + "()'";
    return Error(col, what + DidYouMeanSuffix(name, SpecNames(specs)) + "; supported " +
                          (method ? "methods: " : "functions: ") + Names(specs));
  }
  const CallSpec& spec = specs[fn];
  Next();  // '('
  std::vector<int32_t> args;
  bool seen_keyword = false;
  while (!AtOp(")")) {
    if (AtOp("*")) return Error(Peek().column, "*args unpacking is not supported in expressions here");
    if (AtOp("**")) return Error(Peek().column, "**kwargs unpacking is not supported in expressions here");
    if (At(TokKind::kName) && Peek(1).kind == TokKind::kOp && Peek(1).text == "=") {
      int kcol = Peek().column;
      std::string key = Next().text;
      Next();
      auto it = std::find(spec.params.begin(), spec.params.end(), key);
      if (it == spec.params.end())
        return Error(kcol, std::string(spec.name) + "() got an unexpected keyword argument '" + key + "'");
      std::size_t pos = static_cast<std::size_t>(it - spec.params.begin());
      if (args.size() > pos && args[pos] >= 0)
        return Error(kcol, std::string(spec.name) + "() got multiple values for argument '" + key + "'");
      if (args.size() <= pos) args.resize(pos + 1, -1);
      ASSIGN_OR_RETURN(args[pos], ParseTernary());
      seen_keyword = true;
    } else {
      if (seen_keyword) return Error(Peek().column, "positional argument follows keyword argument");
      ASSIGN_OR_RETURN(int32_t a, ParseTernary());
      args.push_back(a);
    }
    if (AtName("for")) return Unexpected(Peek());
    if (!AtOp(",")) break;
    Next();
  }
  RETURN_IF_ERROR(Expect(")"));
  int given = static_cast<int>(args.size());
  bool missing = false;
  for (int i = 0; i < spec.min_args; ++i) missing = missing || i >= given || args[i] < 0;
  if (given > spec.max_args || missing || given > kMaxCallArgs)
    return Error(col, std::string(spec.name) + "() takes " + Arity(spec) + " (" + std::to_string(given) + " given)");
  Node n{.kind = method ? NodeKind::kMethod : NodeKind::kCall, .fn = static_cast<uint8_t>(fn), .column = col};
  if (method) n.kids.push_back(self);
  n.kids.insert(n.kids.end(), args.begin(), args.end());
  return Add(std::move(n));
}

}  // namespace dfw::expr
