// --fix_tests (dfw/pipeline/pipeline_tests.h): failing expectations get the rows that arrived,
// written into the test file's text in place of their `elements`, the rest of the text untouched.
#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "dfw/pipeline/pipeline_tests.h"
#include "yaml_text.h"

namespace dfw {
namespace {

// A Python float's repr: the shortest text that reads back, with ".0" on integral values.
std::string PyFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// JSON string with json.dumps' ensure_ascii: every non-ASCII code point as \uXXXX (pairs above the BMP).
void AppendPyJsonString(const std::string& s, std::string& out) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20) {
            out += fmt::format("\\u{:04x}", c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // Decode one UTF-8 sequence (values are valid UTF-8: readers check it); a stray byte as U+FFFD.
    uint32_t cp = 0xFFFD;
    std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (n > 1 && i + n <= s.size()) {
      cp = c & (0x3F >> (n - 1));
      for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    } else {
      n = 1;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
    } else {
      out += fmt::format("\\u{:04x}", cp);
    }
    i += n;
  }
  out += '"';
}

void AppendPyJson(const Value& v, std::string& out) {
  switch (v.kind()) {
    case Value::Kind::kNull: out += "null"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: out += PyFloat(v.as_float()); return;
    case Value::Kind::kString: AppendPyJsonString(v.as_string(), out); return;
    case Value::Kind::kTimestamp:
    case Value::Kind::kBytes: out += v.ToJson(); return;  // seconds; base64
    case Value::Kind::kList: {
      out += "[";
      bool first = true;
      for (const Value& e : v.as_list()) {
        if (!first) out += ", ";
        first = false;
        AppendPyJson(e, out);
      }
      out += "]";
      return;
    }
    case Value::Kind::kRow: {
      out += "{";
      bool first = true;
      for (const Field& f : v.as_row().fields()) {
        if (!first) out += ", ";
        first = false;
        AppendPyJsonString(f.name, out);
        out += ": ";
        AppendPyJson(f.value, out);
      }
      out += "}";
      return;
    }
  }
}

// A string that YAML reads back as this string when written plain: a name that is no YAML
// boolean, null or special float (keys only need to be names: a key is always a string).
bool PlainString(const std::string& k, bool key) {
  if (k.empty() || !(std::isalpha(static_cast<unsigned char>(k[0])) || k[0] == '_')) return false;
  if (!std::all_of(k.begin(), k.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) {
    return false;
  }
  if (key) return true;
  std::string lower = k;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  static const char* kWords[] = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "nan", "inf"};
  return std::none_of(std::begin(kWords), std::end(kWords), [&](const char* w) { return lower == w; });
}

void AppendYamlFlow(const Value& v, std::string& out) {
  switch (v.kind()) {
    case Value::Kind::kFloat: {
      const double d = v.as_float();
      if (std::isnan(d)) {
        out += ".nan";
      } else if (std::isinf(d)) {
        out += d > 0 ? ".inf" : "-.inf";
      } else {
        out += PyFloat(d);
      }
      return;
    }
    case Value::Kind::kList: {
      out += "[";
      bool first = true;
      for (const Value& e : v.as_list()) {
        if (!first) out += ", ";
        first = false;
        AppendYamlFlow(e, out);
      }
      out += "]";
      return;
    }
    case Value::Kind::kRow: {
      out += "{";
      bool first = true;
      for (const Field& f : v.as_row().fields()) {
        if (!first) out += ", ";
        first = false;
        if (PlainString(f.name, true)) {
          out += f.name;
        } else {
          AppendPyJsonString(f.name, out);
        }
        out += ": ";
        AppendYamlFlow(f.value, out);
      }
      out += "}";
      return;
    }
    case Value::Kind::kString:
      if (PlainString(v.as_string(), false)) {
        out += v.as_string();
      } else {
        AppendPyJsonString(v.as_string(), out);  // a JSON string is a YAML double-quoted scalar
      }
      return;
    default: AppendPyJson(v, out);  // null, bools and ints are YAML as JSON writes them
  }
}

}  // namespace

namespace pipeline_internal {

std::size_t FlowEnd(const std::string& text, std::size_t begin) {
  int depth = 0;
  for (std::size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) if (text[i] == '\\') ++i;
    } else if (c == '\'') {
      for (++i; i < text.size(); ++i) {
        if (text[i] == '\'' && i + 1 < text.size() && text[i + 1] == '\'') { ++i; continue; }
        if (text[i] == '\'') break;
      }
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth == 0) return i + 1;
    } else if (c == '#' && i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) {
      while (i < text.size() && text[i] != '\n') ++i;
    }
  }
  return text.size();
}

std::size_t BlockEnd(const std::string& text, std::size_t begin, int column) {
  std::size_t end = text.find('\n', begin);
  if (end == std::string::npos) return text.size();
  for (std::size_t line = end + 1; line < text.size();) {
    std::size_t next = text.find('\n', line);
    if (next == std::string::npos) next = text.size();
    std::size_t first = line;
    while (first < next && text[first] == ' ') ++first;
    const bool blank = first == next || text[first] == '#' || text[first] == '\r';
    const int indent = static_cast<int>(first - line);
    if (!blank) {
      const bool item = text[first] == '-' && (first + 1 == next || text[first + 1] == ' ' || text[first + 1] == '\r');
      if (indent < column || (indent == column && !item)) break;
      end = next;
    }
    line = next + 1;
  }
  return end;
}

}  // namespace pipeline_internal

using pipeline_internal::BlockEnd;
using pipeline_internal::FlowEnd;

std::string PyJsonDumps(const Value& value) {
  std::string out;
  AppendPyJson(value, out);
  return out;
}

std::string YamlFlow(const Value& value) {
  std::string out;
  AppendYamlFlow(value, out);
  return out;
}

namespace {

// Whether the `elements` value starts right after its key: only `:`, blanks and comments between
// (an alias's mark is its anchor's, elsewhere in the file).
bool WrittenInPlace(const std::string& text, const TestRows& e) {
  std::size_t i = e.elements_key;
  if (i >= e.elements_offset || e.elements_offset >= text.size()) return false;
  i += (text[i] == '"' || text[i] == '\'') ? std::string("\"elements\"").size() : std::string("elements").size();
  while (i < e.elements_offset && (text[i] == ' ' || text[i] == '\t')) ++i;  // `elements :`
  if (i >= e.elements_offset || text[i] != ':') return false;
  for (++i; i < e.elements_offset; ++i) {
    if (text[i] == '#') {
      while (i < e.elements_offset && text[i] != '\n') ++i;
    } else if (!std::isspace(static_cast<unsigned char>(text[i]))) {
      return false;
    }
  }
  const char c = text[e.elements_offset];
  return c == '[' || c == '-';
}

}  // namespace

TestFixes ApplyTestFixes(const std::string& text, const std::vector<PipelineTestResult>& results) {
  TestFixes fixes;
  struct Edit {
    std::size_t begin, end;
    std::string with;
  };
  std::vector<Edit> edits;
  for (const PipelineTestResult& r : results) {
    for (const ExpectationResult& c : r.checks) {
      if (c.passed || c.expected == nullptr) continue;
      const TestRows& e = *c.expected;
      std::vector<std::pair<std::string, const Value*>> rows;
      for (const Value& v : c.actual) rows.emplace_back(PyJsonDumps(v), &v);
      std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      const std::size_t begin = e.elements_offset;
      if (!WrittenInPlace(text, e)) {
        fixes.skipped.push_back(fmt::format("{} (line {})", e.name, e.line));
        continue;
      }
      std::string with;
      std::size_t end;
      if (e.elements_flow || text[begin] == '[') {
        end = FlowEnd(text, begin);
        with = "[";
        for (std::size_t k = 0; k < rows.size(); ++k) with += (k ? ", " : "") + YamlFlow(*rows[k].second);
        with += "]";
      } else {
        end = BlockEnd(text, begin, e.elements_column);
        if (rows.empty()) with = "[]";
        const std::string newline = text.find("\r\n") != std::string::npos ? "\r\n" : "\n";  // the file's own
        const std::string indent = newline + std::string(static_cast<std::size_t>(e.elements_column), ' ');
        for (std::size_t k = 0; k < rows.size(); ++k) with += (k ? indent : "") + "- " + YamlFlow(*rows[k].second);
      }
      edits.push_back(Edit{begin, end, std::move(with)});
    }
  }
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin > b.begin; });
  fixes.text = text;
  std::size_t last = std::string::npos;
  for (const Edit& e : edits) {
    if (e.end > last) continue;  // (overlaps cannot happen for distinct expectations; never corrupt the text)
    fixes.text.replace(e.begin, e.end - e.begin, e.with);
    last = e.begin;
    ++fixes.fixed;
  }
  return fixes;
}

}  // namespace dfw
