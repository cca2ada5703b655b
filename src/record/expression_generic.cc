// Beam's "generic" expression language (no `language:`): a field name, a literal, or one
// comparison `atomic OP atomic` (beam-yaml.md §6). Compiled to the same Program the Python
// evaluator runs, so comparisons follow Python semantics. All six operators are accepted; Beam
// itself splits with the greedy regex (.*)([<>=!]+)(.*) and so only accepts < and > without a
// language (`a == 1` needs `language: python` on Dataflow).
#include <cctype>
#include <string>

#include "dfw/common/strings.h"
#include "record/expression_ast.h"

// Nodes are built with designated initializers that leave the other members at their defaults;
// GCC 12 warns about exactly that, clang and newer GCC do not.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace dfw::expr {
namespace {

Status Invalid(std::string_view source) {
  return InvalidArgument("Missing language specification, unknown input fields, or invalid generic expression: " +
                         std::string(source) + ". See https://beam.apache.org/documentation/sdks/yaml-udf/#generic");
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Adds the node for an atomic value (field name or literal); -1 when `s` is not one.
int32_t AddAtomic(std::string_view s, Program& p) {
  Node n;
  n.column = 1;
  std::string_view body = !s.empty() && s[0] == '-' ? s.substr(1) : s;
  std::size_t dot = body.find('.');
  if (IsIdentifier(s)) {
    n.kind = NodeKind::kName;
    n.name = std::string(s);
    bool seen = false;
    for (const auto& f : p.fields) seen = seen || f == n.name;
    if (!seen) p.fields.push_back(n.name);
  } else if (AllDigits(body)) {  // an int strictly inside (-2^31, 2^31), as Beam requires
    if (body.size() > 10) return -1;
    int64_t v = std::stoll(std::string(s));
    if (v <= -(int64_t{1} << 31) || v >= (int64_t{1} << 31)) return -1;
    n.value = Value::Int(v);
  } else if (dot != std::string_view::npos && AllDigits(body.substr(0, dot)) &&
             (dot + 1 == body.size() || AllDigits(body.substr(dot + 1)))) {  // -?\d+\.\d*
    auto d = ParseDouble(std::string(s) + (dot + 1 == body.size() ? "0" : ""));
    if (!d) return -1;
    n.value = Value::Float(*d);
  } else if (s.size() >= 2 && s.front() == '"' && s.back() == '"' &&
             s.substr(1, s.size() - 2).find_first_of("\"\\") == std::string_view::npos) {
    n.value = Value::String(std::string(s.substr(1, s.size() - 2)));
  } else {
    return -1;
  }
  p.nodes.push_back(std::move(n));
  return static_cast<int32_t>(p.nodes.size() - 1);
}

}  // namespace

Result<Program> ParseGeneric(std::string_view source) {
  Program p;
  p.generic = true;
  p.source = std::string(source);
  std::string_view s = Trim(source);
  if (int32_t atom = AddAtomic(s, p); atom >= 0) {
    p.root = atom;
    return p;
  }
  // The operator is the first run of <>=! outside a double-quoted string.
  std::size_t i = 0;
  bool quoted = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '"') quoted = !quoted;
    if (!quoted && std::string_view("<>=!").find(s[i]) != std::string_view::npos) break;
  }
  std::size_t j = i;
  while (j < s.size() && std::string_view("<>=!").find(s[j]) != std::string_view::npos) ++j;
  static const std::pair<std::string_view, Op> kOps[] = {{"==", Op::kEq}, {"!=", Op::kNe}, {"<", Op::kLt},
                                                          {"<=", Op::kLe}, {">", Op::kGt}, {">=", Op::kGe}};
  std::string_view op_text = s.substr(i, j - i);
  for (const auto& [text, op] : kOps) {
    if (op_text != text) continue;
    int32_t left = AddAtomic(Trim(s.substr(0, i)), p);
    int32_t right = left < 0 ? -1 : AddAtomic(Trim(s.substr(j)), p);
    if (right < 0) break;
    Node cmp{.kind = NodeKind::kCompare, .column = static_cast<int>(i + 1), .kids = {left, right}, .ops = {op}};
    p.nodes.push_back(std::move(cmp));
    p.root = static_cast<int32_t>(p.nodes.size() - 1);
    return p;
  }
  return Invalid(source);
}

}  // namespace dfw::expr
