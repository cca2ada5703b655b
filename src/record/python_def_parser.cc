// The statement parser of def callables: logical lines and indentation as Python's tokenizer
// defines them (https://docs.python.org/3/reference/lexical_analysis.html#line-structure), then
// one statement per line (or several separated by ';'), with expressions parsed by the
// expression parser in its def mode.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "record/expression_parser.h"
#include "record/python_def.h"

namespace dfw::expr {
namespace {

struct Line {
  std::size_t start = 0;  // offset of the first token in the source
  std::string_view text;  // the logical line, continuation lines included, without indentation
  int indent = 0;
  std::vector<Token> toks;  // ends with kEnd
};

bool IsKeyword(const Token& t, std::string_view w) { return t.kind == TokKind::kName && t.text == w; }
bool IsOp(const Token& t, std::string_view op) { return t.kind == TokKind::kOp && t.text == op; }

class DefParser {
 public:
  explicit DefParser(std::string_view source) : src_(source) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  Result<Module> Run() {
    m_.source = std::string(src_);
    RETURN_IF_ERROR(SplitLines());
    if (lines_.empty()) return InvalidArgument("line 1, column 1: the callable is empty");
    int base = lines_[0].indent;
    for (const Line& l : lines_) base = std::min(base, l.indent);
    for (Line& l : lines_) l.indent -= base;  // the common indentation, as Beam strips it
    std::size_t li = 0;
    RETURN_IF_ERROR(ParseBlock(li, 0, m_.top));
    RETURN_IF_ERROR(PickCallable());
    return std::move(m_);
  }

 private:
  // "line L, column C" of a source offset.
  std::string Where(std::size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    std::size_t line = static_cast<std::size_t>(it - line_starts_.begin());
    std::size_t col = offset - line_starts_[line - 1] + 1;
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
  }
  int LineOf(std::size_t offset) const {
    return static_cast<int>(std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - line_starts_.begin());
  }
  int ColumnOf(std::size_t offset) const {
    return static_cast<int>(offset - line_starts_[static_cast<std::size_t>(LineOf(offset)) - 1] + 1);
  }
  Status ErrorAt(std::size_t offset, const std::string& what) const { return InvalidArgument(Where(offset) + ": " + what); }
  Status ErrorAt(const Line& l, const Token& t, const std::string& what) const {
    return ErrorAt(l.start + static_cast<std::size_t>(std::max(t.column, 1)) - 1, what);
  }
  // Rewrites "column N: what" from the tokenizer or the expression parser (N counted in the
  // logical line) as "line L, column C: what" of the source.
  Status Relocate(const Line& l, const Status& s) const {
    const std::string& msg = s.message();
    if (msg.rfind("column ", 0) == 0) {
      std::size_t colon = msg.find(':');
      int col = std::atoi(msg.c_str() + 7);
      if (colon != std::string::npos && col > 0)
        return InvalidArgument(Where(l.start + static_cast<std::size_t>(col) - 1) + msg.substr(colon));
    }
    return InvalidArgument(Where(l.start) + ": " + msg);
  }

  // Splits the source into logical lines: newlines inside brackets or triple-quoted strings and
  // backslash continuations join lines; blank and comment-only lines are dropped.
  Status SplitLines() {
    std::size_t i = 0, n = src_.size();
    while (i < n) {
      int indent = 0;
      while (i < n && (src_[i] == ' ' || src_[i] == '\t' || src_[i] == '\f')) {
        indent = src_[i] == '\t' ? (indent / 8 + 1) * 8 : src_[i] == ' ' ? indent + 1 : 0;
        ++i;
      }
      if (i >= n) break;
      if (src_[i] == '\n' || src_[i] == '\r' || src_[i] == '#') {  // blank or comment-only
        while (i < n && src_[i] != '\n') ++i;
        ++i;
        continue;
      }
      std::size_t start = i;
      int depth = 0;
      while (i < n) {
        char c = src_[i];
        if (c == '#') {
          while (i < n && src_[i] != '\n') ++i;
          continue;
        }
        if (c == '\\' && i + 1 < n && (src_[i + 1] == '\n' || src_[i + 1] == '\r')) {
          i += 2;
          continue;
        }
        if (c == '\'' || c == '"') {
          bool triple = src_.substr(i, 3) == std::string(3, c);
          std::size_t q = i;
          i += triple ? 3 : 1;
          while (true) {
            if (i >= n) return ErrorAt(q, "unterminated string literal");
            if (src_[i] == '\\') {
              i += 2;
              continue;
            }
            if (!triple && src_[i] == '\n') return ErrorAt(q, "unterminated string literal");
            if (src_[i] == c && (!triple || src_.substr(i, 3) == std::string(3, c))) {
              i += triple ? 3 : 1;
              break;
            }
            ++i;
          }
          continue;
        }
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        if (c == '\n' && depth == 0) break;
        ++i;
      }
      std::size_t end = std::min(i, n);
      while (end > start && (src_[end - 1] == '\r' || src_[end - 1] == ' ')) --end;
      Line l{.start = start, .text = src_.substr(start, end - start), .indent = indent};
      Result<std::vector<Token>> toks = Tokenize(l.text, true);
      if (!toks.ok()) return Relocate(l, toks.status());
      l.toks = std::move(toks).value();
      if (l.toks.size() > 1) lines_.push_back(std::move(l));
      ++i;
    }
    return Status::OK();
  }

  // Tokens [b, e) of a line as one expression.
  Result<int32_t> Expr(const Line& l, std::size_t b, std::size_t e) {
    if (b >= e) return ErrorAt(l, l.toks[std::min(b, l.toks.size() - 1)], "expected an expression");
    std::vector<Token> sub(l.toks.begin() + static_cast<std::ptrdiff_t>(b), l.toks.begin() + static_cast<std::ptrdiff_t>(e));
    Token end;
    end.column = l.toks[e].column;
    sub.push_back(end);
    std::size_t before = m_.prog.nodes.size();
    Result<int32_t> r = Parser::ParseDefExpression(std::move(sub), m_.prog, heights_);
    if (!r.ok()) return Relocate(l, r.status());
    for (std::size_t i = before; i < m_.prog.nodes.size(); ++i) RETURN_IF_ERROR(CheckAllowed(l, m_.prog.nodes[i]));
    return r;
  }

  // The sandbox: no I/O, no dynamic code, no introspection.
  Status CheckAllowed(const Line& l, const Node& n) const {
    bool named = n.kind == NodeKind::kName || n.kind == NodeKind::kCallName;
    bool attr = n.kind == NodeKind::kAttr || n.kind == NodeKind::kCallAttr;
    if (!named && !attr) return Status::OK();
    std::size_t off = l.start + static_cast<std::size_t>(std::max(n.column, 1)) - 1;
    if (n.name.rfind("__", 0) == 0)
      return ErrorAt(off, "'" + n.name + "' is not available in def callables (no dunder names, no __import__)");
    static const char* kRefused[] = {"open", "print", "input", "eval", "exec", "compile", "globals", "locals", "vars",
                                     "getattr", "setattr", "delattr", "hasattr", "breakpoint", "exit", "quit", "help",
                                     "memoryview", "type", "object", "super", "id", "dir"};
    if (named)
      for (const char* r : kRefused)
        if (n.name == r)
          return ErrorAt(off, "'" + n.name + "' is not available in def callables (no I/O, no dynamic code or "
                              "introspection; imports allowed: re, math, json)");
    return Status::OK();
  }

  // The first token in [b, e) at bracket depth 0 satisfying `pred`, or e.
  template <typename Pred>
  static std::size_t FindTop(const Line& l, std::size_t b, std::size_t e, Pred pred) {
    int depth = 0;
    for (std::size_t i = b; i < e; ++i) {
      const Token& t = l.toks[i];
      if (t.kind == TokKind::kOp && (t.text == "(" || t.text == "[" || t.text == "{")) ++depth;
      else if (t.kind == TokKind::kOp && (t.text == ")" || t.text == "]" || t.text == "}")) --depth;
      else if (depth == 0 && pred(t)) return i;
    }
    return e;
  }

  Status ParseBlock(std::size_t& li, int indent, std::vector<int32_t>& out) {
    while (li < lines_.size()) {
      const Line& l = lines_[li];
      if (l.indent < indent) break;
      if (l.indent > indent)
        return ErrorAt(l.start, last_was_compound_ ? "unindent does not match any outer indentation level" : "unexpected indent");
      RETURN_IF_ERROR(ParseStatement(li, out));
    }
    return Status::OK();
  }

  // The body after a compound statement's header ending at the ':' token `colon` of line `li`.
  Status ParseBody(std::size_t& li, std::size_t colon, const char* what, std::vector<int32_t>& body) {
    const Line& l = lines_[li];
    std::size_t e = l.toks.size() - 1;
    if (colon + 1 < e) {  // `if x: return 1`
      RETURN_IF_ERROR(ParseSimpleList(l, colon + 1, e, body));
      ++li;
      last_was_compound_ = false;
      return Status::OK();
    }
    int indent = l.indent;
    int header_line = LineOf(l.start);
    ++li;
    if (li >= lines_.size() || lines_[li].indent <= indent)
      return ErrorAt(li < lines_.size() ? lines_[li].start : l.start + l.text.size(),
                     std::string("expected an indented block after '") + what + "' statement on line " +
                         std::to_string(header_line));
    RETURN_IF_ERROR(ParseBlock(li, lines_[li].indent, body));
    last_was_compound_ = true;
    return Status::OK();
  }

  std::size_t HeaderColon(const Line& l, std::size_t b) const {
    return FindTop(l, b, l.toks.size() - 1, [](const Token& t) { return IsOp(t, ":"); });
  }

  Status NeedColon(const Line& l, std::size_t colon, const char* what) const {
    if (colon >= l.toks.size() - 1) return ErrorAt(l, l.toks.back(), std::string("expected ':' after the '") + what + "' header");
    return Status::OK();
  }

  int32_t AddStmt(Stmt s) {
    m_.stmts.push_back(std::move(s));
    return static_cast<int32_t>(m_.stmts.size() - 1);
  }

  Stmt At(const Line& l, std::size_t tok, StmtKind kind) const {
    std::size_t off = l.start + static_cast<std::size_t>(l.toks[tok].column) - 1;
    return Stmt{.kind = kind, .line = LineOf(off), .column = ColumnOf(off)};
  }

  bool NextLineStarts(std::size_t li, int indent, std::string_view word) const {
    return li < lines_.size() && lines_[li].indent == indent && IsKeyword(lines_[li].toks[0], word);
  }

  Status ParseStatement(std::size_t& li, std::vector<int32_t>& out) {
    const Line& l = lines_[li];
    const Token& first = l.toks[0];
    if (first.kind == TokKind::kName) {
      const std::string& w = first.text;
      if (w == "if" || w == "while") return ParseIfWhile(li, out, w == "while");
      if (w == "for") return ParseFor(li, out);
      if (w == "def") return ParseDef(li, out);
      if (w == "try") return ParseTry(li, out);
      if (w == "elif" || w == "else" || w == "except" || w == "finally")
        return ErrorAt(l, first, "'" + w + "' without a matching statement before it");
      for (const char* no : {"class", "with", "async"})
        if (w == no) return ErrorAt(l, first, "'" + w + "' statements are not supported in def callables");
      if (w == "lambda" && l.indent == 0 && func_depth_ == 0 && li + 1 == lines_.size()) {
        ++li;  // the final lambda: PickCallable parses it
        return Status::OK();
      }
    }
    RETURN_IF_ERROR(ParseSimpleList(l, 0, l.toks.size() - 1, out));
    last_was_compound_ = false;
    ++li;
    return Status::OK();
  }

  // Simple statements separated by ';'.
  Status ParseSimpleList(const Line& l, std::size_t b, std::size_t e, std::vector<int32_t>& out) {
    while (b < e) {
      std::size_t semi = FindTop(l, b, e, [](const Token& t) { return IsOp(t, ";"); });
      if (semi > b) RETURN_IF_ERROR(ParseSimple(l, b, semi, out));
      b = semi + 1;
    }
    return Status::OK();
  }

  Status ParseSimple(const Line& l, std::size_t b, std::size_t e, std::vector<int32_t>& out) {
    ASSIGN_OR_RETURN(int32_t s, ParseSimpleStmt(l, b, e, out));
    if (s >= 0) out.push_back(s);
    return Status::OK();
  }

  // One simple statement; -1 when it added its statements to `out` itself (import a, b).
  Result<int32_t> ParseSimpleStmt(const Line& l, std::size_t b, std::size_t e, std::vector<int32_t>& out) {
    const Token& t = l.toks[b];
    if (t.kind == TokKind::kName) {
      const std::string& w = t.text;
      if (w == "pass" || w == "break" || w == "continue") {
        if (b + 1 < e) return ErrorAt(l, l.toks[b + 1], "unexpected '" + l.toks[b + 1].text + "' after '" + w + "'");
        if (w != "pass" && loop_depth_ == 0) return ErrorAt(l, t, "'" + w + "' outside loop");
        return AddStmt(At(l, b, w == "pass" ? StmtKind::kPass : w == "break" ? StmtKind::kBreak : StmtKind::kContinue));
      }
      if (w == "return") {
        if (func_depth_ == 0) return ErrorAt(l, t, "'return' outside function");
        Stmt s = At(l, b, StmtKind::kReturn);
        if (b + 1 < e) {
          ASSIGN_OR_RETURN(s.expr, Expr(l, b + 1, e));
        }
        return AddStmt(std::move(s));
      }
      if (w == "raise") {
        Stmt s = At(l, b, StmtKind::kRaise);
        if (b + 1 < e) {
          if (FindTop(l, b + 1, e, [](const Token& k) { return IsKeyword(k, "from"); }) < e)
            return ErrorAt(l, t, "'raise ... from' is not supported");
          ASSIGN_OR_RETURN(s.expr, Expr(l, b + 1, e));
        }
        return AddStmt(std::move(s));
      }
      if (w == "import") {
        RETURN_IF_ERROR(ParseImport(l, b, e, out));
        return -1;
      }
      if (w == "from") {
        RETURN_IF_ERROR(ParseFromImport(l, b, e, out));
        return -1;
      }
      if (w == "assert") {
        Stmt s = At(l, b, StmtKind::kAssert);
        std::size_t comma = FindTop(l, b + 1, e, [](const Token& k) { return IsOp(k, ","); });
        ASSIGN_OR_RETURN(s.expr, Expr(l, b + 1, comma));
        if (comma < e) {
          ASSIGN_OR_RETURN(s.expr2, Expr(l, comma + 1, e));
        }
        return AddStmt(std::move(s));
      }
      if (w == "del") {
        Stmt s = At(l, b, StmtKind::kDel);
        for (std::size_t from = b + 1; from < e;) {
          std::size_t comma = FindTop(l, from, e, [](const Token& k) { return IsOp(k, ","); });
          ASSIGN_OR_RETURN(Target tg, ParseTarget(l, from, comma));
          if (tg.kind == Target::kTuple) return ErrorAt(l, l.toks[from], "del takes names and name[key]");
          s.targets.push_back(std::move(tg));
          from = comma + 1;
        }
        if (s.targets.empty()) return ErrorAt(l, t, "expected a name after 'del'");
        return AddStmt(std::move(s));
      }
      for (const char* no : {"global", "nonlocal", "yield", "await"})
        if (w == no) return ErrorAt(l, t, "'" + w + "' is not supported in def callables");
    }
    // Assignment: targets '=' ... '=' value.
    std::vector<std::size_t> eqs;
    int depth = 0;
    for (std::size_t i = b; i < e; ++i) {
      const Token& k = l.toks[i];
      if (k.kind != TokKind::kOp) continue;
      if (k.text == "(" || k.text == "[" || k.text == "{") ++depth;
      else if (k.text == ")" || k.text == "]" || k.text == "}") --depth;
      else if (depth == 0 && k.text == "=") eqs.push_back(i);
      else if (depth == 0 && k.text == ":" && i == b + 1 && l.toks[b].kind == TokKind::kName && eqs.empty())
        return ErrorAt(l, k, "variable annotations are not supported");
    }
    if (!eqs.empty()) {
      Stmt s = At(l, b, StmtKind::kAssign);
      std::size_t from = b;
      for (std::size_t eq : eqs) {
        ASSIGN_OR_RETURN(Target tg, ParseTarget(l, from, eq));
        s.targets.push_back(std::move(tg));
        from = eq + 1;
      }
      ASSIGN_OR_RETURN(s.expr, Expr(l, from, e));
      return AddStmt(std::move(s));
    }
    static const std::pair<std::string_view, Op> kAug[] = {
        {"+=", Op::kAdd}, {"-=", Op::kSub}, {"*=", Op::kMul}, {"/=", Op::kDiv}, {"//=", Op::kFloorDiv}, {"%=", Op::kMod},
        {"**=", Op::kPow}, {"&=", Op::kBitAnd}, {"|=", Op::kBitOr}, {"^=", Op::kBitXor}, {"<<=", Op::kShl}, {">>=", Op::kShr}};
    std::size_t aug = FindTop(l, b, e, [](const Token& k) {
      if (k.kind != TokKind::kOp) return false;
      for (const auto& a : kAug)
        if (k.text == a.first) return true;
      return k.text == "@=";
    });
    if (aug < e) {
      if (l.toks[aug].text == "@=") return ErrorAt(l, l.toks[aug], "the operator '@=' is not supported");
      Stmt s = At(l, b, StmtKind::kAugAssign);
      for (const auto& a : kAug)
        if (l.toks[aug].text == a.first) s.op = a.second;
      ASSIGN_OR_RETURN(Target tg, ParseTarget(l, b, aug));
      if (tg.kind == Target::kTuple) return ErrorAt(l, l.toks[aug], "illegal expression for augmented assignment");
      s.targets.push_back(std::move(tg));
      ASSIGN_OR_RETURN(s.expr, Expr(l, aug + 1, e));
      return AddStmt(std::move(s));
    }
    Stmt s = At(l, b, StmtKind::kExpr);
    ASSIGN_OR_RETURN(s.expr, Expr(l, b, e));
    return AddStmt(std::move(s));
  }

  Status ParseImport(const Line& l, std::size_t b, std::size_t e, std::vector<int32_t>& out) {
    std::size_t i = b + 1;
    while (true) {
      if (i >= e || l.toks[i].kind != TokKind::kName) return ErrorAt(l, l.toks[std::min(i, e)], "expected a module name after 'import'");
      Stmt s = At(l, i, StmtKind::kImport);
      s.name = l.toks[i].text;
      s.as = s.name;
      std::size_t name_tok = i++;
      if (i < e && IsOp(l.toks[i], "."))
        return ErrorAt(l, l.toks[name_tok], "module '" + s.name + "...' is not available in def callables; allowed: re, math, json, datetime");
      if (!IsAllowedModule(s.name))
        return ErrorAt(l, l.toks[name_tok], "module '" + s.name + "' is not available in def callables; allowed: re, math, json, datetime");
      if (i < e && IsKeyword(l.toks[i], "as")) {
        if (i + 1 >= e || l.toks[i + 1].kind != TokKind::kName) return ErrorAt(l, l.toks[i], "expected a name after 'as'");
        s.as = l.toks[i + 1].text;
        i += 2;
      }
      out.push_back(AddStmt(std::move(s)));
      if (i >= e) return Status::OK();
      if (!IsOp(l.toks[i], ",")) return ErrorAt(l, l.toks[i], "unexpected '" + l.toks[i].text + "' in import");
      ++i;
    }
  }

  // from MODULE import a [as b], ... (MODULE one of the allowed ones; no `*`).
  Status ParseFromImport(const Line& l, std::size_t b, std::size_t e, std::vector<int32_t>& out) {
    std::size_t i = b + 1;
    if (i >= e || l.toks[i].kind != TokKind::kName) return ErrorAt(l, l.toks[std::min(i, e)], "expected a module name after 'from'");
    Stmt s = At(l, b, StmtKind::kImport);
    s.name = l.toks[i].text;
    if (i + 1 < e && IsOp(l.toks[i + 1], "."))
      return ErrorAt(l, l.toks[i], "module '" + s.name + "...' is not available in def callables; allowed: re, math, json, datetime");
    if (!IsAllowedModule(s.name))
      return ErrorAt(l, l.toks[i], "module '" + s.name + "' is not available in def callables; allowed: re, math, json, datetime");
    ++i;
    if (i >= e || !IsKeyword(l.toks[i], "import")) return ErrorAt(l, l.toks[std::min(i, e)], "expected 'import' after the module name");
    ++i;
    bool paren = i < e && IsOp(l.toks[i], "(");
    if (paren) ++i;
    while (i < e && !(paren && IsOp(l.toks[i], ")"))) {
      if (IsOp(l.toks[i], "*")) return ErrorAt(l, l.toks[i], "'from ... import *' is not supported; name what you import");
      if (l.toks[i].kind != TokKind::kName) return ErrorAt(l, l.toks[i], "expected a name to import");
      std::string name = l.toks[i++].text, as = name;
      if (i < e && IsKeyword(l.toks[i], "as")) {
        if (i + 1 >= e || l.toks[i + 1].kind != TokKind::kName) return ErrorAt(l, l.toks[i], "expected a name after 'as'");
        as = l.toks[i + 1].text;
        i += 2;
      }
      s.names.emplace_back(name, as);
      if (i < e && IsOp(l.toks[i], ",")) ++i;
      else break;
    }
    if (paren && (i >= e || !IsOp(l.toks[i], ")"))) return ErrorAt(l, l.toks[std::min(i, e)], "expected ')'");
    if (paren) ++i;
    if (i < e) return ErrorAt(l, l.toks[i], "unexpected '" + l.toks[i].text + "' in import");
    if (s.names.empty()) return ErrorAt(l, l.toks[b], "expected names to import");
    out.push_back(AddStmt(std::move(s)));
    return Status::OK();
  }

  // The index of the bracket closing the one at `open`, or the end-of-line token.
  static std::size_t MatchingClose(const Line& l, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open; i + 1 < l.toks.size(); ++i) {
      const Token& t = l.toks[i];
      if (t.kind != TokKind::kOp) continue;
      if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
      else if ((t.text == ")" || t.text == "]" || t.text == "}") && --depth == 0) return i;
    }
    return l.toks.size() - 1;
  }

  // A name, NAME[index], or a tuple of targets (bare, or in () or []).
  Result<Target> ParseTarget(const Line& l, std::size_t b, std::size_t e) {
    if (b >= e) return ErrorAt(l, l.toks[std::min(b, l.toks.size() - 1)], "expected an assignment target");
    const Token& t = l.toks[b];
    std::size_t off = l.start + static_cast<std::size_t>(t.column) - 1;
    Target tg{.line = LineOf(off), .column = ColumnOf(off)};
    std::size_t comma = FindTop(l, b, e, [](const Token& k) { return IsOp(k, ","); });
    bool wrapped = (IsOp(t, "(") || IsOp(t, "[")) && MatchingClose(l, b) == e - 1;
    if (comma < e || wrapped) {
      tg.kind = Target::kTuple;
      std::size_t from = wrapped && comma >= e ? b + 1 : b, end = wrapped && comma >= e ? e - 1 : e;
      while (from < end) {
        std::size_t c = FindTop(l, from, end, [](const Token& k) { return IsOp(k, ","); });
        ASSIGN_OR_RETURN(Target item, ParseTarget(l, from, c));
        tg.items.push_back(std::move(item));
        from = c + 1;
      }
      return tg;
    }
    if (IsOp(t, "*")) return ErrorAt(l, t, "starred assignment targets are not supported");
    if (t.kind != TokKind::kName) return ErrorAt(l, t, "cannot assign to this expression; targets are names, tuples and name[index]");
    tg.name = t.text;
    if (b + 1 == e) return tg;
    if (IsOp(l.toks[b + 1], "[") && IsOp(l.toks[e - 1], "]") &&
        FindTop(l, b + 2, e - 1, [](const Token& k) { return IsOp(k, "]") || IsOp(k, ":"); }) == e - 1) {
      tg.kind = Target::kSubscript;
      ASSIGN_OR_RETURN(tg.index, Expr(l, b + 2, e - 1));
      return tg;
    }
    if (IsOp(l.toks[b + 1], ".")) return ErrorAt(l, l.toks[b + 1], "attribute assignment is not supported (rows are read-only)");
    return ErrorAt(l, l.toks[b + 1], "cannot assign to this expression; targets are names, tuples and name[index]");
  }

  Status ParseIfWhile(std::size_t& li, std::vector<int32_t>& out, bool is_while) {
    const Line& l = lines_[li];
    int indent = l.indent;
    const char* what = is_while ? "while" : IsKeyword(l.toks[0], "elif") ? "elif" : "if";
    std::size_t colon = HeaderColon(l, 1);
    RETURN_IF_ERROR(NeedColon(l, colon, what));
    Stmt s = At(l, 0, is_while ? StmtKind::kWhile : StmtKind::kIf);
    ASSIGN_OR_RETURN(s.expr, Expr(l, 1, colon));
    if (is_while) ++loop_depth_;
    Status body = ParseBody(li, colon, what, s.body);
    if (is_while) --loop_depth_;
    RETURN_IF_ERROR(body);
    if (!is_while && NextLineStarts(li, indent, "elif")) {
      RETURN_IF_ERROR(ParseIfWhile(li, s.orelse, false));
    } else if (NextLineStarts(li, indent, "else")) {
      RETURN_IF_ERROR(ParseElse(li, s.orelse));
    }
    out.push_back(AddStmt(std::move(s)));
    return Status::OK();
  }

  Status ParseElse(std::size_t& li, std::vector<int32_t>& body) {
    const Line& l = lines_[li];
    if (l.toks.size() < 3 || !IsOp(l.toks[1], ":")) return ErrorAt(l, l.toks[1], "expected ':' after 'else'");
    return ParseBody(li, 1, "else", body);
  }

  Status ParseFor(std::size_t& li, std::vector<int32_t>& out) {
    const Line& l = lines_[li];
    int indent = l.indent;
    std::size_t colon = HeaderColon(l, 1);
    RETURN_IF_ERROR(NeedColon(l, colon, "for"));
    std::size_t in = FindTop(l, 1, colon, [](const Token& t) { return IsKeyword(t, "in"); });
    if (in >= colon) return ErrorAt(l, l.toks[0], "expected 'for TARGET in ITERABLE:'");
    Stmt s = At(l, 0, StmtKind::kFor);
    ASSIGN_OR_RETURN(Target tg, ParseTarget(l, 1, in));
    s.targets.push_back(std::move(tg));
    ASSIGN_OR_RETURN(s.expr, Expr(l, in + 1, colon));
    ++loop_depth_;
    Status body = ParseBody(li, colon, "for", s.body);
    --loop_depth_;
    RETURN_IF_ERROR(body);
    if (NextLineStarts(li, indent, "else")) RETURN_IF_ERROR(ParseElse(li, s.orelse));
    out.push_back(AddStmt(std::move(s)));
    return Status::OK();
  }

  Status ParseTry(std::size_t& li, std::vector<int32_t>& out) {
    const Line& l = lines_[li];
    int indent = l.indent;
    if (l.toks.size() < 3 || !IsOp(l.toks[1], ":")) return ErrorAt(l, l.toks[1], "expected ':' after 'try'");
    Stmt s = At(l, 0, StmtKind::kTry);
    RETURN_IF_ERROR(ParseBody(li, 1, "try", s.body));
    while (NextLineStarts(li, indent, "except")) {
      const Line& h = lines_[li];
      Handler hd{.line = LineOf(h.start)};
      std::size_t colon = HeaderColon(h, 1);
      RETURN_IF_ERROR(NeedColon(h, colon, "except"));
      std::size_t as = FindTop(h, 1, colon, [](const Token& t) { return IsKeyword(t, "as"); });
      for (std::size_t i = 1; i < as; ++i) {
        const Token& t = h.toks[i];
        if (IsOp(t, "(") || IsOp(t, ")") || IsOp(t, ",")) continue;
        if (t.kind != TokKind::kName) return ErrorAt(h, t, "expected exception type names after 'except'");
        std::string type = t.text;
        while (i + 2 < as && IsOp(h.toks[i + 1], ".") && h.toks[i + 2].kind == TokKind::kName) {  // re.error
          type += "." + h.toks[i + 2].text;
          i += 2;
        }
        hd.types.push_back(std::move(type));
      }
      if (as < colon) {
        if (as + 2 != colon || h.toks[as + 1].kind != TokKind::kName) return ErrorAt(h, h.toks[as], "expected a name after 'as'");
        hd.as = h.toks[as + 1].text;
      }
      RETURN_IF_ERROR(ParseBody(li, colon, "except", hd.body));
      s.handlers.push_back(std::move(hd));
    }
    if (!s.handlers.empty() && NextLineStarts(li, indent, "else")) RETURN_IF_ERROR(ParseElse(li, s.orelse));
    if (NextLineStarts(li, indent, "finally")) {
      const Line& f = lines_[li];
      if (f.toks.size() < 3 || !IsOp(f.toks[1], ":")) return ErrorAt(f, f.toks[1], "expected ':' after 'finally'");
      RETURN_IF_ERROR(ParseBody(li, 1, "finally", s.finally));
    } else if (s.handlers.empty()) {
      return ErrorAt(li < lines_.size() ? lines_[li].start : l.start, "expected 'except' or 'finally' block after 'try'");
    }
    out.push_back(AddStmt(std::move(s)));
    return Status::OK();
  }

  Status ParseDef(std::size_t& li, std::vector<int32_t>& out) {
    const Line& l = lines_[li];
    std::size_t e = l.toks.size() - 1;
    if (e < 2 || l.toks[1].kind != TokKind::kName || !IsOp(l.toks[2], "("))
      return ErrorAt(l, l.toks[std::min<std::size_t>(1, e)], "expected 'def NAME(PARAMS):'");
    FuncDef f{.name = l.toks[1].text, .line = LineOf(l.start)};
    std::size_t close = MatchingClose(l, 2);
    std::size_t i = 3;
    while (i < close) {
      const Token& t = l.toks[i];
      if (IsOp(t, "*") || IsOp(t, "**") || IsOp(t, "/")) return ErrorAt(l, t, "'*', '**' and '/' parameters are not supported");
      if (t.kind != TokKind::kName) return ErrorAt(l, t, "expected a parameter name");
      if (std::find(f.params.begin(), f.params.end(), t.text) != f.params.end())
        return ErrorAt(l, t, "duplicate argument '" + t.text + "' in function definition");
      f.params.push_back(t.text);
      std::size_t next = FindTop(l, i + 1, close, [](const Token& k) { return IsOp(k, ","); });
      if (i + 1 < next && IsOp(l.toks[i + 1], ":")) return ErrorAt(l, l.toks[i + 1], "parameter annotations are not supported");
      if (i + 1 < next && IsOp(l.toks[i + 1], "=")) {
        ASSIGN_OR_RETURN(int32_t d, Expr(l, i + 2, next));
        f.defaults.push_back(d);
      } else if (i + 1 < next) {
        return ErrorAt(l, l.toks[i + 1], "unexpected '" + l.toks[i + 1].text + "' in the parameter list");
      } else if (!f.defaults.empty()) {
        return ErrorAt(l, t, "non-default argument follows default argument");
      }
      i = next + 1;
    }
    if (close >= e) return ErrorAt(l, l.toks[e], "expected ')' closing the parameter list");
    if (close + 1 < e && IsOp(l.toks[close + 1], "->")) return ErrorAt(l, l.toks[close + 1], "return annotations are not supported");
    if (close + 1 >= e || !IsOp(l.toks[close + 1], ":")) return ErrorAt(l, l.toks[close + 1], "expected ':' after the parameter list");
    Stmt s = At(l, 0, StmtKind::kDef);
    s.func = static_cast<int32_t>(m_.funcs.size());
    m_.funcs.push_back(FuncDef{});
    int saved_loop = loop_depth_;
    loop_depth_ = 0;
    ++func_depth_;
    Status body = ParseBody(li, close + 1, "def", f.body);
    --func_depth_;
    loop_depth_ = saved_loop;
    RETURN_IF_ERROR(body);
    m_.funcs[static_cast<std::size_t>(s.func)] = std::move(f);
    out.push_back(AddStmt(std::move(s)));
    return Status::OK();
  }

  // Beam calls the last top-level def (or a final lambda line); see PythonCallableWithSource.
  Status PickCallable() {
    const Line& last = lines_.back();
    if (last.indent == 0 && IsKeyword(last.toks[0], "lambda")) return ParseLambda(last);
    if (m_.top.empty()) return ErrorAt(last.start, "the callable defines no function");
    const Stmt& s = m_.stmts[static_cast<std::size_t>(m_.top.back())];
    if (s.kind != StmtKind::kDef)
      return ErrorAt(lines_.back().start, "the callable's last top-level statement must be a 'def' (the function called with "
                                          "each row) or a 'lambda'");
    m_.callable_func = s.func;
    const FuncDef& f = m_.funcs[static_cast<std::size_t>(s.func)];
    if (f.params.size() - f.defaults.size() > 1 || f.params.empty())
      return ErrorAt(lines_.back().start, "def " + f.name + "() must take one parameter, the row (it takes " +
                                              std::to_string(f.params.size()) + ")");
    return Status::OK();
  }

  Status ParseLambda(const Line& l) {
    std::size_t e = l.toks.size() - 1;
    if (e < 3 || l.toks[1].kind != TokKind::kName || !IsOp(l.toks[2], ":"))
      return ErrorAt(l, l.toks[std::min<std::size_t>(1, e)], "expected 'lambda NAME: EXPR' (one parameter, the row)");
    m_.lambda_param = l.toks[1].text;
    ASSIGN_OR_RETURN(m_.callable_lambda, Expr(l, 3, e));
    return Status::OK();
  }

  std::string_view src_;
  std::vector<std::size_t> line_starts_;
  std::vector<Line> lines_;
  std::vector<int> heights_;
  Module m_;
  int loop_depth_ = 0;
  int func_depth_ = 0;
  bool last_was_compound_ = false;
};

}  // namespace

bool IsAllowedModule(std::string_view name) { return name == "re" || name == "math" || name == "json" || name == "datetime"; }

Result<Module> ParseDefModule(std::string_view source) { return DefParser(source).Run(); }

}  // namespace dfw::expr
