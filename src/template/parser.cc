#include "dfw/template/parser.h"

#include "parser_impl.h"

namespace dfw::tmpl {

// Statements up to a `{% NAME %}` with NAME in `ends` (consumed up to the name; *end names it),
// or the end of the template when `ends` is empty.
Result<Body> Parser::ParseBody(const std::set<std::string>& ends, std::string* end) {
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

Result<NodePtr> Parser::ParseStatement(const std::string& tag, int line, const std::set<std::string>& ends) {
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

Result<std::shared_ptr<const Template>> ParseTemplate(std::string_view source, const std::string& name,
                                                   const LexOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source, name, options));
  return Parser(std::move(tokens), name).Run();
}

}  // namespace dfw::tmpl
