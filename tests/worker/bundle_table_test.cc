// The bundle table SDK processes read from job.json instead of re-planning the inputs.
#include "dfw/worker/bundle_table.h"

#include <gtest/gtest.h>

namespace dfw {
namespace {

Bundle Make(int64_t id, int source, std::string path, int64_t begin, int64_t end, int64_t first_line) {
  Bundle b;
  b.id = id;
  b.source = source;
  b.split = SourceSplit{std::move(path), begin, end, first_line};
  return b;
}

TEST(BundleTable, RoundTripsEveryFieldIncludingPathsWithSpacesAndInMemorySources) {
  std::vector<Bundle> in = {Make(0, 0, "/data/in/part 1.jsonl", 0, 4096, 1),
                            Make(1, 0, "/data/in/part 1.jsonl", 4096, 9000, 77), Make(2, 3, "", 0, 5, 1)};
  auto text = EncodeBundleTable(in);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->substr(0, text->find('\n')), "0 0 0 4096 1 /data/in/part 1.jsonl");
  auto out = DecodeBundleTable(*text);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ((*out)[i].id, in[i].id);
    EXPECT_EQ((*out)[i].source, in[i].source);
    EXPECT_EQ((*out)[i].split.path, in[i].split.path);
    EXPECT_EQ((*out)[i].split.begin, in[i].split.begin);
    EXPECT_EQ((*out)[i].split.end, in[i].split.end);
    EXPECT_EQ((*out)[i].split.first_line, in[i].split.first_line);
  }
}

TEST(BundleTable, EmptyTableIsNoBundles) {
  auto out = DecodeBundleTable("");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
}

TEST(BundleTable, PathWithANewlineCannotBeStored) {
  EXPECT_FALSE(EncodeBundleTable({Make(0, 0, "odd\nname.jsonl", 0, 1, 1)}).has_value());
}

struct BadTable {
  const char* text;
  const char* expected;  // in the message
};

void PrintTo(const BadTable& c, std::ostream* os) { *os << c.expected; }

class BundleTableErrors : public ::testing::TestWithParam<BadTable> {};

TEST_P(BundleTableErrors, AreDataLossNamingTheLine) {
  auto out = DecodeBundleTable(GetParam().text);
  ASSERT_FALSE(out.ok()) << GetParam().text;
  EXPECT_EQ(out.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(out.status().message().find(GetParam().expected), std::string::npos) << out.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, BundleTableErrors,
    ::testing::Values(BadTable{"0 0 0 10 1 a\n1 0 10 20 2 a", "line 2: not terminated by a newline"},
                      BadTable{"0 0 0 10 1\n", "line 1: expected '<id> <source> <begin> <end> <first_line> <path>'"},
                      BadTable{"0 0 x 10 1 a\n", "got '0 0 x 10 1 a'"},
                      BadTable{"0 0 0 10 1 a\n1 0 20 10 2 a\n", "line 2: bundle 1 has an impossible range"},
                      BadTable{"0 -1 0 10 1 a\n", "source -1"}, BadTable{"0 0 0 10 0 a\n", "first line 0"},
                      BadTable{"-3 0 0 10 1 a\n", "bundle -3"}));

}  // namespace
}  // namespace dfw
