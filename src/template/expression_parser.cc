// Expressions, by jinja2's precedence: conditional, or, and, not, comparisons (== != < <= > >= in
// not in), + -, ~, * / // %, **, unary - +, then postfix (.name, [key], (args), | filter, is test).
#include "parser_impl.h"

namespace dfw::tmpl {

// `a, b` (a tuple, here a list) or one expression: the right side of {% set %}.
Result<ExprPtr> Parser::ParseTuple() {
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

Result<ExprPtr> Parser::ParseExpr() {
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

Result<ExprPtr> Parser::ParseOr() {
  ASSIGN_OR_RETURN(ExprPtr e, ParseAnd());
  while (IsName("or")) {
    ++pos_;
    ASSIGN_OR_RETURN(ExprPtr r, ParseAnd());
    e = Binary("or", std::move(e), std::move(r));
  }
  return e;
}

Result<ExprPtr> Parser::ParseAnd() {
  ASSIGN_OR_RETURN(ExprPtr e, ParseNot());
  while (IsName("and")) {
    ++pos_;
    ASSIGN_OR_RETURN(ExprPtr r, ParseNot());
    e = Binary("and", std::move(e), std::move(r));
  }
  return e;
}

Result<ExprPtr> Parser::ParseNot() {
  if (!IsName("not")) return ParseCompare();
  Depth guard(depth_);
  RETURN_IF_ERROR(CheckDepth());
  const int line = Next().line;
  ExprPtr e = Make(Expr::Kind::kUnary, line, "not");
  ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
  e->kids.push_back(std::move(operand));
  return e;
}

Result<ExprPtr> Parser::ParseCompare() {
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

Result<ExprPtr> Parser::ParseMath1() {
  ASSIGN_OR_RETURN(ExprPtr e, ParseConcat());
  while (IsOp("+") || IsOp("-")) {
    std::string op = Next().text;
    ASSIGN_OR_RETURN(ExprPtr r, ParseConcat());
    e = Binary(op, std::move(e), std::move(r));
  }
  return e;
}

Result<ExprPtr> Parser::ParseConcat() {
  ASSIGN_OR_RETURN(ExprPtr e, ParseMath2());
  while (IsOp("~")) {
    ++pos_;
    ASSIGN_OR_RETURN(ExprPtr r, ParseMath2());
    e = Binary("~", std::move(e), std::move(r));
  }
  return e;
}

Result<ExprPtr> Parser::ParseMath2() {
  ASSIGN_OR_RETURN(ExprPtr e, ParsePow());
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    std::string op = Next().text;
    ASSIGN_OR_RETURN(ExprPtr r, ParsePow());
    e = Binary(op, std::move(e), std::move(r));
  }
  return e;
}

Result<ExprPtr> Parser::ParsePow() {
  ASSIGN_OR_RETURN(ExprPtr e, ParseUnary());
  while (IsOp("**")) {
    ++pos_;
    ASSIGN_OR_RETURN(ExprPtr r, ParseUnary());
    e = Binary("**", std::move(e), std::move(r));
  }
  return e;
}

Result<ExprPtr> Parser::ParseUnary() {
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
Status Parser::ParseArgs(Expr& call) {
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

Result<ExprPtr> Parser::ParsePostfix(ExprPtr e) {
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
      ExprPtr key;
      if (!IsOp(":")) {
        ASSIGN_OR_RETURN(key, ParseExpr());
      }
      if (IsOp(":")) {  // a slice: [start:stop:step], each part optional
        a->kind = Expr::Kind::kSlice;
        a->kids.push_back(std::move(key));
        for (int part = 0; part < 2; ++part) {
          ExprPtr bound;
          if (IsOp(":")) {
            ++pos_;
            if (!IsOp(":") && !IsOp("]")) {
              ASSIGN_OR_RETURN(bound, ParseExpr());
            }
          }
          a->kids.push_back(std::move(bound));
        }
      } else {
        a->kids.push_back(std::move(key));
      }
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

Result<ExprPtr> Parser::ParsePrimary() {
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

}  // namespace dfw::tmpl
