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
  // Inside a def a list display builds a new mutable list each time, as in Python.
  bool mutable_list = def_mode_ && close == "]";
  if (mutable_list) n.fn = 1;
  while (!AtOp(close)) {
    if (AtOp("*")) return Error(Peek().column, "unpacking with '*' is not supported in expressions here");
    ASSIGN_OR_RETURN(int32_t k, ParseTernary());
    n.kids.push_back(k);
    if (AtName("for") && mutable_list && n.kids.size() == 1) {
      // [elem for NAME in iterable if cond]: one loop variable, at most one condition.
      Next();
      // The loop variable, or names a tuple item unpacks into (kw holds them).
      if (!At(TokKind::kName)) return Error(Peek().column, "expected a loop variable name in the comprehension");
      Node c{.kind = NodeKind::kListComp, .column = col, .kids = {k}, .name = Next().text};
      if (AtOp(",")) {
        c.kw.push_back(c.name);
        while (AtOp(",")) {
          Next();
          if (!At(TokKind::kName)) return Error(Peek().column, "expected a loop variable name in the comprehension");
          c.kw.push_back(Next().text);
        }
      }
      if (!AtName("in")) return Error(Peek().column, "expected 'in' in the comprehension (loop variables are names)");
      Next();
      ASSIGN_OR_RETURN(int32_t iter, ParseBool(true));
      c.kids.push_back(iter);
      int32_t cond = -1;
      if (AtName("if")) {
        Next();
        ASSIGN_OR_RETURN(cond, ParseBool(true));
      }
      c.kids.push_back(cond);
      if (AtName("for") || AtName("if")) return Error(Peek().column, "comprehensions here take one 'for' and at most one 'if'");
      RETURN_IF_ERROR(Expect("]"));
      return Add(std::move(c));
    }
    if (AtName("for")) return Unexpected(Peek());
    if (!AtOp(",")) break;
    Next();
  }
  RETURN_IF_ERROR(Expect(close));
  if (mutable_list) return Add(std::move(n));
  return FoldList(std::move(n));
}

Result<int32_t> Parser::ParseDict(int col) {
  Node n{.kind = NodeKind::kDict, .column = col};
  while (!AtOp("}")) {
    if (AtOp("**")) return Error(Peek().column, "'**' unpacking is not supported in dict displays here");
    ASSIGN_OR_RETURN(int32_t k, ParseTernary());
    if (!AtOp(":") && n.kids.empty() && (AtOp(",") || AtOp("}"))) {
      // {a, b}: a set display, a mutable list display with fn == 2.
      Node set{.kind = NodeKind::kList, .fn = 2, .column = col, .kids = {k}};
      while (AtOp(",")) {
        Next();
        if (AtOp("}")) break;
        ASSIGN_OR_RETURN(int32_t e, ParseTernary());
        set.kids.push_back(e);
      }
      RETURN_IF_ERROR(Expect("}"));
      return Add(std::move(set));
    }
    if (!AtOp(":")) {
      if (AtOp(",") || AtOp("}")) return Error(Peek().column, "expected ':' in the dict display");
      if (AtName("for")) return Error(Peek().column, "dict and set comprehensions are not supported here");
      return Unexpected(Peek());
    }
    Next();
    ASSIGN_OR_RETURN(int32_t v, ParseTernary());
    if (AtName("for")) return Error(Peek().column, "dict comprehensions are not supported here");
    n.kids.push_back(k);
    n.kids.push_back(v);
    if (!AtOp(",")) break;
    Next();
  }
  RETURN_IF_ERROR(Expect("}"));
  return Add(std::move(n));
}

// Adjacent string and f-string literals (def mode): one kFormat node.
Result<int32_t> Parser::ParseFString(int col) {
  Node n{.kind = NodeKind::kFormat, .column = col, .kw = {""}};
  while (At(TokKind::kString) || At(TokKind::kFString)) {
    Token tok = Next();
    if (tok.kind == TokKind::kString) {
      n.kw.back() += tok.text;
      continue;
    }
    n.kw.back() += tok.parts[0];
    for (std::size_t i = 1; i + 2 < tok.parts.size(); i += 3) {
      ASSIGN_OR_RETURN(int32_t k, ParseSubExpression(tok.parts[i], tok.column));
      n.kids.push_back(k);
      n.kw.push_back(tok.parts[i + 1]);
      n.kw.push_back(tok.parts[i + 2]);
    }
  }
  return Add(std::move(n));
}

// An f-string field's expression, parsed into this program; errors name the f-string's column.
Result<int32_t> Parser::ParseSubExpression(const std::string& text, int col) {
  RETURN_IF_ERROR(Enter());
  Result<std::vector<Token>> toks = Tokenize(text, true);
  if (!toks.ok()) return Error(col, "in an f-string field: " + toks.status().message());
  Parser sub(std::move(toks).value());
  sub.def_mode_ = true;
  sub.depth_ = depth_ + 1;
  std::size_t before = p_.nodes.size();
  sub.p_ = std::move(p_);
  sub.height_ = std::move(height_);
  Result<int32_t> r = sub.ParseTop();
  if (r.ok() && !sub.At(TokKind::kEnd)) r = sub.Unexpected(sub.Peek());
  p_ = std::move(sub.p_);
  height_ = std::move(sub.height_);
  for (std::size_t i = before; i < p_.nodes.size(); ++i) p_.nodes[i].column += col - 1;  // counted from the f-string
  if (!r.ok()) return Error(col, "in an f-string field: " + r.status().message());
  return r;
}

// lambda a, b=...: body (def mode). Parameters are names; defaults are not supported.
Result<int32_t> Parser::ParseLambda() {
  int col = Next().column;  // 'lambda'
  Node n{.kind = NodeKind::kLambda, .column = col};
  while (!AtOp(":")) {
    if (!At(TokKind::kName)) return Error(Peek().column, "lambda parameters here are names (no defaults, *args or **kwargs)");
    std::string p = Next().text;
    if (std::find(n.kw.begin(), n.kw.end(), p) != n.kw.end()) return Error(col, "duplicate argument '" + p + "' in lambda");
    n.kw.push_back(std::move(p));
    if (!AtOp(",")) break;
    Next();
  }
  RETURN_IF_ERROR(Expect(":"));
  ASSIGN_OR_RETURN(int32_t body, ParseTernary());
  n.kids.push_back(body);
  return Add(std::move(n));
}

// The arguments of a call inside a def: positional, then NAME=value keywords.
Result<int32_t> Parser::ParseDefCall(Node n) {
  Next();  // '('
  while (!AtOp(")")) {
    if (AtOp("*")) return Error(Peek().column, "*args unpacking is not supported here");
    if (AtOp("**")) return Error(Peek().column, "**kwargs unpacking is not supported here");
    if (At(TokKind::kName) && Peek(1).kind == TokKind::kOp && Peek(1).text == "=") {
      int kcol = Peek().column;
      std::string key = Next().text;
      Next();
      if (std::find(n.kw.begin(), n.kw.end(), key) != n.kw.end()) return Error(kcol, "keyword argument repeated: " + key);
      n.kw.push_back(std::move(key));
    } else if (!n.kw.empty()) {
      return Error(Peek().column, "positional argument follows keyword argument");
    }
    ASSIGN_OR_RETURN(int32_t a, ParseTernary());
    n.kids.push_back(a);
    if (AtName("for")) return Error(Peek().column, "generator expressions are not supported here; use a [list comprehension]");
    if (n.kids.size() > static_cast<std::size_t>(kMaxCallArgs) + 1) return Error(n.column, "too many arguments in one call");
    if (!AtOp(",")) break;
    Next();
  }
  RETURN_IF_ERROR(Expect(")"));
  return Add(std::move(n));
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
      for (int k = 0; def_mode_ && (Peek(k).kind == TokKind::kString || Peek(k).kind == TokKind::kFString); ++k)
        if (Peek(k).kind == TokKind::kFString) return ParseFString(col);
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
        if (def_mode_) return ParseDefCall(Node{.kind = NodeKind::kCallName, .column = col, .name = std::move(name)});
        return ParseCall(-1, name, col);
      }
      if (!def_mode_) NoteField(name);
      return Add(Node{.kind = NodeKind::kName, .column = col, .name = std::move(name)});
    }
    case TokKind::kOp: {
      if (t.text == "[") {
        Next();
        return ParseDisplay("]", col);
      }
      if (t.text == "{" && def_mode_) {
        Next();
        return ParseDict(col);
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
      if (AtOp("(") && def_mode_) {
        int fn = FindSpec(Methods(), name);
        Node call{.kind = NodeKind::kCallAttr, .fn = fn < 0 ? kNoMethod : static_cast<uint8_t>(fn), .column = col,
                  .kids = {node}, .name = std::move(name)};
        ASSIGN_OR_RETURN(node, ParseDefCall(std::move(call)));
      } else if (AtOp("(")) {
        ASSIGN_OR_RETURN(node, ParseCall(node, name, col));
      } else {
        ASSIGN_OR_RETURN(node, Add(Node{.kind = NodeKind::kAttr, .column = col, .kids = {node}, .name = std::move(name)}));
      }
    } else if (AtOp("[")) {
      ASSIGN_OR_RETURN(node, ParseSubscript(node));
    } else if (AtOp("(") && def_mode_) {
      ASSIGN_OR_RETURN(node, ParseDefCall(Node{.kind = NodeKind::kCallValue, .column = Peek().column, .kids = {node}}));
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
