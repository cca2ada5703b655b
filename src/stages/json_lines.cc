#include "json_lines.h"

// simdjson 3.0's inline DOM accessors trip g++ 12's -Wdangling-pointer / -Wmaybe-uninitialized
// false positives inside the library header; silence them for that header only.
// (clang has neither warning and would warn about the unknown names.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <simdjson.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <fmt/format.h>

namespace dfw::stages_internal {
namespace {

// Chunks shorter than this go line by line (parse_many's set-up is not worth it), as do chunks
// longer than kMaxChunkBytes: the parser's buffers grow with the window it scans at once (about
// 14 bytes a byte of window), and lines that long amortise a per-line set-up anyway.
constexpr std::size_t kMinChunkLines = 4;
constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 20;
constexpr std::size_t kMinWindowBytes = std::size_t{64} << 10;

// Fields reserved beyond the object's own: downstream stages typically append a few (MapToFields
// with append, RunInference's inference tag), and growing then would reallocate and move every field.
constexpr std::size_t kRowHeadroom = 4;

void AssignJsonValue(Value& out, simdjson::dom::element e);

Row JsonObjectToRow(simdjson::dom::object obj) {
  Row row;
  row.Reserve(obj.size() + kRowHeadroom);
  for (auto kv : obj) {
    const std::string_view key = kv.key;
    // A repeated key keeps the last value; otherwise the field is built in place in the row's
    // vector (no temporary Field to move: each key and string value is copied once).
    Value* value = row.FindMutable(key);
    if (value == nullptr) value = &row.AppendNull(key);
    AssignJsonValue(*value, kv.value);
  }
  return row;
}

void AssignJsonValue(Value& out, simdjson::dom::element e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::OBJECT: out = Value::FromRow(JsonObjectToRow(e.get_object().value_unsafe())); return;
    case element_type::ARRAY: {
      List items;
      simdjson::dom::array array = e.get_array().value_unsafe();
      items.reserve(array.size());  // size() saturates at 2^24 - 1: only a hint
      for (simdjson::dom::element v : array) AssignJsonValue(items.emplace_back(), v);
      out = Value::FromList(std::move(items));
      return;
    }
    case element_type::INT64: out.AssignInt(e.get_int64().value_unsafe()); return;
    case element_type::UINT64: out.AssignFloat(static_cast<double>(e.get_uint64().value_unsafe())); return;
    case element_type::DOUBLE: out.AssignFloat(e.get_double().value_unsafe()); return;
    case element_type::STRING: out.AssignString(e.get_string().value_unsafe()); return;
    case element_type::BOOL: out.AssignBool(e.get_bool().value_unsafe()); return;
    case element_type::NULL_VALUE: out = Value(); return;
  }
  out = Value();
}

bool IsJsonBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// `line` without leading and trailing JSON whitespace (a view into the same bytes).
std::string_view TrimJsonBlanks(std::string_view line) {
  std::size_t b = 0, e = line.size();
  while (b < e && IsJsonBlank(line[b])) ++b;
  while (e > b && IsJsonBlank(line[e - 1])) --e;
  return line.substr(b, e - b);
}

}  // namespace

struct JsonLinesParser::Impl {
  simdjson::dom::parser parser;  // not thread-safe: one per reader, readers are never shared
};

JsonLinesParser::JsonLinesParser(std::string path) : path_(std::move(path)), impl_(std::make_unique<Impl>()) {}
JsonLinesParser::~JsonLinesParser() = default;

std::size_t JsonLinesParser::Padding() { return simdjson::SIMDJSON_PADDING; }

Status JsonLinesParser::ParseLine(std::string_view line, int64_t line_no, StageOutput& out) {
  simdjson::dom::element doc;
  auto error = impl_->parser.parse(line.data(), line.size(), false).get(doc);
  if (error == simdjson::UTF8_ERROR) {
    return out.FailRaw(std::string(line), fmt::format("line {} of '{}': not valid UTF-8", line_no, path_));
  }
  if (error) {
    return out.FailRaw(std::string(line),
                       fmt::format("line {} of '{}': malformed JSON: {}", line_no, path_, simdjson::error_message(error)));
  }
  if (!doc.is_object()) {
    return out.FailRaw(std::string(line), fmt::format("line {} of '{}': expected a JSON object, got {}", line_no, path_,
                                                      doc.is_array() ? "an array" : "a scalar"));
  }
  out.Emit(JsonObjectToRow(doc.get_object().value_unsafe()));
  return Status::OK();
}

Status JsonLinesParser::ParseLines(const std::vector<NumberedLine>& lines, StageOutput& out) {
  out.main().reserve(out.main().size() + lines.size());  // a row per line, nearly always
  std::size_t done = 0;
  if (lines.size() >= kMinChunkLines) {
    const char* begin = lines.front().text.data();
    const char* end = lines.back().text.data() + lines.back().text.size();
    const auto len = static_cast<std::size_t>(end - begin);
    simdjson::dom::document_stream stream;
    // One window over the whole chunk (rounded up to 4 KiB so the parser's buffers are reused).
    const std::size_t window = std::max(kMinWindowBytes, (len + 4095) / 4096 * 4096);
    if (len <= kMaxChunkBytes && !impl_->parser.parse_many(begin, len, window).get(stream)) {
      for (auto it = stream.begin(); it != stream.end() && done < lines.size(); ++it) {
        simdjson::dom::element doc;
        if ((*it).get(doc) || !doc.is_object()) break;
        const std::string_view text = TrimJsonBlanks(lines[done].text);
        const std::string_view source = it.source();
        if (source.data() != text.data() || source.size() != text.size()) break;
        out.Emit(JsonObjectToRow(doc.get_object().value_unsafe()));
        ++done;
      }
    }
  }
  lines_in_one_pass_ += static_cast<int64_t>(done);
  for (; done < lines.size(); ++done) RETURN_IF_ERROR(ParseLine(lines[done].text, lines[done].number, out));
  return Status::OK();
}

}  // namespace dfw::stages_internal
