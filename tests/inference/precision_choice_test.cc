// ChoosePrecision with a made-up model: a fake clock that each run advances by its dtype's time,
// outputs perturbed by a chosen amount per dtype, and a made-up ISA, so the choice is exact and the
// same on every machine.
#include "dfw/inference/precision_choice.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <string>
#include <vector>

namespace dfw {
namespace precision_choice_test {

class FakeClock final : public Clock {
 public:
  double NowSecs() override { return now; }
  double now = 0;
};

// A model of 4 rows x 8 floats whose outputs in a dtype are float32's plus noise of `error` in
// one element per row (so each row's cosine falls by about error^2 / 2).
struct FakeModel {
  FakeClock clock;
  std::map<LinearDType, double> seconds = {
      {LinearDType::kFloat32, 0.040}, {LinearDType::kBFloat16, 0.012}, {LinearDType::kInt8, 0.008}};
  std::map<LinearDType, double> error = {
      {LinearDType::kFloat32, 0}, {LinearDType::kBFloat16, 0.01}, {LinearDType::kInt8, 0.5}};
  // When set for a dtype: the error of rows 0 and 1 (the "short" rows of row_tokens) in it instead.
  std::map<LinearDType, double> short_error;
  std::map<LinearDType, std::string> missing;  // dtype -> the ISA this "CPU" lacks
  // A burst on the machine: the first `burst_runs` runs in a dtype take `burst_seconds` longer.
  std::map<LinearDType, int> burst_runs;
  double burst_seconds = 0;
  LinearDType current = LinearDType::kFloat32;
  int runs = 0;
  bool classifier = false;

  PrecisionProbe Probe() {
    PrecisionProbe p;
    p.width = 8;
    p.check = [this](LinearDType d) -> Status {
      if (auto it = missing.find(d); it != missing.end()) return Unimplemented("needs " + it->second);
      return Status::OK();
    };
    p.use = [this](LinearDType d) {
      current = d;
      return Status::OK();
    };
    p.run = [this]() -> Result<std::vector<float>> {
      ++runs;
      clock.now += seconds[current];
      if (auto b = burst_runs.find(current); b != burst_runs.end() && b->second > 0) {
        --b->second;
        clock.now += burst_seconds;
      }
      std::vector<float> out(32);
      for (int r = 0; r < 4; ++r) {
        for (int j = 0; j < 8; ++j) out[r * 8 + j] = classifier ? (j == r ? 0.6f : 0.4f / 7) : 0.1f * (r + j + 1);
        const auto s = short_error.find(current);
        const double e = r < 2 && s != short_error.end() ? s->second : error[current];
        out[r * 8 + (r + 3) % 8] += static_cast<float>(e);
      }
      return out;
    };
    return p;
  }
  PrecisionChoiceOptions Options() {
    PrecisionChoiceOptions o;
    o.clock = &clock;
    if (classifier) o.tolerance.kind = PrecisionTolerance::Kind::kClassifier;
    return o;
  }
};

TEST(ChoosePrecision, PicksTheFastestDtypeWithinTheTolerance) {
  FakeModel m;  // int8's error 0.5 takes a row's cosine below 0.995; bf16's 0.01 keeps it > 0.999
  auto c = ChoosePrecision(m.Probe(), m.Options());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->dtype, LinearDType::kBFloat16) << c->Describe();
  EXPECT_EQ(m.current, LinearDType::kBFloat16);  // the model is left in the choice
  ASSERT_EQ(c->candidates.size(), 3u);
  EXPECT_NEAR(c->Find(LinearDType::kFloat32)->seconds, 0.040, 1e-12);
  EXPECT_NEAR(c->Find(LinearDType::kBFloat16)->seconds, 0.012, 1e-12);
  EXPECT_GE(c->Find(LinearDType::kBFloat16)->agreement, 0.999);
  EXPECT_FALSE(c->Find(LinearDType::kInt8)->passed);
  EXPECT_LT(c->Find(LinearDType::kInt8)->agreement, 0.995);
  EXPECT_NE(c->Describe().find("rejected"), std::string::npos) << c->Describe();
  // What reaches metrics.json.
  const auto figures = c->Figures();
  auto figure = [&](const std::string& name) -> int64_t {
    for (const auto& [n, v] : figures) {
      if (n == name) return v;
    }
    return -1;
  };
  EXPECT_EQ(figure("linear_dtype_bits"), 16);
  EXPECT_EQ(figure("precision_bfloat16_micro_secs"), 12000);
  EXPECT_EQ(figure("precision_float32_micro_secs"), 40000);
  EXPECT_GE(figure("precision_bfloat16_min_cosine_ppm"), 999000);
  EXPECT_LT(figure("precision_int8_min_cosine_ppm"), 995000);
}

// A burst that lasts through one dtype's own warm-up and timed runs (the other SDK process loading
// its model beside it) would have made the faster int8 look slower than bfloat16; the close dtypes
// are timed again in turns, so int8 keeps its own best time and wins. A dtype far slower than the
// fastest (float32 here) is not timed again.
TEST(ChoosePrecision, CloseDtypesAreTimedAgainInTurnsSoABurstDoesNotDecide) {
  FakeModel m;
  m.error[LinearDType::kInt8] = 0.02;
  m.burst_runs[LinearDType::kInt8] = 4;  // its warm-up and its 3 timed runs
  m.burst_seconds = 0.010;               // 0.008 -> 0.018 s, slower than bfloat16's 0.012
  auto c = ChoosePrecision(m.Probe(), m.Options());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->dtype, LinearDType::kInt8) << c->Describe();
  EXPECT_NEAR(c->Find(LinearDType::kInt8)->seconds, 0.008, 1e-12);
  EXPECT_NEAR(c->Find(LinearDType::kBFloat16)->seconds, 0.012, 1e-12);
  // 3 dtypes x (1 warm-up + 3 timed) + 2 rounds x 2 close dtypes x (1 warm-up + 1 timed) + the
  // judged run_all-less outputs come from the timed runs: 12 + 8 runs.
  EXPECT_EQ(m.runs, 20);
}

TEST(ChoosePrecision, PicksInt8WhenItIsFastestAndAccurateEnough) {
  FakeModel m;
  m.error[LinearDType::kInt8] = 0.02;
  auto c = ChoosePrecision(m.Probe(), m.Options());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->dtype, LinearDType::kInt8) << c->Describe();
}

TEST(ChoosePrecision, SkipsADtypeTheCpuCannotRunAndSaysWhy) {
  FakeModel m;
  m.missing[LinearDType::kBFloat16] = "avx512_bf16 or amx_bf16";
  m.error[LinearDType::kInt8] = 0.02;
  auto c = ChoosePrecision(m.Probe(), m.Options());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->dtype, LinearDType::kInt8);
  EXPECT_NE(c->Find(LinearDType::kBFloat16)->refused.find("amx_bf16"), std::string::npos);
  EXPECT_NE(c->Describe().find("bfloat16 not run: needs avx512_bf16 or amx_bf16"), std::string::npos) << c->Describe();
}

TEST(ChoosePrecision, KeepsFloat32UnlessAnotherIsAtLeastFivePercentFaster) {
  FakeModel m;
  m.seconds[LinearDType::kBFloat16] = 0.039;
  m.seconds[LinearDType::kInt8] = 0.0385;
  m.error[LinearDType::kInt8] = 0;
  auto c = ChoosePrecision(m.Probe(), m.Options());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->dtype, LinearDType::kFloat32) << c->Describe();
  EXPECT_EQ(m.current, LinearDType::kFloat32);
}

TEST(ChoosePrecision, AClassifierRejectsADtypeThatMovesAProbabilityByMoreThan1e3) {
  FakeModel m;
  m.classifier = true;
  m.error[LinearDType::kBFloat16] = 5e-4;  // within 1e-3, argmax unchanged
  m.error[LinearDType::kInt8] = 2e-3;
  auto c = ChoosePrecision(m.Probe(), m.Options());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->dtype, LinearDType::kBFloat16) << c->Describe();
  EXPECT_FALSE(c->Find(LinearDType::kInt8)->passed);
  EXPECT_TRUE(c->Find(LinearDType::kInt8)->argmax_same);
}

TEST(ChoosePrecision, AClassifierRejectsADtypeThatChangesAnArgmax) {
  FakeModel m;
  m.classifier = true;
  m.error[LinearDType::kBFloat16] = 0.3;  // 0.057 + 0.3 beats the row's 0.6? no: pushes another class to 0.357
  m.error[LinearDType::kInt8] = 0.6;      // 0.057 + 0.6 > 0.6: the argmax moves
  m.seconds[LinearDType::kBFloat16] = 0.039;
  PrecisionChoiceOptions o = m.Options();
  o.tolerance.max_prob_diff = 1.0;  // only the argmax rule can reject
  auto c = ChoosePrecision(m.Probe(), o);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->Find(LinearDType::kInt8)->argmax_same);
  EXPECT_FALSE(c->Find(LinearDType::kInt8)->passed);
  EXPECT_TRUE(c->Find(LinearDType::kBFloat16)->argmax_same);
  EXPECT_EQ(c->dtype, LinearDType::kFloat32) << c->Describe();  // bf16 is not 5% faster
}

TEST(ChoosePrecision, ALaterCallReadsTheCachedDecisionWithoutMeasuring) {
  const std::string dir = ::testing::TempDir() + "/precision_cache_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  FakeModel first, second;
  PrecisionChoiceOptions o = first.Options();
  o.cache_path = dir + "/gemm_plan-precision";
  o.cache_key = "model=/m size=1 mtime=2 cpu=fake threads=1";
  auto a = ChoosePrecision(first.Probe(), o);
  ASSERT_TRUE(a.ok());
  EXPECT_GT(first.runs, 0);
  // The file another process reads (this one answers from its memo next).
  std::ifstream in(o.cache_path);
  std::stringstream text;
  text << in.rdbuf();
  auto from_file = DecodePrecisionChoice(text.str(), o.cache_key);
  ASSERT_TRUE(from_file.has_value()) << text.str();
  EXPECT_EQ(from_file->dtype, a->dtype);
  o.clock = &second.clock;
  auto b = ChoosePrecision(second.Probe(), o);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(second.runs, 0);
  EXPECT_TRUE(b->from_cache);
  EXPECT_EQ(b->dtype, a->dtype);
  EXPECT_EQ(second.current, a->dtype);
  EXPECT_NEAR(b->Find(LinearDType::kBFloat16)->agreement, a->Find(LinearDType::kBFloat16)->agreement, 1e-9);
  // Another model (key) measures again.
  FakeModel third;
  o.clock = &third.clock;
  o.cache_key = "model=/other size=1 mtime=2 cpu=fake threads=1";
  ASSERT_TRUE(ChoosePrecision(third.Probe(), o).ok());
  EXPECT_GT(third.runs, 0);
  std::filesystem::remove_all(dir);
}

// ChoosePrecision in a child process (a fresh memo, as a new job's SDK process has): "ok runs
// dtype from_cache switched_to".
std::string ChooseInAChild(const PrecisionChoiceOptions& options) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    FakeModel model;
    PrecisionChoiceOptions o = options;
    o.clock = &model.clock;
    auto c = ChoosePrecision(model.Probe(), o);
    const std::string report = std::to_string(c.ok() ? 1 : 0) + " " + std::to_string(model.runs) + " " +
                               std::string(LinearDTypeName(c.ok() ? c->dtype : LinearDType::kFloat32)) + " " +
                               std::to_string(c.ok() && c->from_cache ? 1 : 0) + " " +
                               std::string(LinearDTypeName(model.current));
    (void)!::write(fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[128];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

// A later job (another process, another job dir) on the same machine reads the per-user copy: it
// measures nothing, and leaves the decision in its own job's file for its other processes.
TEST(ChoosePrecision, ALaterJobReadsTheDecisionFromThePerUserCacheWithoutMeasuring) {
  const std::string dir = ::testing::TempDir() + "/precision_shared_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/job1");
  std::filesystem::create_directories(dir + "/job2");
  PrecisionChoiceOptions o;
  o.cache_path = dir + "/job1/gemm_plan-precision";
  o.shared_cache_path = dir + "/user-precision";
  o.cache_key = "model=/shared size=1 mtime=2 cpu=fake threads=1";
  const std::string first = ChooseInAChild(o);
  // FakeModel's timings and errors choose bfloat16 (as in PicksTheFastestDtypeWithinTheTolerance).
  ASSERT_EQ(first.substr(0, 2), "1 ") << first;
  EXPECT_NE(first.substr(2, 2), "0 ") << first;  // measured
  EXPECT_EQ(first.substr(first.find(' ', 2) + 1), "bfloat16 0 bfloat16") << first;
  ASSERT_TRUE(std::filesystem::exists(o.shared_cache_path));
  o.cache_path = dir + "/job2/gemm_plan-precision";
  EXPECT_EQ(ChooseInAChild(o), "1 0 bfloat16 1 bfloat16");  // no run, same choice, from the cache, switched
  // ... and job2's own file now holds it for that job's other processes.
  std::ifstream in(o.cache_path);
  std::stringstream text;
  text << in.rdbuf();
  auto job2 = DecodePrecisionChoice(text.str(), o.cache_key);
  ASSERT_TRUE(job2.has_value()) << text.str();
  EXPECT_EQ(job2->dtype, LinearDType::kBFloat16);
  // Without the per-user copy a new job measures again.
  std::filesystem::remove(o.shared_cache_path);
  o.cache_path = dir + "/job3-precision";
  const std::string third = ChooseInAChild(o);
  EXPECT_NE(third.substr(2, 2), "0 ") << third;
  std::filesystem::remove_all(dir);
}

TEST(ChoosePrecision, TheCacheTextRoundTripsAndRefusesAnotherKey) {
  PrecisionChoice c;
  c.dtype = LinearDType::kInt8;
  PrecisionCandidate f32, i8;
  f32.passed = true;
  f32.seconds = 0.25;
  i8.dtype = LinearDType::kInt8;
  i8.seconds = 0.05;
  i8.agreement = 0.9971;
  i8.passed = true;
  c.candidates = {f32, i8};
  const std::string text = EncodePrecisionChoice(c, "k1");
  auto back = DecodePrecisionChoice(text, "k1");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->dtype, LinearDType::kInt8);
  ASSERT_EQ(back->candidates.size(), 2u);
  EXPECT_DOUBLE_EQ(back->candidates[1].agreement, 0.9971);
  EXPECT_FALSE(DecodePrecisionChoice(text, "k2").has_value());
  EXPECT_FALSE(DecodePrecisionChoice("dfw-precision 2 int8 embedding\nkey k1\n", "k1").has_value());
  // A version-1 file (no buckets) is measured again.
  EXPECT_FALSE(DecodePrecisionChoice("dfw-precision 1 int8 embedding\nkey k1\ncandidate float32 0 0.25 1 1 1 1\n", "k1")
                   .has_value());
  // A candidate with figures for more buckets than the choice has (found by the cache fuzzer: its
  // description then read a bucket limit past the end) is measured again.
  const std::string buckets = "dfw-precision 2 int8 embedding 1.999 0.995 0.001\nkey k\nbuckets 3 8 16 64 4 float32 int8 int8 int8\n";
  EXPECT_TRUE(DecodePrecisionChoice(buckets + "candidate float32 0 0.19 1 1 1 1 4 1 20 1 1 10 1 1 30 1 1 6 1\n", "k").has_value());
  EXPECT_FALSE(DecodePrecisionChoice(buckets + "candidate float32 0 0.19 1 1 1 1 5 1 20 1 1 10 1 1 30 1 1 6 1 1 3 1\n", "k")
                   .has_value());
}

// Rows 0 and 1 are short (3 tokens), row 2 has 20 and row 3 100 tokens.
PrecisionChoiceOptions Bucketed(FakeModel& m, PrecisionProbe& p, std::vector<int> limits) {
  p.row_tokens = {3, 3, 20, 100};
  PrecisionChoiceOptions o = m.Options();
  o.bucket_limits = std::move(limits);
  return o;
}

TEST(ChoosePrecision, ADtypeThatFailsOnlyShortRowsRunsTheLongOnesAndTheShortOnesGetASaferOne) {
  FakeModel m;
  m.error[LinearDType::kInt8] = 0.02;       // long rows: cosine > 0.995
  m.short_error[LinearDType::kInt8] = 0.5;  // short rows: well below
  PrecisionProbe p = m.Probe();
  auto c = ChoosePrecision(p, Bucketed(m, p, {5, 64}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->dtype, LinearDType::kInt8) << c->Describe();
  EXPECT_EQ(m.current, LinearDType::kInt8);
  ASSERT_EQ(c->bucket_dtypes.size(), 3u);
  EXPECT_EQ(c->bucket_dtypes[0], LinearDType::kBFloat16);  // bf16 keeps 0.999 there and is faster than float32
  EXPECT_EQ(c->DTypeFor(3), LinearDType::kBFloat16);
  EXPECT_EQ(c->DTypeFor(5), LinearDType::kBFloat16);
  EXPECT_EQ(c->DTypeFor(6), LinearDType::kInt8);
  EXPECT_EQ(c->DTypeFor(1000), LinearDType::kInt8);
  const PrecisionCandidate* i8 = c->Find(LinearDType::kInt8);
  EXPECT_FALSE(i8->passed);  // not on every row
  EXPECT_EQ(i8->bucket_passed, (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(i8->bucket_rows, (std::vector<int>{2, 1, 1}));
  EXPECT_LT(i8->bucket_agreement[0], 0.995);
  EXPECT_NE(c->Describe().find("int8 for 6-64 tokens, 65+ tokens; bfloat16 for 1-5 tokens"), std::string::npos)
      << c->Describe();
  EXPECT_NE(c->Describe().find("1-5 tokens 0."), std::string::npos) << c->Describe();
  int bits8 = 0, bits16 = 0;
  for (const auto& [name, v] : c->Figures()) {
    bits8 += name == "linear_dtype_bits" && v == 8;
    bits16 += name == "linear_dtype_bits" && v == 16;
  }
  EXPECT_EQ(bits8, 1);
  EXPECT_EQ(bits16, 1);
  // Without buckets the same measurement rejects int8 for the whole model.
  FakeModel whole;
  whole.error = m.error;
  whole.short_error = m.short_error;
  auto w = ChoosePrecision(whole.Probe(), whole.Options());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->dtype, LinearDType::kBFloat16);
  EXPECT_TRUE(w->bucket_dtypes.empty());
}

TEST(ChoosePrecision, ABucketWithoutCalibrationRowsFollowsTheNearestShorterOne) {
  FakeModel m;
  m.error[LinearDType::kInt8] = 0.02;
  m.short_error[LinearDType::kInt8] = 0.5;
  m.short_error[LinearDType::kBFloat16] = 0.5;  // short rows: only float32 keeps the bound
  PrecisionProbe p = m.Probe();
  auto c = ChoosePrecision(p, Bucketed(m, p, {2, 5, 10, 64}));  // 1-2 and 6-10 have no rows
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->bucket_dtypes, (std::vector<LinearDType>{LinearDType::kFloat32, LinearDType::kFloat32,
                                                         LinearDType::kFloat32, LinearDType::kInt8, LinearDType::kInt8}))
      << c->Describe();
}

TEST(ChoosePrecision, TokenCountsThatAreNotOnePerRowAreAnError) {
  FakeModel m;
  PrecisionProbe p = m.Probe();
  PrecisionChoiceOptions o = Bucketed(m, p, {5});
  p.row_tokens.pop_back();
  auto c = ChoosePrecision(p, o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

TEST(ChoosePrecision, ABucketedDecisionRoundTripsThroughTheCacheText) {
  FakeModel m;
  m.error[LinearDType::kInt8] = 0.02;
  m.short_error[LinearDType::kInt8] = 0.5;
  PrecisionProbe p = m.Probe();
  PrecisionChoiceOptions o = Bucketed(m, p, {5, 64});
  o.tolerance.min_cosine_int8 = 0.99;
  auto c = ChoosePrecision(p, o);
  ASSERT_TRUE(c.ok());
  auto back = DecodePrecisionChoice(EncodePrecisionChoice(*c, "k"), "k");
  ASSERT_TRUE(back.has_value()) << EncodePrecisionChoice(*c, "k");
  EXPECT_EQ(back->bucket_limits, c->bucket_limits);
  EXPECT_EQ(back->bucket_dtypes, c->bucket_dtypes);
  EXPECT_DOUBLE_EQ(back->tolerance.min_cosine_int8, 0.99);
  const PrecisionCandidate* i8 = back->Find(LinearDType::kInt8);
  ASSERT_NE(i8, nullptr);
  EXPECT_EQ(i8->bucket_passed, c->Find(LinearDType::kInt8)->bucket_passed);
  EXPECT_EQ(i8->bucket_rows, c->Find(LinearDType::kInt8)->bucket_rows);
  EXPECT_NEAR(i8->bucket_agreement[0], c->Find(LinearDType::kInt8)->bucket_agreement[0], 1e-9);
  // Limits out of order, or a longest bucket that is not the model's dtype, read as nothing.
  const std::string head = "dfw-precision 2 int8 embedding 0.999 0.995 0.001\nkey k\n";
  EXPECT_TRUE(DecodePrecisionChoice(head + "buckets 2 8 16 3 float32 int8 int8\n", "k").has_value());
  EXPECT_FALSE(DecodePrecisionChoice(head + "buckets 2 16 8 3 float32 int8 int8\n", "k").has_value());
  EXPECT_FALSE(DecodePrecisionChoice(head + "buckets 2 8 16 3 int8 int8 float32\n", "k").has_value());
  EXPECT_FALSE(DecodePrecisionChoice(head + "buckets 2 8 16 2 float32 int8\n", "k").has_value());
}

TEST(SaferDType, GoesInt8ToBFloat16ToFloat32SkippingWhatTheCpuCannotRun) {
  auto all = [](LinearDType) { return Status::OK(); };
  auto no_bf16 = [](LinearDType d) { return d == LinearDType::kBFloat16 ? Unimplemented("no bf16") : Status::OK(); };
  EXPECT_EQ(SaferDType(LinearDType::kInt8, all), LinearDType::kBFloat16);
  EXPECT_EQ(SaferDType(LinearDType::kInt8, no_bf16), LinearDType::kFloat32);
  EXPECT_EQ(SaferDType(LinearDType::kBFloat16, all), LinearDType::kFloat32);
  EXPECT_EQ(SaferDType(LinearDType::kFloat32, all), LinearDType::kFloat32);
}

}  // namespace precision_choice_test
}  // namespace dfw
