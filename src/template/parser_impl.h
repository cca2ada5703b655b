// The recursive-descent parser of templates (private to the template module): statements in
// parser.cc, expressions in expression_parser.cc.
#pragma once

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/template/ast.h"
#include "dfw/template/lexer.h"
#include "dfw/template/parser.h"

namespace dfw::tmpl {

// Parses one template's tokens; Run() once per Parser. Errors are "NAME:LINE: what".
class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& name) : t_(std::move(tokens)), name_(name) {}

  Result<std::shared_ptr<const Template>> Run() {
    auto tmpl = std::make_shared<Template>();
    tmpl->name = name_;
    tmpl_ = tmpl.get();
    std::string end;
    ASSIGN_OR_RETURN(tmpl->body, ParseBody({}, &end));
    return std::shared_ptr<const Template>(std::move(tmpl));
  }

 private:
  const Token& Peek(std::size_t ahead = 0) const { return t_[std::min(pos_ + ahead, t_.size() - 1)]; }
  const Token& Next() { return t_[std::min(pos_++, t_.size() - 1)]; }
  bool IsOp(const char* op, std::size_t ahead = 0) const { return Peek(ahead).kind == TokenKind::kOp && Peek(ahead).text == op; }
  bool IsName(const char* n, std::size_t ahead = 0) const { return Peek(ahead).kind == TokenKind::kName && Peek(ahead).text == n; }
  Status Error(const std::string& what, int line = 0) const {
    return InvalidArgument(name_ + ":" + std::to_string(line ? line : Peek().line) + ": " + what);
  }
  std::string Describe(const Token& t) const {
    switch (t.kind) {
      case TokenKind::kEnd: return "end of template";
      case TokenKind::kBlockEnd: return "'%}'";
      case TokenKind::kVarEnd: return "'}}'";
      case TokenKind::kText: return "text";
      default: return "'" + t.text + "'";
    }
  }
  Status Expect(const char* op) {
    if (!IsOp(op)) return Error("expected '" + std::string(op) + "', got " + Describe(Peek()));
    ++pos_;
    return Status::OK();
  }
  Status ExpectBlockEnd() {
    if (Peek().kind != TokenKind::kBlockEnd) return Error("expected '%}', got " + Describe(Peek()));
    ++pos_;
    return Status::OK();
  }
  Result<std::string> ExpectName() {
    if (Peek().kind != TokenKind::kName) return Error("expected a name, got " + Describe(Peek()));
    return Next().text;
  }
  // Guards recursion: call at every recursive entry, with the matching `--depth_` on exit (Depth).
  struct Depth {
    explicit Depth(int& d) : d_(d) { ++d_; }
    ~Depth() { --d_; }
    int& d_;
  };
  Status CheckDepth() const {
    return depth_ > kMaxParseDepth ? Error("nested too deeply (more than " + std::to_string(kMaxParseDepth) + " levels)")
                                   : Status::OK();
  }

  // The tag that closes the statement being parsed ("endif" of {"elif", "else", "endif"}).
  static std::string Closer(const std::set<std::string>& ends) {
    for (const std::string& e : ends) {
      if (e.starts_with("end")) return e;
    }
    return *ends.begin();
  }


  // Statements up to a `{% NAME %}` with NAME in `ends` (consumed up to the name; *end names it),
  // or the end of the template when `ends` is empty.
  Result<Body> ParseBody(const std::set<std::string>& ends, std::string* end);
  Result<NodePtr> ParseStatement(const std::string& tag, int line, const std::set<std::string>& ends);

  ExprPtr Make(Expr::Kind kind, int line, std::string name = "") {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    e->name = std::move(name);
    return e;
  }
  ExprPtr Binary(std::string op, ExprPtr a, ExprPtr b) {
    ExprPtr e = Make(Expr::Kind::kBinary, a->line, std::move(op));
    e->kids.push_back(std::move(a));
    e->kids.push_back(std::move(b));
    return e;
  }

  // `a, b` (a tuple, here a list) or one expression: the right side of {% set %}.

  // `a, b` (a tuple, here a list) or one expression: the right side of {% set %}.
  Result<ExprPtr> ParseTuple();
  Result<ExprPtr> ParseExpr();
  Result<ExprPtr> ParseOr();
  Result<ExprPtr> ParseAnd();
  Result<ExprPtr> ParseNot();
  Result<ExprPtr> ParseCompare();
  Result<ExprPtr> ParseMath1();
  Result<ExprPtr> ParseConcat();
  Result<ExprPtr> ParseMath2();
  Result<ExprPtr> ParsePow();
  Result<ExprPtr> ParseUnary();
  // Positional and keyword arguments up to ')' (the '(' already consumed).
  Status ParseArgs(Expr& call);
  Result<ExprPtr> ParsePostfix(ExprPtr e);
  Result<ExprPtr> ParsePrimary();

  std::vector<Token> t_;
  const std::string& name_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  Template* tmpl_ = nullptr;
};

}  // namespace dfw::tmpl
