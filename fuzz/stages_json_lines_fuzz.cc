// Arbitrary bytes as JSON Lines through ReadFromJson's parser, twice: the chunk path (one
// parse_many pass, falling back line by line at the first line it cannot vouch for) and every line
// alone. The two must give the same rows and the same error rows; any difference aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "stages/json_lines.h"

namespace {

std::vector<std::string> Render(dfw::StageOutput& out) {
  std::vector<std::string> s;
  for (const dfw::Row& r : out.main()) s.push_back("row " + dfw::Value::FromRow(r).ToJson());
  for (const dfw::Row& r : out.errors()) s.push_back("error " + dfw::Value::FromRow(r).ToJson());
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dfw::stages_internal::JsonLinesParser;
  using dfw::stages_internal::NumberedLine;
  std::string buffer(reinterpret_cast<const char*>(data), size);
  buffer.append(JsonLinesParser::Padding(), '\0');
  std::vector<NumberedLine> lines;
  dfw::stages_internal::LineCursor cursor(std::string_view(buffer.data(), size), 1);
  std::string_view line;
  while (cursor.Next(line)) {
    if (!line.empty()) lines.push_back({line, cursor.line_number()});
  }
  dfw::StageConfig c;
  c.name = c.type = "ReadFromJson";
  c.error_output = "errors";
  dfw::StageOutput chunk(&c), alone(&c);
  JsonLinesParser a("in.jsonl"), b("in.jsonl");
  if (!a.ParseLines(lines, chunk).ok()) std::abort();
  for (const NumberedLine& l : lines) {
    if (!b.ParseLine(l.text, l.number, alone).ok()) std::abort();
  }
  if (Render(chunk) != Render(alone)) std::abort();
  return 0;
}
