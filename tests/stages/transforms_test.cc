// MapToFields, Filter, Explode, Flatten, LogForTesting and the writers.
#include <gmock/gmock.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "dfw/stages/sink.h"
#include "stages/sink_file.h"
#include "stages_test_util.h"

namespace dfw {
namespace transforms_test {

using ::testing::HasSubstr;
using testing::JsonRow;
using testing::TempDir;

Row R(int64_t a, std::string s) { return JsonRow({{"a", Value::Int(a)}, {"s", Value::String(std::move(s))}}); }

struct MapCase {
  const char* name;
  const char* config;
  RowBatch input;
  std::vector<std::string> main_json;
  std::vector<std::string> error_fragments;
  int64_t filtered = 0;
  const char* type = "MapToFields";
};

std::vector<MapCase> Cases() {
  return {
      {"generic field rename", "{fields: {b: a}}", {R(1, "x")}, {R"({"b":1})"}, {}},
      {"python expressions", "{language: python, fields: {b: 'a * 10 + 1', t: 's.upper()'}}", {R(2, "ab")},
       {R"({"b":21,"t":"AB"})"}, {}},
      {"append and drop", "{language: python, append: true, drop: [s], fields: {n: 'len(s)'}}", {R(1, "abc")},
       {R"({"a":1,"n":3})"}, {}},
      {"append redefinition is a record error", "{append: true, fields: {a: s}}", {R(1, "x")}, {},
       {"Redefinition of field 'a'"}},
      {"type error goes to the error output", "{language: python, fields: {b: 'a + s'}}", {R(1, "x"), R(2, "y")}, {},
       {"field 'b'", "TypeError"}},
      {"output_type checked", "{language: python, fields: {b: {expression: 's', output_type: integer}}}", {R(1, "x")},
       {}, {"output_type is integer but the expression returned str"}},
      {"filter keeps truthy rows and counts the rest", "{language: python, keep: 'a > 1'}", {R(1, "x"), R(2, "y"), R(3, "z")},
       {R"({"a":2,"s":"y"})", R"({"a":3,"s":"z"})"}, {}, 1, "Filter"},
      {"filter generic comparison", "{keep: 'a < 2'}", {R(1, "x"), R(2, "y")}, {R"({"a":1,"s":"x"})"}, {}, 1, "Filter"},
      {"filter missing field is a record error", "{language: python, keep: 'nope > 1'}", {R(1, "x")}, {}, {"nope"}, 0,
       "Filter"},
      {"lambda callable", "{language: python, fields: {b: {callable: 'lambda row: row.a * 2'}, t: {callable: \"lambda r: r.s + '.r'\"}}}",
       {R(3, "x")}, {R"({"b":6,"t":"x.r"})"}, {}},
      {"lambda keep", "{language: python, keep: {callable: 'lambda row: row.a >= 2 and row.s != \"row.a\"'}}",
       {R(1, "x"), R(2, "y")}, {R"({"a":2,"s":"y"})"}, {}, 1, "Filter"},
      {"flatten passes rows", "{}", {R(1, "x")}, {R"({"a":1,"s":"x"})"}, {}, 0, "Flatten"},
      {"log passes rows", "{level: DEBUG, prefix: 'p: '}", {R(1, "x")}, {R"({"a":1,"s":"x"})"}, {}, 0, "LogForTesting"},
  };
}

TEST(Transforms, TableOfRows) {
  for (MapCase& mc : Cases()) {
    SCOPED_TRACE(mc.name);
    StageConfig c = testing::MakeConfig(mc.type, mc.config, "bad");
    auto stage = testing::MakeStage(c);
    ASSERT_TRUE(stage.ok()) << stage.status().ToString();
    auto out = testing::RunStage(**stage, c, mc.input);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<std::string> got;
    for (const Row& r : out->main) got.push_back(r.ToJson());
    EXPECT_EQ(got, mc.main_json);
    EXPECT_EQ(out->filtered, mc.filtered);
    std::string msgs;
    for (const Row& r : out->errors) msgs += r.Find("msg")->as_string() + "\n";
    if (mc.error_fragments.empty()) {
      EXPECT_TRUE(out->errors.empty()) << msgs;
    }
    for (const std::string& f : mc.error_fragments) EXPECT_THAT(msgs, HasSubstr(f));
    // Conservation: every input row is in exactly one place (for these 1:1 transforms).
    EXPECT_EQ(out->main.size() + out->errors.size() + static_cast<std::size_t>(out->filtered), mc.input.size());
  }
}

struct ConfigErrorCase {
  const char* type;
  const char* config;
  const char* fragment;
};

TEST(Transforms, BadConfigsAreLoadErrors) {
  const std::vector<ConfigErrorCase> cases = {
      {"MapToFields", "{fields: {b: 'a +'}, language: python}", "fields.b"},
      {"MapToFields", "{fields: {b: 'a + 1'}}", "fields.b"},  // generic language: no arithmetic
      {"MapToFields", "{drop: [a], fields: {b: a}}", "only allowed with append"},
      // Callables the expression subset does not compile are CPython's: its errors, at load.
      {"MapToFields", "{fields: {b: {callable: 'lambda r: r.x +'}}, language: python}", "callable: SyntaxError: invalid syntax"},
      {"MapToFields", "{fields: {b: {callable: \"def f(r):\\n  return r.x +\"}}, language: python}", "SyntaxError: invalid syntax (line 2)"},
      {"MapToFields", "{fields: {b: {callable: 'import os'}}, language: python}", "SyntaxError"},
      {"MapToFields", "{fields: {b: {callable: \"def f(r):\\n  return 1\"}}}", "needs language: python"},
      {"MapToFields", "{fields: {b: {callable: 'r.x'}}, language: python}", "ModuleNotFoundError: No module named 'r'"},
      {"MapToFields", "{fields: {b: {path: f.txt, name: fn}}, language: python}", "File \"f.txt\" is not a valid .py file."},
      {"MapToFields", "{fields: {b: {path: no/such.py, name: fn}}, language: python}", "no/such.py"},
      {"MapToFields", "{fields: {b: {path: no/such.py}}, language: python}", "needs both 'path'"},
      {"MapToFields", "{fields: {b: 'a +'}, language: sql}", "fields.b: near \")\": syntax error"},
      {"MapToFields", "{fields: {b: a}, language: cobol}", "unknown language 'cobol'"},
      {"Filter", "{}", "config 'keep' is required"},
      {"Explode", "{fields: [a, b]}", "cross_product must be specified"},
      {"LogForTesting", "{level: LOUD}", "allowed: ERROR, INFO, DEBUG"},
      {"WriteToCsv", "{path: o, delimiter: ''}", "single character"},
      {"WriteToJson", "{}", "config 'path' is required"},
  };
  for (const ConfigErrorCase& cc : cases) {
    SCOPED_TRACE(std::string(cc.type) + " " + cc.config);
    auto stage = testing::MakeStage(testing::MakeConfig(cc.type, cc.config));
    ASSERT_FALSE(stage.ok());
    EXPECT_THAT(stage.status().message(), HasSubstr(cc.fragment));
    EXPECT_THAT(stage.status().message(), HasSubstr("t.yaml:"));
  }
}

TEST(Explode, ZipPadsWithNullAndCrossProductCombines) {
  Row row = JsonRow({{"k", Value::Int(1)},
                     {"x", Value::FromList({Value::Int(1), Value::Int(2)})},
                     {"y", Value::FromList({Value::String("a")})}});
  StageConfig zip = testing::MakeConfig("Explode", "{fields: [x, y], cross_product: false}");
  auto z = testing::MakeStage(zip);
  ASSERT_TRUE(z.ok());
  auto zo = testing::RunStage(**z, zip, {row});
  ASSERT_TRUE(zo.ok());
  ASSERT_EQ(zo->main.size(), 2u);
  EXPECT_EQ(zo->main[0].ToJson(), R"({"k":1,"x":1,"y":"a"})");
  EXPECT_EQ(zo->main[1].ToJson(), R"({"k":1,"x":2,"y":null})");
  StageConfig cross = testing::MakeConfig("Explode", "{fields: [x, y], cross_product: true}");
  auto x = testing::MakeStage(cross);
  ASSERT_TRUE(x.ok());
  auto xo = testing::RunStage(**x, cross, {row});
  ASSERT_TRUE(xo.ok());
  ASSERT_EQ(xo->main.size(), 2u);
  EXPECT_EQ(xo->main[1].ToJson(), R"({"k":1,"x":2,"y":"a"})");
  // A missing or non-list field is a record error; an empty list yields nothing (counted filtered).
  StageConfig one = testing::MakeConfig("Explode", "{fields: x}", "bad");
  auto o = testing::MakeStage(one);
  ASSERT_TRUE(o.ok());
  auto oo = testing::RunStage(**o, one, {JsonRow({{"x", Value::Int(3)}}), JsonRow({{"x", Value::FromList({})}})});
  ASSERT_TRUE(oo.ok());
  EXPECT_TRUE(oo->main.empty());
  ASSERT_EQ(oo->errors.size(), 1u);
  EXPECT_THAT(oo->errors[0].Find("msg")->as_string(), HasSubstr("field 'x' is int, not a list"));
  EXPECT_EQ(oo->filtered, 1);
}

std::string WriteOneBundle(const std::string& type, const std::string& config, RowBatch rows, Status* status) {
  TempDir dir;
  StageConfig c = testing::MakeConfig(type, config);
  auto stage = testing::MakeStage(c);
  if (!stage.ok()) {
    *status = stage.status();
    return "";
  }
  BundleContext ctx{7, dir / "staging"};
  *status = (*stage)->StartBundle(ctx);
  if (!status->ok()) return "";
  auto out = testing::RunStage(**stage, c, std::move(rows));
  *status = out.status();
  std::ifstream in(StagingDonePath(dir / "staging", type, 7));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Writers, FormatsRowsIntoTheCommittedBundleFile) {
  Status st;
  EXPECT_EQ(WriteOneBundle("WriteToJson", "{path: o}", {R(1, "x"), R(2, "y")}, &st),
            "{\"a\":1,\"s\":\"x\"}\n{\"a\":2,\"s\":\"y\"}\n");
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(WriteOneBundle("WriteToCsv", "{path: o}", {R(1, "x,y"), R(2, "say \"hi\"")}, &st),
            "a,s\n1,\"x,y\"\n2,\"say \"\"hi\"\"\"\n");
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(WriteOneBundle("WriteToText", "{path: o}", {JsonRow({{"line", Value::String("hello")}})}, &st), "hello\n");
  EXPECT_TRUE(st.ok()) << st.ToString();
  WriteOneBundle("WriteToText", "{path: o}", {R(1, "x")}, &st);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("exactly one field"));
}

// A bundle file written in uneven pieces across several write-back chunks: every byte arrives, in
// order; the file system gets them in pieces of at least a buffer (never a write per small piece)
// and holds back less than a buffer; and the write-back of each whole chunk in the file was started
// on the way rather than left to Commit's fsync.
TEST(Writers, ABundleFileWritesInLargePiecesStartsWriteBackAsItGoesAndKeepsEveryByte) {
  using stages_internal::BundleFile;
  TempDir dir;
  // The file system under the test's folder takes sync_file_range (ext4, xfs, btrfs, overlay and
  // tmpfs do); one that refused would leave writeback_started() at 0, which BundleFile allows.
  bool takes_writeback = false;
  {
    const std::string probe = dir / "probe";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    takes_writeback = ::write(fd, "x", 1) == 1 && ::sync_file_range(fd, 0, 1, SYNC_FILE_RANGE_WRITE) == 0;
    ::close(fd);
  }
  BundleContext ctx{3, dir / "staging"};
  BundleFile file;
  ASSERT_TRUE(file.Open(ctx, "Write").ok());
  std::string expected;
  std::mt19937 rng(7);
  const int64_t chunk = BundleFile::kWritebackBytes;
  const auto buffer = static_cast<int64_t>(BundleFile::kBufferBytes);
  int pieces_written_at_once = 0;
  for (int piece = 0; expected.size() < static_cast<std::size_t>(3 * chunk + chunk / 2); ++piece) {
    std::string bytes(std::size_t{1} + rng() % 400'000, '\0');
    for (char& c : bytes) c = static_cast<char>('a' + rng() % 26);
    if (piece % 3 == 0) bytes.assign(std::size_t{1} + rng() % 5'000, 'z');  // pieces the buffer keeps
    expected += bytes;
    const int64_t started_before = file.writeback_started(), written_before = file.written();
    ASSERT_TRUE(file.Write(bytes).ok());
    const int64_t grew = file.written() - written_before;
    EXPECT_TRUE(grew == 0 || grew >= buffer) << grew;
    pieces_written_at_once += grew > 0 ? 1 : 0;
    EXPECT_LT(static_cast<int64_t>(expected.size()) - file.written(), buffer);
    EXPECT_GE(file.writeback_started(), started_before);
    EXPECT_EQ(file.writeback_started() % chunk, 0);
    EXPECT_EQ(file.writeback_started(), takes_writeback ? file.written() / chunk * chunk : 0);
  }
  if (takes_writeback) {
    EXPECT_GE(file.writeback_started(), 3 * chunk);
  } else {
    std::cerr << "note: this file system refuses sync_file_range; only its absence was checked\n";
  }
  EXPECT_GT(pieces_written_at_once, 3);
  ASSERT_TRUE(file.Commit().ok());
  std::ifstream in(StagingDonePath(dir / "staging", "Write", 3), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str().size(), expected.size());
  EXPECT_TRUE(ss.str() == expected);
}

// A file system that refuses the bytes (here a file size limit, EFBIG, as a full disk gives
// ENOSPC) is an error naming the file, from Write or at the latest from Commit; nothing is renamed
// to .done. (In a child process: the limit and SIGXFSZ's disposition are the process's.)
TEST(Writers, ABundleFileTheFileSystemRefusesIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string staging = dir / "staging";
  EXPECT_EXIT(
      {
        ::signal(SIGXFSZ, SIG_IGN);
        rlimit limit{};
        limit.rlim_cur = limit.rlim_max = 1 << 20;
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) std::_Exit(3);
        stages_internal::BundleFile file;
        if (!file.Open(BundleContext{5, staging}, "Write").ok()) std::_Exit(4);
        Status s = Status::OK();
        const std::string piece(100'000, 'x');
        for (int i = 0; i < 30 && s.ok(); ++i) s = file.Write(piece);
        if (s.ok()) s = file.Commit();
        const bool named = s.message().find("bundle-5.tmp") != std::string::npos;
        const bool renamed = std::filesystem::exists(StagingDonePath(staging, "Write", 5));
        std::_Exit(!s.ok() && named && !renamed ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Writers, ShardNamesFollowBeam) {
  ShardNaming n{"out/preds", ".jsonl"};
  EXPECT_EQ(n.ShardName(3, 10), "out/preds-00003-of-00010.jsonl");
}

}  // namespace transforms_test
}  // namespace dfw

namespace dfw {
namespace transforms_test {

TEST(RemotePaths, ReadersAndWritersRefuseAUrlNamingTheScheme) {
  StageRegistry r;
  RegisterBuiltinStages(r);
  for (const char* type : {"ReadFromCsv", "ReadFromJson", "ReadFromText", "WriteToJson", "WriteToCsv", "WriteToText"}) {
    StageConfig c;
    c.name = c.type = type;
    c.config = ConfigNodeFromYaml(YAML::Load("{path: 'gs://bucket/dir/products.csv'}"));
    auto stage = r.Find(type)->factory(c);
    ASSERT_FALSE(stage.ok()) << type;
    EXPECT_EQ(stage.status().code(), StatusCode::kUnimplemented) << type;
    EXPECT_NE(stage.status().message().find("remote filesystem (gs://)"), std::string::npos) << stage.status().message();
  }
  StageConfig local;
  local.name = local.type = "ReadFromJson";
  local.config = ConfigNodeFromYaml(YAML::Load("{path: 'data/a:b.jsonl'}"));  // a colon alone is a local name
  EXPECT_TRUE(r.Find("ReadFromJson")->factory(local).ok());
}

}  // namespace transforms_test
}  // namespace dfw

namespace dfw {
namespace transforms_test {

// Window starts: floor((ts - offset) / size) * size + offset, negative timestamps included.
TEST(WindowInto, FixedWindowBoundsIncludingOffsetsAndNegativeTimes) {
  StageRegistry r;
  RegisterBuiltinStages(r);
  StageConfig c;
  c.name = c.type = "WindowInto";
  c.windowing = ConfigNodeFromYaml(YAML::Load("{type: fixed, size: 250ms, offset: 1.1s}"));  // offset 1100 ms = 100 ms mod 250
  auto stage = r.Find("WindowInto")->factory(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch in;
  for (int64_t ts : {int64_t{0}, int64_t{99'999}, int64_t{100'000}, int64_t{349'999}, int64_t{350'000}, int64_t{-1}}) {
    Row row;
    row.Append("x", Value::Int(1));
    row.set_timestamp_us(ts);
    in.push_back(std::move(row));
  }
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->Process(in, out).ok());
  ASSERT_EQ(out.main().size(), 6u);
  const std::pair<int64_t, int64_t> want[] = {{-150'000, 100'000}, {-150'000, 100'000}, {100'000, 350'000},
                                             {100'000, 350'000},   {350'000, 600'000},  {-150'000, 100'000}};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(out.main()[i].window_start_us(), want[i].first) << i;
    EXPECT_EQ(out.main()[i].window_end_us(), want[i].second) << i;
  }
}

}  // namespace transforms_test
}  // namespace dfw
