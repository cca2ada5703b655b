// SplitFiles cuts files into byte ranges at record boundaries and numbers their first lines. The
// line splitter reads a 64 KiB window at each cut point and counts each range's lines in 1 MiB
// blocks, on several threads; these tests hold it to the obvious byte-by-byte definition on files
// that cross both, lines longer than a window among them, with every kind of line ending.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stages/file_source.h"

namespace dfw::stages_internal {
namespace {

namespace fs = std::filesystem;

// The definition: a range ends just after the first '\n' at which it holds >= target bytes, while
// the rest of the file from the range's start is over target * 5/4 (the slack: no small tails).
std::vector<SourceSplit> ReferenceSplit(const std::string& path, const std::string& data, int64_t target) {
  std::vector<SourceSplit> out;
  SourceSplit cur{path, 0, 0, 1};
  int64_t line = 1;
  const auto size = static_cast<int64_t>(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (size - cur.begin <= target + target / 4) break;  // the rest is within the slack: no more cuts
    if (data[i] != '\n') continue;
    ++line;
    auto end = static_cast<int64_t>(i) + 1;
    if (end - cur.begin >= target) {
      cur.end = end;
      out.push_back(cur);
      cur = SourceSplit{path, end, end, line};
    }
  }
  if (static_cast<int64_t>(data.size()) > cur.begin) {
    cur.end = static_cast<int64_t>(data.size());
    out.push_back(cur);
  }
  return out;
}

class SplitFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dfw-split-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& data) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  fs::path dir_;
};

// Lines of random length 0..max_len (empty lines and CRLF included), optionally without a final newline.
std::string RandomLines(std::mt19937& rng, std::size_t total_bytes, int max_len, bool trailing_newline) {
  std::string s;
  std::uniform_int_distribution<int> len(0, max_len), kind(0, 9);
  while (s.size() < total_bytes) {
    s.append(static_cast<std::size_t>(len(rng)), 'x');
    s += kind(rng) == 0 ? "\r\n" : "\n";
  }
  if (!trailing_newline) s += "tail-without-newline";
  return s;
}

void ExpectSameSplits(const std::vector<SourceSplit>& got, const std::vector<SourceSplit>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].path, want[i].path) << what << " range " << i;
    EXPECT_EQ(got[i].begin, want[i].begin) << what << " range " << i;
    EXPECT_EQ(got[i].end, want[i].end) << what << " range " << i;
    EXPECT_EQ(got[i].first_line, want[i].first_line) << what << " range " << i;
  }
}

TEST_F(SplitFilesTest, LineSplitsMatchTheByteByByteDefinition) {
  std::mt19937 rng(7);
  struct Case {
    std::size_t bytes;
    int max_len;
    bool trailing_newline;
  };
  // 3 MiB files cross the counter's 1 MiB blocks several times; lines up to 3000 bytes make cut
  // points fall inside long lines and across block edges, lines up to 200,000 bytes make the
  // search for a cut's newline read on past its 64 KiB window. A file of nothing but line ends
  // fills the newline counter's 8-bit lanes to their 255-step limit.
  const Case cases[] = {{3u << 20, 200, true},   {3u << 20, 3000, false}, {3u << 20, 200000, true},
                        {5000, 40, true},        {1, 0, true},            {2u << 20, 0, true}};
  // 900,000 leaves a 3 MiB file a last stretch just over the slack (cut again); 2.5 MiB one within
  // it (one range, where a cut without the slack would leave a 0.5 MiB tail).
  const int64_t targets[] = {1, 7, 100, 4096, 900000, 1 << 20, 5 << 19, 3 << 20, int64_t{1} << 40};
  int file = 0;
  for (const Case& c : cases) {
    std::string data = RandomLines(rng, c.bytes, c.max_len, c.trailing_newline);
    std::string path = Write("f" + std::to_string(file++) + ".jsonl", data);
    for (int64_t target : targets) {
      if (target == 1 && data.size() > 100000) continue;  // one range per line: slow, adds nothing
      Result<std::vector<SourceSplit>> got = SplitFiles({path}, target, /*csv_quotes=*/false);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ExpectSameSplits(*got, ReferenceSplit(path, data, target),
                       "file of " + std::to_string(data.size()) + " bytes, target " + std::to_string(target));
    }
  }
}

// Each range's newlines, whatever the number of threads and however the ranges fall on the
// counter's 1 MiB blocks: ranges of a few bytes, of about a block, and one range over several.
TEST_F(SplitFilesTest, RangeNewlinesAreTheSameForAnyNumberOfThreads) {
  std::mt19937 rng(11);
  const std::string data = RandomLines(rng, 3u << 20, 300, true);
  const std::string path = Write("count.jsonl", data);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (int64_t target : {int64_t{5}, int64_t{4096}, int64_t{1} << 20, int64_t{5} << 19}) {
    std::vector<int64_t> ends, want;
    for (const SourceSplit& r : ReferenceSplit(path, data, target)) {
      ends.push_back(r.end);
      want.push_back(std::count(data.begin() + r.begin, data.begin() + r.end, '\n'));
    }
    for (int threads : {1, 2, 3, 7}) {
      Result<std::vector<int64_t>> got = CountRangeNewlines(fd, path, ends, threads, /*min_run_bytes=*/1);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(*got == want) << "target " << target << ", " << threads << " threads";
    }
  }
  // A file shorter than the ranges say (cut, then truncated) is an error naming it.
  Result<std::vector<int64_t>> past = CountRangeNewlines(fd, path, {static_cast<int64_t>(data.size()) + 10}, 1, 1);
  EXPECT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find(path), std::string::npos) << past.status().ToString();
  ::close(fd);
}

TEST_F(SplitFilesTest, RangesTileEveryFileAndEmptyFilesGiveNone) {
  std::string a = Write("a.txt", "one\ntwo\nthree\n");
  std::string empty = Write("b.txt", "");
  std::string c = Write("c.txt", "last line, no newline");
  Result<std::vector<SourceSplit>> got = SplitFiles({a, empty, c}, 5, /*csv_quotes=*/false);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].path, a);
  EXPECT_EQ((*got)[0].begin, 0);
  EXPECT_EQ((*got)[0].end, 8);  // "one\ntwo\n": the first newline at which >= 5 bytes are held
  EXPECT_EQ((*got)[1].begin, 8);
  EXPECT_EQ((*got)[1].end, 14);
  EXPECT_EQ((*got)[1].first_line, 3);
  EXPECT_EQ((*got)[2].path, c);
  EXPECT_EQ((*got)[2].end, 21);
}

TEST_F(SplitFilesTest, CsvNeverCutsInsideAQuotedField) {
  std::string data = "a,b\n\"x\ny\",1\n2,3\n";
  std::string path = Write("q.csv", data);
  Result<std::vector<SourceSplit>> got = SplitFiles({path}, 1, /*csv_quotes=*/true);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[1].begin, 4);
  EXPECT_EQ((*got)[1].end, 12);  // the quoted newline at byte 6 is not a boundary
  EXPECT_EQ((*got)[2].first_line, 4);
}

TEST_F(SplitFilesTest, MissingFileIsAnIoErrorNamingIt) {
  Result<std::vector<SourceSplit>> got = SplitFiles({(dir_ / "nope.jsonl").string()}, 100, false);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("nope.jsonl"), std::string::npos) << got.status().message();
}

}  // namespace
}  // namespace dfw::stages_internal
