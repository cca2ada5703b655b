#include "dfw/record/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace dfw {

Value Value::FromList(List items) {
  return Value(Storage(std::in_place_index<5>, std::make_shared<const List>(std::move(items))));
}

Value Value::FromRow(Row row) {
  return Value(Storage(std::in_place_index<6>, std::make_shared<const Row>(std::move(row))));
}

std::string_view Value::TypeName() const {
  switch (kind()) {
    case Kind::kNull: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kRow: return "row";
  }
  return "?";
}

bool Value::operator==(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (is_int() && o.is_int()) return as_int() == o.as_int();
    return *AsNumber() == *o.AsNumber();
  }
  if (kind() != o.kind()) return false;
  switch (kind()) {
    case Kind::kNull: return true;
    case Kind::kBool: return as_bool() == o.as_bool();
    case Kind::kString: return as_string() == o.as_string();
    case Kind::kList: {
      const List& a = as_list();
      const List& b = o.as_list();
      if (&a == &b) return true;
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) return false;
      return true;
    }
    case Kind::kRow: return &as_row() == &o.as_row() || as_row() == o.as_row();
    default: return false;
  }
}

namespace {

void AppendDouble(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);  // shortest round-trip form
  std::string_view s(buf, p - buf);
  out += s;
  // Keep floats recognisable as floats in JSON ("1.0", not "1").
  if (s.find_first_of(".eEn") == std::string_view::npos) out += ".0";
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
std::size_t Utf8SeqLen(std::string_view s, std::size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    // Fast path: copy a run of plain printable ASCII.
    std::size_t j = i;
    while (j < s.size()) {
      auto c = static_cast<unsigned char>(s[j]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++j;
    }
    out.append(s.data() + i, j - i);
    i = j;
    if (i >= s.size()) break;
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      std::size_t n = Utf8SeqLen(s, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD
        ++i;
      } else {
        out.append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
    }
    ++i;
  }
  out += '"';
}

void Value::AppendJson(std::string& out) const {
  switch (kind()) {
    case Kind::kNull: out += "null"; return;
    case Kind::kBool: out += as_bool() ? "true" : "false"; return;
    case Kind::kInt: {
      char buf[24];
      auto [p, ec] = std::to_chars(buf, buf + sizeof buf, as_int());
      out.append(buf, p - buf);
      return;
    }
    case Kind::kFloat: AppendDouble(out, as_float()); return;
    case Kind::kString: AppendJsonString(out, as_string()); return;
    case Kind::kList: {
      out += '[';
      bool first = true;
      for (const Value& v : as_list()) {
        if (!first) out += ',';
        first = false;
        v.AppendJson(out);
      }
      out += ']';
      return;
    }
    case Kind::kRow: as_row().AppendJson(out); return;
  }
}

std::string Value::ToJson() const {
  std::string s;
  AppendJson(s);
  return s;
}

const Value* Row::Find(std::string_view name) const {
  for (const Field& f : fields_)
    if (f.name == name) return &f.value;
  return nullptr;
}

Value* Row::FindMutable(std::string_view name) {
  for (Field& f : fields_)
    if (f.name == name) return &f.value;
  return nullptr;
}

void Row::Set(std::string_view name, Value v) {
  if (Value* existing = FindMutable(name)) {
    *existing = std::move(v);
    return;
  }
  fields_.push_back(Field{std::string(name), std::move(v)});
}

bool Row::Erase(std::string_view name) {
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    if (it->name == name) {
      fields_.erase(it);
      return true;
    }
  }
  return false;
}

bool Row::operator==(const Row& o) const {
  if (fields_.size() != o.fields_.size()) return false;
  for (const Field& f : fields_) {
    const Value* v = o.Find(f.name);
    if (!v || *v != f.value) return false;
  }
  return true;
}

void Row::AppendJson(std::string& out) const {
  out += '{';
  bool first = true;
  for (const Field& f : fields_) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, f.name);
    out += ':';
    f.value.AppendJson(out);
  }
  out += '}';
}

std::string Row::ToJson() const {
  std::string s;
  AppendJson(s);
  return s;
}

}  // namespace dfw
