// Dynamic work rebalancing at the reader: SplitReader::Progress and TrySplit for every source type.
// The rule under test: whatever moment a split lands, the primary (what the reader still reads) and
// the residual (read by a fresh reader) together hold every record of the range exactly once, in
// order, with the residual's line numbers right, and never a cut inside a record.
#include <gmock/gmock.h>

#include <thread>

#include "stages_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// Reads a split to the end in batches of `batch` rows, calling `between` after each batch.
std::vector<std::string> Drain(SplitReader& r, const StageConfig& c, std::vector<std::string>* errors = nullptr,
                               std::size_t batch = 5, const std::function<void()>& between = {}) {
  std::vector<std::string> rows;
  for (;;) {
    StageOutput out(&c);
    auto more = r.Next(out, batch);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    for (const Row& row : out.main()) rows.push_back(row.ToJson());
    if (errors) {
      for (const Row& row : out.errors()) errors->push_back(row.ToJson());
    }
    if (!more.ok() || !*more) return rows;
    if (between) between();
  }
}

struct SourceCase {
  const char* type;
  std::string input;
};

std::string JsonLines(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "{\"id\": " + std::to_string(i) + ", \"pad\": \"" + std::string(40, 'x') + "\"}\n";
  return s;
}

std::string CsvWithQuotedNewlines(int n) {
  std::string s = "id,text\n";
  // Every third record has a quoted field spanning two lines: a newline search would cut it.
  for (int i = 0; i < n; ++i) {
    s += std::to_string(i) + (i % 3 == 0 ? ",\"two\nlines " : ",\"one line ") + std::string(30, 'y') + "\"\n";
  }
  return s;
}

class SplitEverywhere : public ::testing::TestWithParam<SourceCase> {};

// Splits after every possible number of batches read, with several fractions: primary + residual
// must equal the unsplit read.
TEST_P(SplitEverywhere, PrimaryPlusResidualIsTheWholeRangeExactlyOnce) {
  TempDir dir;
  dir.Write("in.data", GetParam().input);
  StageConfig c = testing::MakeConfig(GetParam().type, "{path: '" + (dir / "in.data") + "'}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  auto splits = (*stage)->Split(1 << 30);
  ASSERT_TRUE(splits.ok());
  ASSERT_EQ(splits->size(), 1u);
  const SourceSplit whole = splits->front();
  auto full_reader = (*stage)->OpenSplit(whole);
  ASSERT_TRUE(full_reader.ok());
  const std::vector<std::string> all = Drain(**full_reader, c);
  ASSERT_GT(all.size(), 100u);
  int splits_made = 0;
  for (double fraction : {0.0, 0.3, 0.5, 0.9}) {
    for (int after = 0; after < 40; after += 3) {
      SCOPED_TRACE("fraction " + std::to_string(fraction) + " after " + std::to_string(after) + " batches");
      auto reader = (*stage)->OpenSplit(whole);
      ASSERT_TRUE(reader.ok());
      std::vector<std::string> got;
      std::optional<SourceSplit> residual;
      int batches = 0;
      auto before = (*reader)->Progress();
      ASSERT_TRUE(before.has_value());
      EXPECT_EQ(before->total, whole.end - whole.begin);
      got = Drain(**reader, c, nullptr, 5, [&] {
        if (++batches == after && !residual) {
          auto p = (*reader)->Progress();
          residual = (*reader)->TrySplit(fraction);
          if (residual) {
            auto q = (*reader)->Progress();
            EXPECT_EQ(q->total, residual->begin - whole.begin);
            EXPECT_GE(residual->begin - whole.begin, p->done) << "cut before what was already read";
            EXPECT_EQ(residual->end, whole.end);
            EXPECT_EQ(residual->path, whole.path);
          }
        }
      });
      if (residual) {
        ++splits_made;
        auto rest = (*stage)->OpenSplit(*residual);
        ASSERT_TRUE(rest.ok());
        auto tail = Drain(**rest, c);
        EXPECT_FALSE(tail.empty());
        got.insert(got.end(), tail.begin(), tail.end());
      }
      EXPECT_EQ(got, all);
    }
  }
  EXPECT_GT(splits_made, 20);
}

INSTANTIATE_TEST_SUITE_P(Sources, SplitEverywhere,
                         ::testing::Values(SourceCase{"ReadFromJson", JsonLines(600)},
                                           SourceCase{"ReadFromText", JsonLines(600)},
                                           SourceCase{"ReadFromCsv", CsvWithQuotedNewlines(600)}),
                         [](const auto& info) { return std::string(info.param.type); });

TEST(SplitReader, ResidualLineNumbersMatchTheFile) {
  // Bad records after the cut must be reported at their real line numbers.
  std::string input;
  for (int i = 0; i < 400; ++i) {
    input += i == 350 ? "{not json\n" : "{\"i\": " + std::to_string(i) + ", \"pad\": \"" + std::string(40, 'p') + "\"}\n";
  }
  TempDir dir;
  dir.Write("in.jsonl", input);
  StageConfig c = testing::MakeConfig("ReadFromJson", "{path: '" + (dir / "in.jsonl") + "'}", "errors");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto whole = (*stage)->Split(1 << 30);
  ASSERT_TRUE(whole.ok());
  auto reader = (*stage)->OpenSplit(whole->front());
  ASSERT_TRUE(reader.ok());
  StageOutput out(&c);
  ASSERT_TRUE((*reader)->Next(out, 10).ok());
  auto residual = (*reader)->TrySplit(0.5);
  ASSERT_TRUE(residual.has_value());
  EXPECT_LT(residual->first_line, 351);
  auto rest = (*stage)->OpenSplit(*residual);
  ASSERT_TRUE(rest.ok());
  std::vector<std::string> errors;
  Drain(**rest, c, &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("line 351 of"));
}

TEST(SplitReader, RefusesWhenNoRecordBoundaryIsLeft) {
  TempDir dir;
  dir.Write("huge.txt", std::string(100000, 'h') + "\n");  // one huge line: nowhere to cut
  dir.Write("small.txt", "a\nb\nc\n");                     // too little to be worth a bundle
  for (const char* name : {"huge.txt", "small.txt"}) {
    SCOPED_TRACE(name);
    StageConfig c = testing::MakeConfig("ReadFromText", "{path: '" + (dir / name) + "'}");
    auto stage = testing::MakeStage(c);
    ASSERT_TRUE(stage.ok());
    auto whole = (*stage)->Split(1 << 30);
    ASSERT_TRUE(whole.ok());
    auto reader = (*stage)->OpenSplit(whole->front());
    ASSERT_TRUE(reader.ok());
    EXPECT_FALSE((*reader)->TrySplit(0.5).has_value());
    EXPECT_FALSE((*reader)->TrySplit(0.0).has_value());
    EXPECT_EQ(Drain(**reader, c).size(), std::string(name) == "huge.txt" ? 1u : 3u);
  }
}

TEST(SplitReader, RefusesAtTheEndOfItsRange) {
  TempDir dir;
  dir.Write("in.jsonl", JsonLines(300));
  StageConfig c = testing::MakeConfig("ReadFromJson", "{path: '" + (dir / "in.jsonl") + "'}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto whole = (*stage)->Split(1 << 30);
  ASSERT_TRUE(whole.ok());
  auto reader = (*stage)->OpenSplit(whole->front());
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(Drain(**reader, c, nullptr, 1000).size(), 300u);
  EXPECT_FALSE((*reader)->TrySplit(0.0).has_value());
  auto p = (*reader)->Progress();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->done, p->total);
}

TEST(SplitReader, CreateSplitsByElement) {
  std::string elements = "[";
  for (int i = 0; i < 500; ++i) elements += (i ? ", " : "") + std::string("{n: ") + std::to_string(i) + "}";
  StageConfig c = testing::MakeConfig("Create", "{elements: " + elements + "]}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  SourceSplit whole{"", 0, 500, 1};
  auto reader = (*stage)->OpenSplit(whole);
  ASSERT_TRUE(reader.ok());
  StageOutput out(&c);
  ASSERT_TRUE((*reader)->Next(out, 100).ok());
  auto residual = (*reader)->TrySplit(0.5);
  ASSERT_TRUE(residual.has_value());
  EXPECT_EQ(residual->begin, 300);
  EXPECT_EQ(residual->end, 500);
  EXPECT_EQ(Drain(**reader, c, nullptr, 1000).size(), 200u);  // 100..300
  auto rest = (*stage)->OpenSplit(*residual);
  ASSERT_TRUE(rest.ok());
  auto tail = Drain(**rest, c, nullptr, 1000);
  ASSERT_EQ(tail.size(), 200u);
  EXPECT_EQ(tail.front(), R"({"n":300})");
  // Fewer than kMinSplitElements left: refused.
  auto small = (*stage)->OpenSplit(SourceSplit{"", 0, 10, 1});
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE((*small)->TrySplit(0.5).has_value());
}

TEST(SplitReader, SplitFromAnotherThreadWhileReading) {
  // The reader is driven on one thread and split from another, many times: every record is read
  // exactly once across the primary and the residuals (run under TSan-free ASan in CI).
  TempDir dir;
  dir.Write("in.jsonl", JsonLines(5000));
  StageConfig c = testing::MakeConfig("ReadFromJson", "{path: '" + (dir / "in.jsonl") + "'}");
  auto stage = testing::MakeStage(c);
  ASSERT_TRUE(stage.ok());
  auto whole = (*stage)->Split(1 << 30);
  ASSERT_TRUE(whole.ok());
  for (int trial = 0; trial < 5; ++trial) {
    auto reader = (*stage)->OpenSplit(whole->front());
    ASSERT_TRUE(reader.ok());
    std::atomic<bool> finished{false};
    std::vector<SourceSplit> residuals;
    std::thread splitter([&] {
      while (!finished.load()) {
        if (auto r = (*reader)->TrySplit(0.9)) residuals.push_back(*r);
        std::this_thread::yield();
      }
    });
    auto got = Drain(**reader, c, nullptr, 3);
    finished = true;
    splitter.join();
    for (const SourceSplit& r : residuals) {
      auto rest = (*stage)->OpenSplit(r);
      ASSERT_TRUE(rest.ok());
      auto tail = Drain(**rest, c, nullptr, 1000);
      got.insert(got.end(), tail.begin(), tail.end());
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end()) << "a record was read twice";
    EXPECT_EQ(got.size(), 5000u);
  }
}

}  // namespace
}  // namespace dfw
