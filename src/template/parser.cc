#include "dfw/template/parser.h"

#include <set>

#include "dfw/template/lexer.h"

namespace dfw::tmpl {
namespace {

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
  Result<Body> ParseBody(const std::set<std::string>& ends, std::string* end) {
    Depth guard(depth_);
    RETURN_IF_ERROR(CheckDepth());
    Body body;
    while (true) {
      const Token& tok = Peek();
      if (tok.kind == TokenKind::kEnd) {
        if (ends.empty()) return body;
        return Error("unexpected end of template: expected '{% " + Closer(ends) + " %}'");
      }
      if (tok.kind == TokenKind::kText) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kText;
        n->line = tok.line;
        n->text = Next().text;
        body.push_back(std::move(n));
      } else if (tok.kind == TokenKind::kVarBegin) {
        ++pos_;
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kOutput;
        n->line = tok.line;
        ASSIGN_OR_RETURN(n->expr, ParseExpr());
        if (Peek().kind != TokenKind::kVarEnd) return Error("expected '}}', got " + Describe(Peek()));
        ++pos_;
        body.push_back(std::move(n));
      } else if (tok.kind == TokenKind::kBlockBegin) {
        ++pos_;
        ASSIGN_OR_RETURN(std::string tag, ExpectName());
        if (ends.count(tag)) {
          *end = tag;
          return body;
        }
        ASSIGN_OR_RETURN(NodePtr n, ParseStatement(tag, tok.line, ends));
        body.push_back(std::move(n));
      } else {
        return Error("unexpected " + Describe(tok));
      }
    }
  }

  Result<NodePtr> ParseStatement(const std::string& tag, int line, const std::set<std::string>& ends) {
    auto n = std::make_unique<Node>();
    n->line = line;
    std::string end;
    if (tag == "if") {
      n->kind = Node::Kind::kIf;
      std::string clause = "if";
      while (clause == "if" || clause == "elif") {
        ASSIGN_OR_RETURN(ExprPtr c, ParseExpr());
        RETURN_IF_ERROR(ExpectBlockEnd());
        n->conditions.push_back(std::move(c));
        ASSIGN_OR_RETURN(Body b, ParseBody({"elif", "else", "endif"}, &clause));
        n->bodies.push_back(std::move(b));
      }
      if (clause == "else") {
        RETURN_IF_ERROR(ExpectBlockEnd());
        ASSIGN_OR_RETURN(n->else_body, ParseBody({"endif"}, &end));
      }
    } else if (tag == "for") {
      n->kind = Node::Kind::kFor;
      do {
        ASSIGN_OR_RETURN(std::string target, ExpectName());
        n->targets.push_back(target);
      } while (IsOp(",") && (++pos_, true));
      if (!IsName("in")) return Error("expected 'in' in the for loop, got " + Describe(Peek()));
      ++pos_;
      ASSIGN_OR_RETURN(n->expr, ParseOr());  // not ParseExpr: `if` here filters the loop
      if (IsName("if")) {
        ++pos_;
        ASSIGN_OR_RETURN(n->cond, ParseExpr());
      }
      RETURN_IF_ERROR(ExpectBlockEnd());
      std::string clause;
      ASSIGN_OR_RETURN(n->body, ParseBody({"else", "endfor"}, &clause));
      if (clause == "else") {
        RETURN_IF_ERROR(ExpectBlockEnd());
        ASSIGN_OR_RETURN(n->else_body, ParseBody({"endfor"}, &end));
      }
    } else if (tag == "set") {
      n->kind = Node::Kind::kSet;
      do {
        ASSIGN_OR_RETURN(std::string target, ExpectName());
        n->targets.push_back(target);
      } while (IsOp(",") && (++pos_, true));
      if (IsOp("=")) {
        ++pos_;
        ASSIGN_OR_RETURN(n->expr, ParseTuple());
      } else {
        if (n->targets.size() != 1) return Error("a {% set %} block assigns one name");
        RETURN_IF_ERROR(ExpectBlockEnd());
        ASSIGN_OR_RETURN(n->body, ParseBody({"endset"}, &end));
      }
    } else if (tag == "include" || tag == "extends") {
      n->kind = tag == "include" ? Node::Kind::kInclude : Node::Kind::kExtends;
      ASSIGN_OR_RETURN(n->expr, ParseExpr());
      if (tag == "extends") {
        if (depth_ != 1) return Error("{% extends %} must be at the top level of the template", line);
        tmpl_->extends = true;
      }
      if (IsName("ignore") && IsName("missing", 1)) return Error("'ignore missing' is not supported");
      if (IsName("with") || IsName("without")) pos_ += 2;  // "with context" is the default for include
    } else if (tag == "import" || tag == "from") {
      n->kind = Node::Kind::kImport;
      ASSIGN_OR_RETURN(n->expr, ParseExpr());
      if (tag == "import") {
        if (!IsName("as")) return Error("expected 'as' after {% import ... %}");
        ++pos_;
        ASSIGN_OR_RETURN(n->name, ExpectName());
      } else {
        if (!IsName("import")) return Error("expected 'import' after {% from ... %}");
        ++pos_;
        do {
          ASSIGN_OR_RETURN(std::string what, ExpectName());
          std::string alias = what;
          if (IsName("as")) {
            ++pos_;
            ASSIGN_OR_RETURN(alias, ExpectName());
          }
          n->targets.push_back(what);
          n->aliases.push_back(alias);
        } while (IsOp(",") && (++pos_, true));
      }
      if (IsName("with") || IsName("without")) return Error("'with context' on imports is not supported");
    } else if (tag == "macro") {
      n->kind = Node::Kind::kMacro;
      ASSIGN_OR_RETURN(n->name, ExpectName());
      RETURN_IF_ERROR(Expect("("));
      while (!IsOp(")")) {
        ASSIGN_OR_RETURN(std::string param, ExpectName());
        ExprPtr def;
        if (IsOp("=")) {
          ++pos_;
          ASSIGN_OR_RETURN(def, ParseExpr());
        }
        n->params.emplace_back(param, std::move(def));
        if (!IsOp(",")) break;
        ++pos_;
      }
      RETURN_IF_ERROR(Expect(")"));
      RETURN_IF_ERROR(ExpectBlockEnd());
      ASSIGN_OR_RETURN(n->body, ParseBody({"endmacro"}, &end));
    } else if (tag == "block") {
      n->kind = Node::Kind::kBlock;
      ASSIGN_OR_RETURN(n->name, ExpectName());
      if (tmpl_->blocks.count(n->name)) return Error("block '" + n->name + "' is defined twice", line);
      RETURN_IF_ERROR(ExpectBlockEnd());
      ASSIGN_OR_RETURN(n->body, ParseBody({"endblock"}, &end));
      if (Peek().kind == TokenKind::kName && Peek().text == n->name) ++pos_;
      tmpl_->blocks[n->name] = n.get();
    } else {
      std::string expected = ends.empty() ? "" : " (expected '" + Closer(ends) + "')";
      return Error("unknown tag '" + tag + "'" + expected, line);
    }
    RETURN_IF_ERROR(ExpectBlockEnd());
    return n;
  }

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
  Result<ExprPtr> ParseTuple() {
    ASSIGN_OR_RETURN(ExprPtr first, ParseExpr());
    if (!IsOp(",")) return first;
    ExprPtr list = Make(Expr::Kind::kList, first->line);
    list->kids.push_back(std::move(first));
    while (IsOp(",")) {
      ++pos_;
      ASSIGN_OR_RETURN(ExprPtr item, ParseExpr());
      list->kids.push_back(std::move(item));
    }
    return list;
  }

  Result<ExprPtr> ParseExpr() {
    Depth guard(depth_);
    RETURN_IF_ERROR(CheckDepth());
    ASSIGN_OR_RETURN(ExprPtr e, ParseOr());
    if (!IsName("if")) return e;
    ++pos_;
    ExprPtr cond = Make(Expr::Kind::kCond, e->line);
    cond->kids.push_back(std::move(e));
    ASSIGN_OR_RETURN(ExprPtr test, ParseOr());
    cond->kids.push_back(std::move(test));
    if (IsName("else")) {
      ++pos_;
      ASSIGN_OR_RETURN(ExprPtr other, ParseExpr());
      cond->kids.push_back(std::move(other));
    }
    return cond;
  }

  Result<ExprPtr> ParseOr() {
    ASSIGN_OR_RETURN(ExprPtr e, ParseAnd());
    while (IsName("or")) {
      ++pos_;
      ASSIGN_OR_RETURN(ExprPtr r, ParseAnd());
      e = Binary("or", std::move(e), std::move(r));
    }
    return e;
  }
  Result<ExprPtr> ParseAnd() {
    ASSIGN_OR_RETURN(ExprPtr e, ParseNot());
    while (IsName("and")) {
      ++pos_;
      ASSIGN_OR_RETURN(ExprPtr r, ParseNot());
      e = Binary("and", std::move(e), std::move(r));
    }
    return e;
  }
  Result<ExprPtr> ParseNot() {
    if (!IsName("not")) return ParseCompare();
    Depth guard(depth_);
    RETURN_IF_ERROR(CheckDepth());
    const int line = Next().line;
    ExprPtr e = Make(Expr::Kind::kUnary, line, "not");
    ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
    e->kids.push_back(std::move(operand));
    return e;
  }
  Result<ExprPtr> ParseCompare() {
    ASSIGN_OR_RETURN(ExprPtr e, ParseMath1());
    while (true) {
      std::string op;
      if (Peek().kind == TokenKind::kOp && (Peek().text == "==" || Peek().text == "!=" || Peek().text == "<" ||
                                            Peek().text == "<=" || Peek().text == ">" || Peek().text == ">=")) {
        op = Next().text;
      } else if (IsName("in")) {
        ++pos_;
        op = "in";
      } else if (IsName("not") && IsName("in", 1)) {
        pos_ += 2;
        op = "notin";
      } else {
        return e;
      }
      ASSIGN_OR_RETURN(ExprPtr r, ParseMath1());
      e = Binary(op, std::move(e), std::move(r));
    }
  }
  Result<ExprPtr> ParseMath1() {
    ASSIGN_OR_RETURN(ExprPtr e, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      std::string op = Next().text;
      ASSIGN_OR_RETURN(ExprPtr r, ParseConcat());
      e = Binary(op, std::move(e), std::move(r));
    }
    return e;
  }
  Result<ExprPtr> ParseConcat() {
    ASSIGN_OR_RETURN(ExprPtr e, ParseMath2());
    while (IsOp("~")) {
      ++pos_;
      ASSIGN_OR_RETURN(ExprPtr r, ParseMath2());
      e = Binary("~", std::move(e), std::move(r));
    }
    return e;
  }
  Result<ExprPtr> ParseMath2() {
    ASSIGN_OR_RETURN(ExprPtr e, ParsePow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      std::string op = Next().text;
      ASSIGN_OR_RETURN(ExprPtr r, ParsePow());
      e = Binary(op, std::move(e), std::move(r));
    }
    return e;
  }
  Result<ExprPtr> ParsePow() {
    ASSIGN_OR_RETURN(ExprPtr e, ParseUnary());
    while (IsOp("**")) {
      ++pos_;
      ASSIGN_OR_RETURN(ExprPtr r, ParseUnary());
      e = Binary("**", std::move(e), std::move(r));
    }
    return e;
  }
  Result<ExprPtr> ParseUnary() {
    Depth guard(depth_);
    RETURN_IF_ERROR(CheckDepth());
    ExprPtr e;
    if (IsOp("-") || IsOp("+")) {
      const Token& op = Next();
      e = Make(Expr::Kind::kUnary, op.line, op.text);
      ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary());
      e->kids.push_back(std::move(operand));
    } else {
      ASSIGN_OR_RETURN(e, ParsePrimary());
    }
    return ParsePostfix(std::move(e));
  }

  // Positional and keyword arguments up to ')' (the '(' already consumed).
  Status ParseArgs(Expr& call) {
    while (!IsOp(")")) {
      if (Peek().kind == TokenKind::kName && IsOp("=", 1)) {
        std::string key = Next().text;
        ++pos_;
        ASSIGN_OR_RETURN(ExprPtr v, ParseExpr());
        call.kwargs.emplace_back(std::move(key), std::move(v));
      } else {
        if (!call.kwargs.empty()) return Error("a positional argument follows a keyword argument");
        ASSIGN_OR_RETURN(ExprPtr v, ParseExpr());
        call.kids.push_back(std::move(v));
      }
      if (!IsOp(",")) break;
      ++pos_;
    }
    return Expect(")");
  }

  Result<ExprPtr> ParsePostfix(ExprPtr e) {
    while (true) {
      if (IsOp(".")) {
        ++pos_;
        const Token& t = Peek();
        if (t.kind != TokenKind::kName && t.kind != TokenKind::kInt) return Error("expected an attribute name after '.'");
        ExprPtr a = Make(Expr::Kind::kAttr, t.line, Next().text);
        a->kids.push_back(std::move(e));
        e = std::move(a);
      } else if (IsOp("[")) {
        ++pos_;
        ExprPtr a = Make(Expr::Kind::kItem, e->line);
        a->kids.push_back(std::move(e));
        ASSIGN_OR_RETURN(ExprPtr key, ParseExpr());
        a->kids.push_back(std::move(key));
        RETURN_IF_ERROR(Expect("]"));
        e = std::move(a);
      } else if (IsOp("(")) {
        ++pos_;
        ExprPtr c = Make(Expr::Kind::kCall, e->line);
        c->kids.push_back(std::move(e));
        RETURN_IF_ERROR(ParseArgs(*c));
        e = std::move(c);
      } else if (IsOp("|")) {
        ++pos_;
        ASSIGN_OR_RETURN(std::string filter, ExpectName());
        ExprPtr f = Make(Expr::Kind::kFilter, e->line, filter);
        f->kids.push_back(std::move(e));
        if (IsOp("(")) {
          ++pos_;
          RETURN_IF_ERROR(ParseArgs(*f));
        }
        e = std::move(f);
      } else if (IsName("is")) {
        ++pos_;
        ExprPtr t = Make(Expr::Kind::kTest, e->line);
        if (IsName("not")) {
          ++pos_;
          t->negate = true;
        }
        ASSIGN_OR_RETURN(t->name, ExpectName());
        t->kids.push_back(std::move(e));
        if (IsOp("(")) {
          ++pos_;
          RETURN_IF_ERROR(ParseArgs(*t));
        } else if (Peek().kind == TokenKind::kString || Peek().kind == TokenKind::kInt || Peek().kind == TokenKind::kFloat) {
          ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());  // `x is divisibleby 3`
          t->kids.push_back(std::move(arg));
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  Result<ExprPtr> ParsePrimary() {
    const Token& t = Peek();
    switch (t.kind) {
      case TokenKind::kString: {
        std::string s = Next().text;
        while (Peek().kind == TokenKind::kString) s += Next().text;  // adjacent literals join
        ExprPtr e = Make(Expr::Kind::kLiteral, t.line);
        e->value = Value::String(std::move(s));
        return e;
      }
      case TokenKind::kInt: {
        ExprPtr e = Make(Expr::Kind::kLiteral, t.line);
        e->value = Value::Int(Next().int_value);
        return e;
      }
      case TokenKind::kFloat: {
        ExprPtr e = Make(Expr::Kind::kLiteral, t.line);
        e->value = Value::Float(Next().float_value);
        return e;
      }
      case TokenKind::kName: {
        const std::string& n = t.text;
        ExprPtr e = Make(Expr::Kind::kLiteral, t.line);
        if (n == "true" || n == "True") {
          e->value = Value::Bool(true);
        } else if (n == "false" || n == "False") {
          e->value = Value::Bool(false);
        } else if (n == "none" || n == "None") {
          e->value = Value();
        } else {
          e = Make(Expr::Kind::kName, t.line, n);
        }
        ++pos_;
        return e;
      }
      case TokenKind::kOp:
        if (t.text == "(") {
          ++pos_;
          ASSIGN_OR_RETURN(ExprPtr e, ParseExpr());
          if (IsOp(",")) {  // a tuple: a list here
            ExprPtr list = Make(Expr::Kind::kList, e->line);
            list->kids.push_back(std::move(e));
            while (IsOp(",") && !IsOp(")", 1)) {
              ++pos_;
              ASSIGN_OR_RETURN(ExprPtr item, ParseExpr());
              list->kids.push_back(std::move(item));
            }
            if (IsOp(",")) ++pos_;
            e = std::move(list);
          }
          RETURN_IF_ERROR(Expect(")"));
          return e;
        }
        if (t.text == "[" || t.text == "{") {
          const bool dict = t.text == "{";
          const char* close = dict ? "}" : "]";
          ExprPtr e = Make(dict ? Expr::Kind::kDict : Expr::Kind::kList, Next().line);
          while (!IsOp(close)) {
            ASSIGN_OR_RETURN(ExprPtr item, ParseExpr());
            e->kids.push_back(std::move(item));
            if (dict) {
              RETURN_IF_ERROR(Expect(":"));
              ASSIGN_OR_RETURN(ExprPtr v, ParseExpr());
              e->kids.push_back(std::move(v));
            }
            if (!IsOp(",")) break;
            ++pos_;
          }
          RETURN_IF_ERROR(Expect(close));
          return e;
        }
        break;
      default: break;
    }
    return Error("unexpected " + Describe(t));
  }

  std::vector<Token> t_;
  const std::string& name_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  Template* tmpl_ = nullptr;
};

}  // namespace

Result<std::shared_ptr<const Template>> ParseTemplate(std::string_view source, const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source, name));
  return Parser(std::move(tokens), name).Run();
}

}  // namespace dfw::tmpl
