// Private: the parser for the Python expression subset (expression_parser.cc, expression_parser_atoms.cc).
//
// Recursive descent with Python's precedence, lowest first:
//   ternary < or < and < not < comparisons < | < ^ < & < shifts < + - < * / // % < unary < ** < postfix
// Binary levels use precedence climbing so a nesting level costs a few stack frames, and both the
// recursion and the resulting tree height are capped at kMaxDepth.
#pragma once

// Nodes are built with designated initializers that leave the other members at their defaults;
// GCC 12 warns about exactly that, clang and newer GCC do not.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <algorithm>
#include <string>

#include "dfw/common/strings.h"
#include "record/expression_ast.h"
#include "record/expression_lexer.h"

namespace dfw::expr {

inline std::string Names(const std::vector<CallSpec>& specs) {
  std::vector<std::string> v;
  for (const auto& s : specs) v.emplace_back(s.name);
  return Join(v);
}

// Statements and constructs a user may reach for, with the sentence that refuses them.
inline const char* RefusedKeyword(const std::string& w) {
  if (w == "lambda") return "lambda is not supported in expressions here";
  if (w == "for") return "comprehensions are not supported in expressions here";
  if (w == "await" || w == "async") return "'await' is not supported in expressions here";
  if (w == "yield") return "'yield' is not supported in expressions here";
  for (const char* s : {"def", "class", "import", "from", "return", "del", "global", "nonlocal", "assert", "raise",
                        "try", "while", "with", "pass", "break", "continue", "elif", "except", "finally", "as"})
    if (w == s) return "statements are not supported in expressions here";
  return nullptr;
}

struct BinInfo { int prec; Op op; };

inline bool BinaryOperator(const Token& t, BinInfo* info) {
  if (t.kind != TokKind::kOp) return false;
  static const std::pair<std::string_view, BinInfo> kTable[] = {
      {"|", {1, Op::kBitOr}},  {"^", {2, Op::kBitXor}}, {"&", {3, Op::kBitAnd}}, {"<<", {4, Op::kShl}},
      {">>", {4, Op::kShr}},   {"+", {5, Op::kAdd}},    {"-", {5, Op::kSub}},    {"*", {6, Op::kMul}},
      {"/", {6, Op::kDiv}},    {"//", {6, Op::kFloorDiv}}, {"%", {6, Op::kMod}}};
  for (const auto& [text, bi] : kTable)
    if (t.text == text) { *info = bi; return true; }
  return false;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  Result<Program> Run(std::string_view source) {
    p_.source = std::string(source);
    ASSIGN_OR_RETURN(int32_t root, ParseTop());
    if (!At(TokKind::kEnd)) return Unexpected(Peek());
    p_.root = root;
    return std::move(p_);
  }

 private:
  const Token& Peek(int k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  bool At(TokKind k) const { return Peek().kind == k; }
  bool AtOp(std::string_view op) const { return Peek().kind == TokKind::kOp && Peek().text == op; }
  bool AtName(std::string_view n) const { return Peek().kind == TokKind::kName && Peek().text == n; }
  const Token& Next() { const Token& t = Peek(); if (pos_ < t_.size() - 1) ++pos_; return t; }

  static Status Error(int column, const std::string& what) {
    return InvalidArgument("column " + std::to_string(column) + ": " + what);
  }

  Status Unexpected(const Token& t) {
    if (t.kind == TokKind::kEnd) return Error(t.column, "unexpected end of expression");
    if (t.kind == TokKind::kOp) {
      if (t.text == "=") return Error(t.column, "assignment is not supported in expressions here (did you mean '=='?)");
      if (t.text == ":=") return Error(t.column, "assignment expressions (walrus ':=') are not supported");
      if (t.text.size() >= 2 && t.text.back() == '=' && t.text != "==" && t.text != "!=" && t.text != "<=" && t.text != ">=")
        return Error(t.column, "augmented assignment '" + t.text + "' is not supported in expressions here");
      if (t.text == ";") return Error(t.column, "multiple statements are not supported in expressions here");
      if (t.text == "{") return Error(t.column, "dict and set displays are not supported in expressions here");
      if (t.text == "@") return Error(t.column, "the matrix-multiplication operator '@' is not supported");
      if (t.text == "...") return Error(t.column, "Ellipsis ('...') is not supported");
      return Error(t.column, "unexpected '" + t.text + "'");
    }
    if (t.kind == TokKind::kName) {
      if (const char* why = RefusedKeyword(t.text)) return Error(t.column, why);
      return Error(t.column, "unexpected name '" + t.text + "'");
    }
    return Error(t.column, "unexpected literal");
  }

  Status Expect(std::string_view op) {
    if (AtOp(op)) { Next(); return Status::OK(); }
    if (At(TokKind::kEnd)) return Error(Peek().column, "expected '" + std::string(op) + "' before the end of expression");
    RETURN_IF_ERROR(Unexpected(Peek()));
    return Status::OK();
  }

  // Adds a node; refuses trees taller than kMaxDepth so evaluation recursion stays bounded.
  Result<int32_t> Add(Node n) {
    int h = 1;
    for (int32_t k : n.kids)
      if (k >= 0) h = std::max(h, height_[k] + 1);
    if (h > kMaxDepth) return Error(n.column, "expression nests deeper than " + std::to_string(kMaxDepth) + " levels");
    p_.nodes.push_back(std::move(n));
    height_.push_back(h);
    return static_cast<int32_t>(p_.nodes.size() - 1);
  }

  struct DepthGuard {
    explicit DepthGuard(int& d) : d_(d) { ++d_; }
    ~DepthGuard() { --d_; }
    int& d_;
  };
  Status Enter() {
    return depth_ > kMaxDepth ? Error(Peek().column, "expression nests deeper than " + std::to_string(kMaxDepth) + " levels")
                              : Status::OK();
  }

  // Top level: a bare tuple `a, b` becomes a list.
  Result<int32_t> ParseTop() {
    int col = Peek().column;
    ASSIGN_OR_RETURN(int32_t first, ParseTernary());
    if (!AtOp(",")) return first;
    Node n{.kind = NodeKind::kList, .column = col};
    n.kids.push_back(first);
    while (AtOp(",")) {
      Next();
      if (At(TokKind::kEnd)) break;
      ASSIGN_OR_RETURN(int32_t k, ParseTernary());
      n.kids.push_back(k);
    }
    return FoldList(std::move(n));
  }

  Result<int32_t> ParseTernary() {
    DepthGuard g(depth_);
    RETURN_IF_ERROR(Enter());
    if (AtName("lambda")) return Unexpected(Peek());
    ASSIGN_OR_RETURN(int32_t body, ParseBool(true));
    if (!AtName("if")) {
      if (AtOp(":=")) return Unexpected(Peek());
      return body;
    }
    int col = Next().column;
    ASSIGN_OR_RETURN(int32_t cond, ParseBool(true));
    if (!AtName("else")) return Error(Peek().column, "conditional expression needs 'else' (x if cond else y)");
    Next();
    ASSIGN_OR_RETURN(int32_t other, ParseTernary());
    return Add(Node{.kind = NodeKind::kIf, .column = col, .kids = {body, cond, other}});
  }

  // `or` (is_or) or `and` chains, flattened into one node.
  Result<int32_t> ParseBool(bool is_or) {
    int col = Peek().column;
    ASSIGN_OR_RETURN(int32_t first, is_or ? ParseBool(false) : ParseNot());
    const char* word = is_or ? "or" : "and";
    if (!AtName(word)) return first;
    Node n{.kind = is_or ? NodeKind::kOr : NodeKind::kAnd, .column = col, .kids = {first}};
    while (AtName(word)) {
      Next();
      ASSIGN_OR_RETURN(int32_t k, is_or ? ParseBool(false) : ParseNot());
      n.kids.push_back(k);
    }
    return Add(std::move(n));
  }

  Result<int32_t> ParseNot() {
    if (!AtName("not")) return ParseComparison();
    DepthGuard g(depth_);
    RETURN_IF_ERROR(Enter());
    int col = Next().column;
    ASSIGN_OR_RETURN(int32_t k, ParseNot());
    return Add(Node{.kind = NodeKind::kUnary, .op = Op::kNot, .column = col, .kids = {k}});
  }

  bool CompareOperator(Op* op) {
    const Token& t = Peek();
    if (t.kind == TokKind::kName) {
      if (t.text == "in") { Next(); *op = Op::kIn; return true; }
      if (t.text == "not" && Peek(1).kind == TokKind::kName && Peek(1).text == "in") { Next(); Next(); *op = Op::kNotIn; return true; }
      if (t.text == "is") {
        Next();
        *op = Op::kIs;
        if (AtName("not")) { Next(); *op = Op::kIsNot; }
        return true;
      }
      return false;
    }
    if (t.kind != TokKind::kOp) return false;
    static const std::pair<std::string_view, Op> kOps[] = {{"==", Op::kEq}, {"!=", Op::kNe}, {"<", Op::kLt},
                                                            {"<=", Op::kLe}, {">", Op::kGt}, {">=", Op::kGe}};
    for (const auto& [text, o] : kOps)
      if (t.text == text) { Next(); *op = o; return true; }
    return false;
  }

  Result<int32_t> ParseComparison() {
    int col = Peek().column;
    ASSIGN_OR_RETURN(int32_t first, ParseBinary(1));
    Op op;
    if (!CompareOperator(&op)) return first;
    Node n{.kind = NodeKind::kCompare, .column = col, .kids = {first}};
    do {
      n.ops.push_back(op);
      ASSIGN_OR_RETURN(int32_t k, ParseBinary(1));
      n.kids.push_back(k);
    } while (CompareOperator(&op));
    return Add(std::move(n));
  }

  // Recursion here is bounded by the number of precedence levels; nesting is counted elsewhere.
  Result<int32_t> ParseBinary(int min_prec) {
    ASSIGN_OR_RETURN(int32_t left, ParseUnary());
    BinInfo bi;
    while (BinaryOperator(Peek(), &bi) && bi.prec >= min_prec) {
      int col = Next().column;
      ASSIGN_OR_RETURN(int32_t right, ParseBinary(bi.prec + 1));
      ASSIGN_OR_RETURN(left, Add(Node{.kind = NodeKind::kBinary, .op = bi.op, .column = col, .kids = {left, right}}));
    }
    if (AtOp("@")) return Unexpected(Peek());
    return left;
  }

  Result<int32_t> ParseUnary() {
    Op op;
    if (AtOp("-")) op = Op::kNeg;
    else if (AtOp("+")) op = Op::kPos;
    else if (AtOp("~")) op = Op::kInvert;
    else return ParsePower();
    DepthGuard g(depth_);
    RETURN_IF_ERROR(Enter());
    int col = Next().column;
    ASSIGN_OR_RETURN(int32_t k, ParseUnary());
    // Fold negative literals so `-9223372036854775807 - 1`-style constants cost nothing per row.
    const Node& kid = p_.nodes[k];
    if (op == Op::kNeg && kid.kind == NodeKind::kConst && (kid.value.is_float() || (kid.value.is_int() && kid.value.as_int() != INT64_MIN))) {
      Value v = kid.value.is_int() ? Value::Int(-kid.value.as_int()) : Value::Float(-kid.value.as_float());
      return Add(Node{.kind = NodeKind::kConst, .column = col, .value = std::move(v)});
    }
    return Add(Node{.kind = NodeKind::kUnary, .op = op, .column = col, .kids = {k}});
  }

  Result<int32_t> ParsePower() {
    ASSIGN_OR_RETURN(int32_t base, ParsePostfix());
    if (!AtOp("**")) return base;
    DepthGuard g(depth_);
    RETURN_IF_ERROR(Enter());
    int col = Next().column;
    ASSIGN_OR_RETURN(int32_t exp, ParseUnary());
    return Add(Node{.kind = NodeKind::kBinary, .op = Op::kPow, .column = col, .kids = {base, exp}});
  }

  Result<int32_t> ParsePostfix();
  Result<int32_t> ParseSubscript(int32_t obj);
  Result<int32_t> ParseCall(int32_t self, const std::string& name, int col);
  Result<int32_t> ParseAtom();
  Result<int32_t> ParseDisplay(std::string_view close, int col);
  Result<int32_t> FoldList(Node n);
  void NoteField(const std::string& name) {
    if (std::find(p_.fields.begin(), p_.fields.end(), name) == p_.fields.end()) p_.fields.push_back(name);
  }

  std::vector<Token> t_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  Program p_;
  std::vector<int> height_;
};

}  // namespace dfw::expr
