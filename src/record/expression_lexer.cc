#include "record/expression_lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "record/expression_ast.h"

namespace dfw::expr {
namespace {

Status ColumnError(std::size_t pos, const std::string& what) {
  return InvalidArgument("column " + std::to_string(pos + 1) + ": " + what);
}

bool IsIdentStart(unsigned char c) { return c == '_' || std::isalpha(c) || c >= 0x80; }
bool IsIdentChar(unsigned char c) { return IsIdentStart(c) || std::isdigit(c); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(std::string_view s, bool fstrings) : s_(s), fstrings_(fstrings) {}

  Result<std::vector<Token>> Run() {
    std::vector<Token> out;
    while (true) {
      SkipSpace();
      Token t;
      t.column = static_cast<int>(i_ + 1);
      if (i_ >= s_.size()) {
        out.push_back(std::move(t));
        return out;
      }
      const auto c = static_cast<unsigned char>(s_[i_]);
      Status st;
      if (std::isdigit(c) || (c == '.' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
        st = Number(t);
      } else if (IsIdentStart(c)) {
        st = NameOrString(t);
      } else if (c == '\'' || c == '"') {
        st = String(t, i_, false);
      } else {
        st = Operator(t);
      }
      if (!st.ok()) return st;
      out.push_back(std::move(t));
    }
  }

 private:
  void SkipSpace() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '\\' && i_ + 1 < s_.size() && (s_[i_ + 1] == '\n' || s_[i_ + 1] == '\r')) {
        i_ += 2;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        return;
      }
    }
  }

  Status Number(Token& t) {
    std::size_t start = i_;
    std::string digits;  // without underscores
    auto take_digits = [&](auto pred) {
      while (i_ < s_.size() && (pred(static_cast<unsigned char>(s_[i_])) || (s_[i_] == '_' && i_ + 1 < s_.size() &&
                                                                             pred(static_cast<unsigned char>(s_[i_ + 1]))))) {
        if (s_[i_] != '_') digits += s_[i_];
        ++i_;
      }
    };
    auto is_dec = [](unsigned char c) { return std::isdigit(c) != 0; };
    if (s_[i_] == '0' && i_ + 1 < s_.size() && std::strchr("xXoObB", s_[i_ + 1]) != nullptr && s_[i_ + 1] != '\0') {
      char k = static_cast<char>(std::tolower(s_[i_ + 1]));
      int base = k == 'x' ? 16 : k == 'o' ? 8 : 2;
      i_ += 2;
      if (i_ < s_.size() && s_[i_] == '_') ++i_;
      take_digits([base](unsigned char c) { return HexValue(static_cast<char>(c)) >= 0 && HexValue(static_cast<char>(c)) < base; });
      if (digits.empty()) return ColumnError(start, "invalid number literal '" + std::string(s_.substr(start, i_ - start)) + "'");
      errno = 0;
      unsigned long long v = std::strtoull(digits.c_str(), nullptr, base);
      if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
        return ColumnError(start, "integer literal " + std::string(s_.substr(start, i_ - start)) + " does not fit in 64 bits");
      t.number = Value::Int(static_cast<int64_t>(v));
    } else {
      take_digits(is_dec);
      bool is_float = false;
      if (i_ < s_.size() && s_[i_] == '.') {
        is_float = true;
        digits += '.';
        ++i_;
        take_digits(is_dec);
      }
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
        std::size_t save = i_, save_len = digits.size();
        digits += 'e';
        ++i_;
        if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) digits += s_[i_++];
        std::size_t before = digits.size();
        take_digits(is_dec);
        if (digits.size() == before) {  // "1e" followed by a name: not an exponent
          i_ = save;
          digits.resize(save_len);
        } else {
          is_float = true;
        }
      }
      std::string text(s_.substr(start, i_ - start));
      if (i_ < s_.size() && (s_[i_] == 'j' || s_[i_] == 'J'))
        return ColumnError(start, "complex number literal '" + text + "j' is not supported");
      if (is_float) {
        t.number = Value::Float(std::strtod(digits.c_str(), nullptr));
      } else {
        if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos)
          return ColumnError(start, "leading zeros in decimal integer literals are not permitted: '" + text + "'");
        errno = 0;
        unsigned long long v = std::strtoull(digits.c_str(), nullptr, 10);
        if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
          return ColumnError(start, "integer literal " + text + " does not fit in 64 bits (ints here are int64)");
        t.number = Value::Int(static_cast<int64_t>(v));
      }
    }
    if (i_ < s_.size() && IsIdentChar(static_cast<unsigned char>(s_[i_])))
      return ColumnError(i_, "invalid character '" + std::string(1, s_[i_]) + "' after number literal");
    t.kind = TokKind::kNumber;
    return Status::OK();
  }

  Status NameOrString(Token& t) {
    std::size_t start = i_;
    while (i_ < s_.size() && IsIdentChar(static_cast<unsigned char>(s_[i_]))) ++i_;
    std::string name(s_.substr(start, i_ - start));
    if (i_ < s_.size() && (s_[i_] == '\'' || s_[i_] == '"') && name.size() <= 2) {
      std::string p;
      for (char c : name) p += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (p.find('f') != std::string::npos && (p == "f" || p == "rf" || p == "fr")) {
        if (fstrings_) return FString(t, start, p != "f");
        return ColumnError(start, "f-strings are not supported in expressions here; use + and str()");
      }
      if (p == "b" || p == "rb" || p == "br") return ColumnError(start, "bytes literals are not supported");
      if (p == "r" || p == "u") return String(t, start, p == "r");
    }
    t.kind = TokKind::kName;
    t.text = std::move(name);
    return Status::OK();
  }

  // Reads a quoted string starting at i_ (the quote); `start` is where its prefix began.
  Status String(Token& t, std::size_t start, bool raw) {
    char q = s_[i_];
    bool triple = s_.substr(i_, 3) == std::string(3, q);
    i_ += triple ? 3 : 1;
    std::string out;
    while (true) {
      if (i_ >= s_.size()) return ColumnError(start, "unterminated string literal");
      char c = s_[i_];
      if (c == q && (!triple || s_.substr(i_, 3) == std::string(3, q))) {
        i_ += triple ? 3 : 1;
        break;
      }
      if ((c == '\n' || c == '\r') && !triple) return ColumnError(start, "unterminated string literal");
      if (c != '\\') {
        out += c;
        ++i_;
        continue;
      }
      if (i_ + 1 >= s_.size()) return ColumnError(start, "unterminated string literal");
      char e = s_[i_ + 1];
      if (raw) {  // a raw string keeps the backslash; it only stops an escaped quote ending the string
        out += c;
        out += e;
        i_ += 2;
        continue;
      }
      RETURN_IF_ERROR(Escape(out));
    }
    t.kind = TokKind::kString;
    t.text = std::move(out);
    return Status::OK();
  }

  // An f-string starting at i_ (the quote): literal parts decoded as in String(), replacement
  // fields {expr!c:spec} kept as source for the parser.
  // https://docs.python.org/3/reference/lexical_analysis.html#formatted-string-literals
  Status FString(Token& t, std::size_t start, bool raw) {
    char q = s_[i_];
    bool triple = s_.substr(i_, 3) == std::string(3, q);
    i_ += triple ? 3 : 1;
    std::string lit;
    auto at_close = [&] { return s_[i_] == q && (!triple || s_.substr(i_, 3) == std::string(3, q)); };
    while (true) {
      if (i_ >= s_.size()) return ColumnError(start, "unterminated string literal");
      char c = s_[i_];
      if (at_close()) {
        i_ += triple ? 3 : 1;
        break;
      }
      if ((c == '\n' || c == '\r') && !triple) return ColumnError(start, "unterminated string literal");
      if (c == '{' || c == '}') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == c) {
          lit += c;
          i_ += 2;
          continue;
        }
        if (c == '}') return ColumnError(i_, "f-string: single '}' is not allowed");
        t.parts.push_back(std::move(lit));
        lit.clear();
        RETURN_IF_ERROR(FStringField(t, q));
        continue;
      }
      if (c != '\\') {
        lit += c;
        ++i_;
        continue;
      }
      if (i_ + 1 >= s_.size()) return ColumnError(start, "unterminated string literal");
      if (raw) {
        lit += c;
        lit += s_[i_ + 1];
        i_ += 2;
        continue;
      }
      RETURN_IF_ERROR(Escape(lit));
    }
    t.parts.push_back(std::move(lit));
    t.kind = TokKind::kFString;
    return Status::OK();
  }

  // One {expr!c:spec} field at i_ (the '{').
  Status FStringField(Token& t, char q) {
    std::size_t open = i_++;
    int depth = 0;
    std::size_t expr_start = i_;
    char quote = 0;
    for (; i_ < s_.size(); ++i_) {
      char c = s_[i_];
      if (quote) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == q) return ColumnError(open, "f-string: expecting '}'");
      if (c == '\'' || c == '"') quote = c;
      else if (c == '(' || c == '[' || c == '{') ++depth;
      else if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      else if (depth == 0 && (c == '}' || c == ':' || (c == '!' && s_.substr(i_, 2) != "!="))) break;
      else if (c == '\\') return ColumnError(i_, "f-string expression part cannot include a backslash");
    }
    if (i_ >= s_.size()) return ColumnError(open, "f-string: expecting '}'");
    std::string expr(s_.substr(expr_start, i_ - expr_start));
    if (expr.find_first_not_of(" \t") == std::string::npos) return ColumnError(open, "f-string: empty expression not allowed");
    char conv = ' ';
    if (s_[i_] == '!') {
      if (i_ + 1 >= s_.size() || std::string_view("sra").find(s_[i_ + 1]) == std::string_view::npos)
        return ColumnError(i_, "f-string: invalid conversion character: expected 's', 'r', or 'a'");
      conv = s_[i_ + 1];
      i_ += 2;
    }
    std::string spec;
    if (i_ < s_.size() && s_[i_] == ':') {
      ++i_;
      while (i_ < s_.size() && s_[i_] != '}' && s_[i_] != q) {
        if (s_[i_] == '{') return ColumnError(i_, "f-string: nested replacement fields in a format spec are not supported");
        spec += s_[i_++];
      }
    }
    if (i_ >= s_.size() || s_[i_] != '}') return ColumnError(open, "f-string: expecting '}'");
    ++i_;
    t.parts.push_back(std::move(expr));
    t.parts.push_back(std::string(1, conv) + spec);
    return Status::OK();
  }

  // Decodes the escape sequence at i_ (the backslash) into `out`.
  Status Escape(std::string& out) {
    std::size_t at = i_;
    char e = s_[i_ + 1];
    i_ += 2;
    switch (e) {
      case '\n': return Status::OK();
      case '\\': out += '\\'; return Status::OK();
      case '\'': out += '\''; return Status::OK();
      case '"': out += '"'; return Status::OK();
      case 'a': out += '\a'; return Status::OK();
      case 'b': out += '\b'; return Status::OK();
      case 'f': out += '\f'; return Status::OK();
      case 'n': out += '\n'; return Status::OK();
      case 'r': out += '\r'; return Status::OK();
      case 't': out += '\t'; return Status::OK();
      case 'v': out += '\v'; return Status::OK();
      case 'N': return ColumnError(at, "\\N{...} escapes are not supported");
      default: break;
    }
    if (e >= '0' && e <= '7') {
      uint32_t v = static_cast<uint32_t>(e - '0');
      for (int k = 0; k < 2 && i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '7'; ++k) v = v * 8 + (s_[i_++] - '0');
      AppendUtf8(out, v);
      return Status::OK();
    }
    int n = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (n == 0) {  // unknown escapes keep the backslash, as Python does
      out += '\\';
      out += e;
      return Status::OK();
    }
    uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      int h = i_ < s_.size() ? HexValue(s_[i_]) : -1;
      if (h < 0) return ColumnError(at, std::string("truncated \\") + e + " escape");
      v = v * 16 + static_cast<uint32_t>(h);
      ++i_;
    }
    if (v > 0x10FFFF) return ColumnError(at, "illegal Unicode character in \\U escape");
    if (v >= 0xD800 && v <= 0xDFFF) return ColumnError(at, "surrogate code points are not supported in strings");
    AppendUtf8(out, v);
    return Status::OK();
  }

  Status Operator(Token& t) {
    static constexpr std::string_view kOps[] = {
        "**=", "//=", ">>=", "<<=", "...", "**", "//", "==", "!=", "<=", ">=", "<<", ">>", ":=", "->", "+=", "-=",
        "*=",  "/=",  "%=",  "&=",  "|=",  "^=", "@=", "+",  "-",  "*",  "/",  "%",  "<",  ">",  "(",  ")",
        "[",   "]",   "{",   "}",   ",",   ":",  ".",  ";",  "~",  "&",  "|",  "^",  "@",  "="};
    for (std::string_view op : kOps) {
      if (s_.substr(i_, op.size()) == op) {
        t.kind = TokKind::kOp;
        t.text = std::string(op);
        i_ += op.size();
        return Status::OK();
      }
    }
    auto c = static_cast<unsigned char>(s_[i_]);
    std::string shown = std::isprint(c) ? std::string(1, static_cast<char>(c)) : "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) +
                                                                                     std::string(1, "0123456789abcdef"[c & 15]);
    return ColumnError(i_, "unexpected character '" + shown + "'");
  }

  std::string_view s_;
  bool fstrings_ = false;
  std::size_t i_ = 0;
};

}  // namespace

Result<std::vector<Token>> Tokenize(std::string_view source) { return Lexer(source, false).Run(); }
Result<std::vector<Token>> Tokenize(std::string_view source, bool fstrings) { return Lexer(source, fstrings).Run(); }

}  // namespace dfw::expr
