// ReadFromJson parses a chunk of lines in one pass (JsonLinesParser::ParseLines) and must give each
// line exactly the row or the error row parsing that line alone gives (ParseLine). These tests hold
// the chunk path to the line path on the lines where the two could part: damaged lines, two
// documents on one line, one document over two lines, blank lines, scalars, invalid UTF-8.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/json_lines.h"

namespace dfw::stages_internal {
namespace {

struct Outcome {
  std::vector<std::string> rows;    // each row as JSON
  std::vector<std::string> errors;  // each error row as JSON
  int64_t in_one_pass = 0;          // lines the chunk path took from its one pass
};

StageConfig ErrorHandlingConfig() {
  StageConfig c;
  c.name = c.type = "ReadFromJson";
  c.error_output = "errors";
  return c;
}

// `text` cut into lines as the reader cuts them (empty lines skipped), held in a buffer with the
// padding simdjson reads past the end.
struct Lines {
  std::string buffer;
  std::vector<NumberedLine> lines;
  explicit Lines(const std::string& text) : buffer(text) {
    buffer.append(JsonLinesParser::Padding(), '\0');
    LineCursor cursor(std::string_view(buffer.data(), text.size()), 1);
    std::string_view line;
    while (cursor.Next(line)) {
      if (!line.empty()) lines.push_back({line, cursor.line_number()});
    }
  }
};

Outcome Collect(StageOutput& out) {
  Outcome o;
  for (const Row& r : out.main()) o.rows.push_back(Value::FromRow(r).ToJson());
  for (const Row& r : out.errors()) o.errors.push_back(Value::FromRow(r).ToJson());
  return o;
}

// `text` through one parser: the chunk path (ParseLines) or every line alone (ParseLine).
Outcome Parse(const std::string& text, bool chunked) {
  StageConfig c = ErrorHandlingConfig();
  StageOutput out(&c);
  Lines l(text);
  JsonLinesParser parser("in.jsonl");
  if (chunked) {
    EXPECT_TRUE(parser.ParseLines(l.lines, out).ok());
  } else {
    for (const NumberedLine& line : l.lines) EXPECT_TRUE(parser.ParseLine(line.text, line.number, out).ok());
  }
  Outcome o = Collect(out);
  o.in_one_pass = parser.lines_in_one_pass();
  return o;
}
Outcome Chunked(const std::string& text) { return Parse(text, true); }
Outcome OneByOne(const std::string& text) { return Parse(text, false); }

const char* const kGood[] = {
    R"({"id": 1, "name": "a", "price": 1.5})",
    R"(  {"id": 2, "tags": ["x", "y"], "nested": {"k": null}}  )",
    R"({"id": 3, "id": 4})",
    R"({"big": 18446744073709551615, "neg": -9223372036854775808, "e": 1e300})",
    R"({"s": "caf\u00e9 \ud83d\ude00", "t": true, "f": false})",
    "{}",
};

TEST(JsonLines, ChunkOfGoodLinesGivesTheRowsOfEachLine) {
  std::string text;
  for (int round = 0; round < 3; ++round) {
    for (const char* line : kGood) text += std::string(line) + (round == 1 ? "\r\n" : "\n");
  }
  Outcome chunk = Chunked(text);
  Outcome alone = OneByOne(text);
  EXPECT_EQ(chunk.rows.size(), 18u);
  EXPECT_TRUE(chunk.errors.empty());
  EXPECT_EQ(chunk.rows, alone.rows);
  EXPECT_EQ(chunk.rows[2], R"({"id":4})");  // a repeated key keeps the last value
  EXPECT_EQ(chunk.in_one_pass, 18);          // all of them in the one pass
}

TEST(JsonLines, EveryKindOfBadLineGetsTheErrorOfTheLineAlone) {
  const char* const kBad[] = {
      R"({"a": 1} {"b": 2})",  // two documents on one line
      R"({"a": )",             // a document begun here ...
      R"(1})",                 // ... and ended on the next line
      "   ",                   // blanks only
      "42",                    // a scalar
      R"([1, 2])",             // an array
      R"({"a": 1}})",          // trailing garbage
      "{\"a\": \"\xff\"}",     // invalid UTF-8
      R"({"a": tru})",         // malformed
  };
  for (const char* bad : kBad) {
    // The bad line first, in the middle and last, between good ones.
    for (int at = 0; at < 3; ++at) {
      std::string text;
      for (int k = 0; k < 6; ++k) {
        if ((at == 0 && k == 0) || (at == 1 && k == 3) || (at == 2 && k == 5)) text += std::string(bad) + "\n";
        text += std::string(kGood[k % 6]) + "\n";
      }
      Outcome chunk = Chunked(text);
      Outcome alone = OneByOne(text);
      EXPECT_EQ(chunk.rows, alone.rows) << bad;
      EXPECT_EQ(chunk.errors, alone.errors) << bad;
      EXPECT_EQ(chunk.rows.size(), 6u) << bad;
      EXPECT_FALSE(chunk.errors.empty()) << bad;
      // The good lines before the bad one came from the one pass; invalid UTF-8 fails the pass's
      // scan of the whole chunk, so then every line went alone.
      const bool utf8 = std::string(bad).find('\xff') != std::string::npos;
      EXPECT_EQ(chunk.in_one_pass, utf8 || at == 0 ? 0 : at == 1 ? 3 : 5) << bad;
    }
  }
}

TEST(JsonLines, RandomDamageAgreesWithTheLineAlone) {
  std::mt19937 rng(7);
  std::string base;
  for (int k = 0; k < 40; ++k) base += std::string(kGood[k % 6]) + "\n";
  for (int trial = 0; trial < 300; ++trial) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % text.size();
      static const char kBytes[] = "{}[]\",:\n \\a1\xff";
      text[at] = kBytes[rng() % (sizeof kBytes - 1)];
    }
    Outcome chunk = Chunked(text);
    Outcome alone = OneByOne(text);
    ASSERT_EQ(chunk.rows, alone.rows) << text;
    ASSERT_EQ(chunk.errors, alone.errors) << text;
  }
}

}  // namespace
}  // namespace dfw::stages_internal
