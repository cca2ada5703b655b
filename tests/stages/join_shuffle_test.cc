// The Join shuffle between its two halves, driven directly: a partial sink writes one bundle's
// shuffle file, CommitShuffle marks it complete, the merge source reads it back. A key damaged in
// the committed file (its bytes no longer decode) is refused as DataLoss naming the file, never
// joined as a key it is not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <yaml-cpp/yaml.h>

#include "dfw/stages/combine.h"
#include "dfw/stages/config_yaml.h"
#include "dfw/stages/join.h"
#include "dfw/stages/stage.h"
#include "test_util.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;

constexpr const char* kJoinConfig = "{type: outer, equalities: [{u: uid, o: uid}], fields: {u: [uid, name], o: {other: name}}}";
constexpr int64_t kMarkedUid = 0x0123456789AB;  // a key whose 8 bytes are easy to find in the file

class JoinShuffle : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterBuiltinStages(registry_);
    dir_ = tmp_.path();
    ASSERT_FALSE(dir_.empty());
  }

  StageConfig Config(const char* type) const {
    StageConfig c;
    c.name = "J";
    c.type = type;
    c.input_names = {"u", "o"};
    c.config = ConfigNodeFromYaml(YAML::Load(kJoinConfig));
    c.shuffle.partitions = 8;
    return c;
  }

  // One bundle of input `u` (users 1..20 and the marked one), committed; returns its shuffle folder.
  std::string WriteUsers() {
    return WriteUsersNamed([](int64_t uid) { return "user-" + std::to_string(uid); });
  }
  template <typename NameOf>
  std::string WriteUsersNamed(NameOf name_of) {
    StageConfig c = Config(kJoinPartialType);
    c.shuffle.join_input = 0;
    auto stage = registry_.Find(kJoinPartialType)->factory(c);
    EXPECT_TRUE(stage.ok()) << stage.status().ToString();
    if (!stage.ok()) return "";
    EXPECT_TRUE((*stage)->StartBundle(BundleContext{0, dir_}).ok());
    RowBatch batch;
    for (int64_t uid = 1; uid <= 20; ++uid) {
      batch.push_back(Row({{"uid", Value::Int(uid)}, {"name", Value::String(name_of(uid))}}));
    }
    batch.push_back(Row({{"uid", Value::Int(kMarkedUid)}, {"name", Value::String("marked")}}));
    StageOutput out(&c);
    EXPECT_TRUE((*stage)->Process(batch, out).ok());
    EXPECT_TRUE((*stage)->FinishBundle(out).ok());
    auto name = JoinPartialShuffleName(c);
    EXPECT_TRUE(name.ok()) << name.status().ToString();
    const std::string shuffle = dir_ + "/" + *name;
    EXPECT_TRUE(CommitShuffle(shuffle, {0}).ok());
    return shuffle;
  }

  // Reads every range of the merge over `shuffle` (both inputs read the same users' file): the rows
  // emitted, or the first error.
  Result<int> ReadAll(const std::string& shuffle) {
    ASSIGN_OR_RETURN(std::vector<Row> rows, ReadRows(shuffle));
    return static_cast<int>(rows.size());
  }
  Result<std::vector<Row>> ReadRows(const std::string& shuffle) {
    StageConfig c = Config(kJoinMergeType);
    c.shuffle.join_dirs = {shuffle, shuffle};
    ASSIGN_OR_RETURN(std::unique_ptr<Stage> merge, registry_.Find(kJoinMergeType)->factory(c));
    ASSIGN_OR_RETURN(std::vector<SourceSplit> splits, merge->Split(int64_t{1} << 40));
    std::vector<Row> rows;
    for (const SourceSplit& split : splits) {
      ASSIGN_OR_RETURN(std::unique_ptr<SplitReader> reader, merge->OpenSplit(split));
      for (bool more = true; more;) {
        StageOutput out(&c);
        ASSIGN_OR_RETURN(more, reader->Next(out, 64));
        for (Row& r : out.main()) rows.push_back(std::move(r));
      }
    }
    return rows;
  }

  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  static void WriteFile(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  // Sets byte `at` of the shuffle's committed file to `value`: the merge's read must then be
  // DataLoss naming that file, never rows.
  void ExpectDamageIsDataLossNamingTheFile(const std::string& shuffle, std::size_t at, char value) {
    const std::string file = shuffle + "/bundle-0.done";
    std::string bytes = ReadFile(file);
    ASSERT_LT(at, bytes.size());
    bytes[at] = value;
    WriteFile(file, bytes);
    auto damaged = ReadAll(shuffle);
    ASSERT_FALSE(damaged.ok()) << "read " << *damaged << " rows from a damaged shuffle";
    EXPECT_EQ(damaged.status().code(), StatusCode::kDataLoss) << damaged.status().ToString();
    EXPECT_NE(damaged.status().message().find("bundle-0.done"), std::string::npos) << damaged.status().message();
  }

  StageRegistry registry_;
  testing::TempDir tmp_{"dfw-join-shuffle-test"};
  std::string dir_;
};

TEST_F(JoinShuffle, AKeyDamagedInTheCommittedFileIsDataLossNamingTheFile) {
  const std::string shuffle = WriteUsers();
  ASSERT_FALSE(shuffle.empty());
  auto intact = ReadAll(shuffle);
  ASSERT_TRUE(intact.ok()) << intact.status().ToString();
  EXPECT_EQ(*intact, 21) << "each user joins itself (both inputs read the same file)";

  // The marked key's int item: its kind byte, then its 8 bytes little-endian. The key is written
  // before the row (which holds the uid too), so the first match is the key's.
  const std::string bytes = ReadFile(shuffle + "/bundle-0.done");
  std::string item(1, '\x03');  // the codec's int kind
  for (int i = 0; i < 8; ++i) item.push_back(static_cast<char>((static_cast<uint64_t>(kMarkedUid) >> (8 * i)) & 0xFF));
  const std::size_t at = bytes.find(item);
  ASSERT_NE(at, std::string::npos) << "the marked key is in the shuffle file";
  ExpectDamageIsDataLossNamingTheFile(shuffle, at, '\xEE');  // no such kind
}

// A row damaged in the committed file (its name's string no longer decodes) is DataLoss naming the
// file too: rows are decoded in a second pass, after every key of the partition was read.
TEST_F(JoinShuffle, ARowDamagedInTheCommittedFileIsDataLossNamingTheFile) {
  const std::string shuffle = WriteUsers();
  ASSERT_FALSE(shuffle.empty());
  const std::string bytes = ReadFile(shuffle + "/bundle-0.done");
  const std::size_t at = bytes.find("marked");  // in the row only (the key is the uid)
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find("marked", at + 1), std::string::npos) << "the name is written once";
  ExpectDamageIsDataLossNamingTheFile(shuffle, at - 1, '\x7f');  // its length: now past the row's end
}

// The partial writes a row behind a one-byte length and widens it when the row reaches 128 bytes:
// names from 90 to 128 bytes put the rows on both sides of that edge, and every one reads back.
TEST_F(JoinShuffle, RowsOnBothSidesOfTheOneByteLengthReadBackWhole) {
  auto name_of = [](int64_t uid) { return std::string(static_cast<std::size_t>(88 + 2 * uid), static_cast<char>('a' + uid % 26)); };
  const std::string shuffle = WriteUsersNamed(name_of);
  ASSERT_FALSE(shuffle.empty());
  auto rows = ReadRows(shuffle);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 21u);
  int checked = 0;
  for (const Row& r : *rows) {
    const Value* uid = r.Find("uid");
    const Value* name = r.Find("name");
    const Value* other = r.Find("other");
    ASSERT_TRUE(uid != nullptr && name != nullptr && other != nullptr) << r.ToJson();
    if (uid->as_int() == kMarkedUid) continue;
    EXPECT_EQ(name->as_string(), name_of(uid->as_int())) << uid->as_int();
    EXPECT_EQ(other->as_string(), name_of(uid->as_int())) << uid->as_int();
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

}  // namespace
}  // namespace dfw
