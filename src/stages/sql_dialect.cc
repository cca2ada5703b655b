// Beam SQL's text (Calcite, or ZetaSQL for `dialect: zetasql`) as SQLite prepares it. The two
// parse the same SELECT grammar for what Beam YAML writes; what differs is rewritten token by
// token (never by a parser of our own): the type names of CAST, and a few function names. String
// literals, comments and quoted identifiers (`rank`, "rank") pass through untouched; SQLite reads
// backquoted identifiers as Calcite does.
#include <cctype>
#include <map>

#include <fmt/format.h>

#include "sql_engine.h"

namespace dfw::stages_internal {
namespace {

std::string SqlUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Calcite's and ZetaSQL's CAST target types as SQLite's; "" for a type SQLite has no value for.
const std::map<std::string, std::string>& SqlCastTypes() {
  static const std::map<std::string, std::string> kTypes = {
      {"STRING", "TEXT"},     {"VARCHAR", "TEXT"},    {"CHAR", "TEXT"},      {"CHARACTER", "TEXT"},
      {"TEXT", "TEXT"},       {"BIGINT", "INTEGER"},  {"INTEGER", "INTEGER"}, {"INT", "INTEGER"},
      {"INT64", "INTEGER"},   {"SMALLINT", "INTEGER"}, {"TINYINT", "INTEGER"}, {"BOOLEAN", "INTEGER"},
      {"BOOL", "INTEGER"},    {"DOUBLE", "REAL"},     {"FLOAT", "REAL"},     {"FLOAT64", "REAL"},
      {"REAL", "REAL"},       {"DECIMAL", "NUMERIC"}, {"NUMERIC", "NUMERIC"}, {"BYTES", "BLOB"},
      {"VARBINARY", "BLOB"},  {"BINARY", "BLOB"},
  };
  return kTypes;
}

// Calcite functions SQLite knows under another name (called as NAME(...)).
const std::map<std::string, std::string>& SqlFunctionNames() {
  static const std::map<std::string, std::string> kNames = {
      {"CHAR_LENGTH", "length"}, {"CHARACTER_LENGTH", "length"}, {"POWER", "pow"}, {"LN", "ln"},
  };
  return kNames;
}

bool SqlWordStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool SqlWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

// The next character after `i` that is not white space ('\0' at the end).
char SqlNextSolid(std::string_view s, std::size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i < s.size() ? s[i] : '\0';
}

}  // namespace

Result<SqlText> TranslateSql(std::string_view q) {
  SqlText out;
  out.sqlite.reserve(q.size());
  std::vector<bool> parens;  // open parentheses: true for CAST's
  bool cast_next = false;    // the last word was CAST and '(' follows
  bool type_next = false;    // the last word was AS directly inside CAST(...)
  std::size_t i = 0;
  while (i < q.size()) {
    const char c = q[i];
    if (c == '-' && i + 1 < q.size() && q[i + 1] == '-') {
      std::size_t end = q.find('\n', i);
      end = end == std::string_view::npos ? q.size() : end;
      out.sqlite.append(q.substr(i, end - i));
      i = end;
      continue;
    }
    if (c == '/' && i + 1 < q.size() && q[i + 1] == '*') {
      std::size_t end = q.find("*/", i + 2);
      if (end == std::string_view::npos) return InvalidArgument(fmt::format("unterminated /* comment at offset {}", i));
      out.sqlite.append(q.substr(i, end + 2 - i));
      i = end + 2;
      continue;
    }
    if (c == '\'' || c == '"' || c == '`') {  // a literal or quoted identifier; a doubled quote escapes it
      std::size_t j = i + 1;
      std::string name;
      while (true) {
        if (j >= q.size()) {
          return InvalidArgument(fmt::format("unterminated {} at offset {}", c == '\'' ? "string literal" : "quoted name", i));
        }
        if (q[j] == c && j + 1 < q.size() && q[j + 1] == c) {
          name.push_back(c);
          j += 2;
          continue;
        }
        if (q[j] == c) break;
        name.push_back(q[j++]);
      }
      if (c != '\'') out.words.push_back(std::move(name));
      out.sqlite.append(q.substr(i, j + 1 - i));
      i = j + 1;
      type_next = false;
      continue;
    }
    if (SqlWordStart(c)) {
      std::size_t j = i;
      while (j < q.size() && SqlWordChar(q[j])) ++j;
      const std::string_view word = q.substr(i, j - i);
      const std::string upper = SqlUpper(word);
      std::string text(word);
      if (type_next) {
        auto it = SqlCastTypes().find(upper);
        if (it == SqlCastTypes().end()) {
          return Unimplemented(fmt::format("CAST to {} is not supported here (SQLite has no such value); supported: "
                                           "STRING/VARCHAR, BIGINT/INTEGER, DOUBLE/FLOAT, DECIMAL, BOOLEAN, BYTES", word));
        }
        text = it->second;
      } else if (auto f = SqlFunctionNames().find(upper); f != SqlFunctionNames().end() && SqlNextSolid(q, j) == '(') {
        text = f->second;
      } else {
        out.words.emplace_back(word);
      }
      type_next = upper == "AS" && !parens.empty() && parens.back();
      cast_next = upper == "CAST" && SqlNextSolid(q, j) == '(';
      out.sqlite.append(text);
      i = j;
      continue;
    }
    if (c == '(') {
      parens.push_back(cast_next);
      cast_next = false;
    } else if (c == ')' && !parens.empty()) {
      parens.pop_back();
    }
    if (!std::isspace(static_cast<unsigned char>(c))) type_next = false;
    out.sqlite.push_back(c);
    ++i;
  }
  return out;
}

bool SqlLooksBoolean(std::string_view e) {
  static const char* const kWords[] = {"AND", "OR", "NOT", "IS", "IN", "LIKE", "BETWEEN", "EXISTS", "TRUE", "FALSE", "GLOB"};
  int parens = 0, cases = 0;
  for (std::size_t i = 0; i < e.size();) {
    const char c = e[i];
    if (c == '\'' || c == '"' || c == '`') {  // skip a literal or a quoted name
      std::size_t j = i + 1;
      while (j < e.size() && !(e[j] == c && (j + 1 >= e.size() || e[j + 1] != c))) j += e[j] == c ? 2 : 1;
      i = j + 1;
      continue;
    }
    if (SqlWordStart(c)) {
      std::size_t j = i;
      while (j < e.size() && SqlWordChar(e[j])) ++j;
      const std::string w = SqlUpper(e.substr(i, j - i));
      cases += w == "CASE" ? 1 : (w == "END" && cases > 0 ? -1 : 0);
      if (parens == 0 && cases == 0) {
        for (const char* k : kWords) {
          if (w == k) return true;
        }
      }
      i = j;
      continue;
    }
    if (c == '(') ++parens;
    if (c == ')') --parens;
    // A whole expression in parentheses: look inside.
    if (c == '(' && parens == 1 && cases == 0 && i == e.find_first_not_of(" \t\n") &&
        e.find_last_not_of(" \t\n") != std::string_view::npos && e[e.find_last_not_of(" \t\n")] == ')') {
      int depth = 0;
      std::size_t close = i;
      for (std::size_t k = i; k < e.size(); ++k) {
        depth += e[k] == '(' ? 1 : e[k] == ')' ? -1 : 0;
        if (depth == 0) {
          close = k;
          break;
        }
      }
      if (close == e.find_last_not_of(" \t\n")) return SqlLooksBoolean(e.substr(i + 1, close - i - 1));
    }
    if (parens == 0 && cases == 0 && (c == '=' || c == '<' || c == '>' || (c == '!' && i + 1 < e.size() && e[i + 1] == '='))) {
      const bool shift = i + 1 < e.size() && (c == '<' || c == '>') && e[i + 1] == c;
      const bool arrow = c == '>' && i > 0 && e[i - 1] == '-';  // SQLite's JSON -> and ->>
      if (!shift && !arrow) return true;
      i += 2;
      continue;
    }
    ++i;
  }
  return false;
}

std::vector<bool> SqlSelectBooleans(std::string_view q) {
  static const char* const kEnds[] = {"FROM", "WHERE", "GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT", "UNION", "EXCEPT", "INTERSECT"};
  std::vector<bool> out;
  int parens = 0, cases = 0;
  std::size_t item = std::string_view::npos;  // where the select list's current item starts
  auto close_item = [&](std::size_t end) {
    std::string_view text = q.substr(item, end - item);
    const std::size_t last = text.find_last_not_of(" \t\n");
    if (last == std::string_view::npos || text[last] == '*') return false;  // `*` or `t.*`: columns unknown here
    out.push_back(SqlLooksBoolean(text));
    return true;
  };
  for (std::size_t i = 0; i < q.size();) {
    const char c = q[i];
    if (c == '\'' || c == '"' || c == '`') {
      std::size_t j = i + 1;
      while (j < q.size() && !(q[j] == c && (j + 1 >= q.size() || q[j + 1] != c))) j += q[j] == c ? 2 : 1;
      i = j + 1;
      continue;
    }
    if (SqlWordStart(c)) {
      std::size_t j = i;
      while (j < q.size() && SqlWordChar(q[j])) ++j;
      const std::string w = SqlUpper(q.substr(i, j - i));
      cases += w == "CASE" ? 1 : (w == "END" && cases > 0 ? -1 : 0);
      if (parens == 0 && cases == 0) {
        if (item == std::string_view::npos && w == "SELECT") {
          item = j;
          std::size_t k = j;  // DISTINCT / ALL belong to SELECT, not to the first item
          while (k < q.size() && std::isspace(static_cast<unsigned char>(q[k]))) ++k;
          std::size_t e = k;
          while (e < q.size() && SqlWordChar(q[e])) ++e;
          const std::string next = SqlUpper(q.substr(k, e - k));
          if (next == "DISTINCT" || next == "ALL") item = j = e;
        } else if (item != std::string_view::npos) {
          for (const char* end : kEnds) {
            if (w == end) return close_item(i) ? out : std::vector<bool>{};
          }
        }
      }
      i = j;
      continue;
    }
    if (c == '(') ++parens;
    if (c == ')') --parens;
    if (c == ',' && parens == 0 && cases == 0 && item != std::string_view::npos) {
      if (!close_item(i)) return {};
      item = i + 1;
    }
    ++i;
  }
  if (item == std::string_view::npos || !close_item(q.size())) return {};
  return out;
}

}  // namespace dfw::stages_internal
