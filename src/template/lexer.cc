#include "dfw/template/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace dfw::tmpl {
namespace {

// Whitespace control removes spaces, tabs and newlines (jinja2's \s).
void StripLeft(std::string& s) {
  const std::size_t first = s.find_first_not_of(" \t\r\n\f\v");
  s.erase(0, first == std::string::npos ? s.size() : first);
}
void StripRight(std::string& s) {
  const std::size_t last = s.find_last_not_of(" \t\r\n\f\v");
  s.erase(last == std::string::npos ? 0 : last + 1);
}

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& name, const LexOptions& options) : src_(src), name_(name), options_(options) {}

  Result<std::vector<Token>> Run() {
    bool strip_leading = false;
    while (pos_ < src_.size()) {
      const std::size_t open = FindTag(pos_);
      std::string text(src_.substr(pos_, open - pos_));
      const int text_line = line_;
      CountLines(pos_, open);
      pos_ = open;
      const bool strip_trailing = open + 2 < src_.size() && src_[open + 2] == '-';
      const bool plus = open + 2 < src_.size() && src_[open + 2] == '+';
      if (strip_leading) StripLeft(text);
      if (strip_trailing && open < src_.size()) StripRight(text);
      if (options_.lstrip_blocks && !strip_trailing && !plus && open < src_.size() && src_[open + 1] != '{') {
        // Spaces and tabs between the start of the line and the tag (only those) go.
        std::size_t b = open;
        while (b > 0 && (src_[b - 1] == ' ' || src_[b - 1] == '\t')) --b;
        if ((b == 0 || src_[b - 1] == '\n') && open - b <= text.size()) text.erase(text.size() - (open - b));
      }
      strip_leading = false;
      if (!text.empty()) Push(TokenKind::kText, std::move(text), text_line);
      if (open >= src_.size()) break;
      const char kind = src_[open + 1];
      pos_ = open + (strip_trailing || plus ? 3 : 2);
      if (kind == '#') {
        const std::size_t close = src_.find("#}", pos_);
        if (close == std::string_view::npos) return Error("the comment is not closed (missing '#}')");
        strip_leading = close > pos_ && src_[close - 1] == '-';
        CountLines(pos_, close + 2);
        pos_ = close + 2;
        TrimBlock();
        continue;
      }
      const bool block = kind == '%';
      const std::size_t first_token = tokens_.size();
      Push(block ? TokenKind::kBlockBegin : TokenKind::kVarBegin, block ? "{%" : "{{", line_);
      ASSIGN_OR_RETURN(strip_leading, LexInside(block ? '%' : '}'));
      if (block) TrimBlock();
      if (block && tokens_.size() == first_token + 3 && tokens_[first_token + 1].text == "raw" &&
          tokens_[first_token + 1].kind == TokenKind::kName) {
        tokens_.resize(first_token);
        RETURN_IF_ERROR(LexRaw(strip_leading));
        strip_leading = false;
      }
    }
    Push(TokenKind::kEnd, "", line_);
    return std::move(tokens_);
  }

 private:
  // trim_blocks: the newline right after a block tag or comment is not output.
  void TrimBlock() {
    if (!options_.trim_blocks) return;
    if (pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
    } else if (pos_ + 1 < src_.size() && src_[pos_] == '\r' && src_[pos_ + 1] == '\n') {
      pos_ += 2;
      ++line_;
    }
  }

  std::size_t FindTag(std::size_t from) const {
    for (std::size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  void CountLines(std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to && i < src_.size(); ++i) line_ += src_[i] == '\n';
  }

  Status Error(const std::string& what) const { return InvalidArgument(name_ + ":" + std::to_string(line_) + ": " + what); }

  void Push(TokenKind kind, std::string text, int line) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.line = line;
    tokens_.push_back(std::move(t));
  }

  // Tokens up to the closing `%}` or `}}` (brackets balanced, as Jinja2's lexer does). Returns
  // whether the close had a '-' (strip the whitespace after it).
  Result<bool> LexInside(char close) {
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && std::isspace(static_cast<unsigned char>(src_[pos_]))) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size()) return Error(close == '%' ? "the tag is not closed (missing '%}')" : "the expression is not closed (missing '}}')");
      const std::string_view rest = src_.substr(pos_);
      if (depth == 0) {
        for (bool dash : {true, false}) {
          std::string end = std::string(dash ? "-" : "") + close + "}";
          if (rest.starts_with(end)) {
            Push(close == '%' ? TokenKind::kBlockEnd : TokenKind::kVarEnd, close == '%' ? "%}" : "}}", line_);
            pos_ += end.size();
            return dash;
          }
        }
      }
      const char c = rest[0];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t n = 1;
        while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
        Push(TokenKind::kName, std::string(rest.substr(0, n)), line_);
        pos_ += n;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        RETURN_IF_ERROR(LexNumber(rest));
      } else if (c == '\'' || c == '"') {
        RETURN_IF_ERROR(LexString(c));
      } else {
        static constexpr std::string_view kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~",
                                                    "<",  ">",  "=",  "(",  ")",  "[",  "]", "{", "}", ".", ",", ":", "|"};
        std::string_view op;
        for (std::string_view o : kOps) {
          if (rest.starts_with(o)) {
            op = o;
            break;
          }
        }
        if (op.empty()) return Error("unexpected character '" + std::string(1, c) + "'");
        if (op == "(" || op == "[" || op == "{") ++depth;
        if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
        Push(TokenKind::kOp, std::string(op), line_);
        pos_ += op.size();
      }
    }
  }

  Status LexNumber(std::string_view rest) {
    std::size_t n = 0;
    bool is_float = false;
    while (n < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
    if (n + 1 < rest.size() && rest[n] == '.' && std::isdigit(static_cast<unsigned char>(rest[n + 1]))) {
      is_float = true;
      ++n;
      while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
    }
    if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
      std::size_t m = n + 1;
      if (m < rest.size() && (rest[m] == '+' || rest[m] == '-')) ++m;
      if (m < rest.size() && std::isdigit(static_cast<unsigned char>(rest[m]))) {
        is_float = true;
        n = m;
        while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
      }
    }
    std::string digits;
    for (char ch : rest.substr(0, n)) {
      if (ch != '_') digits += ch;
    }
    Token t;
    t.line = line_;
    t.text = digits;
    errno = 0;
    if (is_float) {
      t.kind = TokenKind::kFloat;
      t.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      t.kind = TokenKind::kInt;
      t.int_value = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == ERANGE) return Error("the integer " + digits + " is too large (64-bit integers only)");
    }
    tokens_.push_back(std::move(t));
    pos_ += n;
    return Status::OK();
  }

  Status LexString(char quote) {
    const int start_line = line_;
    std::string out;
    std::size_t i = pos_ + 1;
    for (; i < src_.size() && src_[i] != quote; ++i) {
      char c = src_[i];
      line_ += c == '\n';
      if (c == '\\' && i + 1 < src_.size()) {
        const char e = src_[++i];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case '\\': case '\'': case '"': out += e; break;
          default: out += '\\'; out += e;  // Python keeps unknown escapes as written
        }
        continue;
      }
      out += c;
    }
    if (i >= src_.size()) return Error("the string is not closed");
    Push(TokenKind::kString, std::move(out), start_line);
    pos_ = i + 1;
    return Status::OK();
  }

  // After `{% raw %}`: everything up to `{% endraw %}` (spaces and '-' allowed inside it) is text.
  Status LexRaw(bool strip_leading) {
    const int start_line = line_;
    for (std::size_t i = src_.find("{%", pos_); i != std::string_view::npos; i = src_.find("{%", i + 2)) {
      std::size_t j = i + 2;
      const bool dash = j < src_.size() && src_[j] == '-';
      j += dash;
      while (j < src_.size() && src_[j] == ' ') ++j;
      if (src_.substr(j, 6) != "endraw") continue;
      j += 6;
      while (j < src_.size() && src_[j] == ' ') ++j;
      const bool dash_after = j < src_.size() && src_[j] == '-';
      j += dash_after;
      if (src_.substr(j, 2) != "%}") continue;
      std::string text(src_.substr(pos_, i - pos_));
      if (strip_leading) StripLeft(text);
      if (dash) StripRight(text);
      if (!text.empty()) Push(TokenKind::kText, std::move(text), start_line);
      CountLines(pos_, j + 2);
      pos_ = j + 2;
      if (dash_after) {
        while (pos_ < src_.size() && std::isspace(static_cast<unsigned char>(src_[pos_]))) line_ += src_[pos_++] == '\n';
      }
      return Status::OK();
    }
    return Error("{% raw %} is not closed (missing '{% endraw %}')");
  }

  std::string_view src_;
  const std::string& name_;
  LexOptions options_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> Tokenize(std::string_view source, const std::string& name, const LexOptions& options) {
  return Lexer(source, name, options).Run();
}

}  // namespace dfw::tmpl
