// PrecisionMonitor: which batches it checks, the figures it records and the switch to a safer
// dtype when a sampled row breaks the bound, on made-up outputs.
#include "dfw/inference/precision_monitor.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dfw {
namespace precision_monitor_test {

std::shared_ptr<PrecisionPlanState> State(bool bf16_runs = true) {
  PrecisionChoice plan;
  plan.dtype = LinearDType::kInt8;
  plan.bucket_limits = {5};
  plan.bucket_dtypes = {LinearDType::kFloat32, LinearDType::kInt8};
  return std::make_shared<PrecisionPlanState>(plan, [bf16_runs](LinearDType d) {
    return d == LinearDType::kBFloat16 && !bf16_runs ? Unimplemented("no bf16") : Status::OK();
  });
}

// name -> values recorded.
std::map<std::string, std::vector<int64_t>> ByName(const std::vector<std::pair<std::string, int64_t>>& figures) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [n, v] : figures) out[n].push_back(v);
  return out;
}

// Two rows of 4 floats; row 1 of `got` is rotated away from `ref` by `error` in one element.
void Rows(double error, std::vector<float>& ref, std::vector<float>& got) {
  ref = {1, 2, 3, 4, 4, 3, 2, 1};
  got = ref;
  got[4 + 1] += static_cast<float>(error);
}

TEST(PrecisionMonitor, ChecksTheFirstBatchAndThenOneInEvery) {
  PrecisionMonitor m(State(), {}, 3, "m");
  std::vector<bool> due;
  for (int i = 0; i < 7; ++i) due.push_back(m.Due());
  EXPECT_EQ(due, (std::vector<bool>{true, false, false, true, false, false, true}));
  PrecisionMonitor off(State(), {}, 0, "m");
  EXPECT_FALSE(off.Due());
}

TEST(PrecisionMonitor, RecordsEachRowsCosineAndKeepsTheDtypeWithinTheBound) {
  auto state = State();
  PrecisionMonitor m(state, {}, 1, "m");
  std::vector<float> ref, got;
  Rows(0.1, ref, got);
  const std::vector<LinearDType> dtypes = {LinearDType::kInt8, LinearDType::kInt8};
  m.Check(ref, got, 4, dtypes);
  auto f = ByName(m.TakeFigures());
  ASSERT_EQ(f["precision_check_cosine_ppm"].size(), 2u);
  EXPECT_EQ(f["precision_check_cosine_ppm"][0], 1000000);
  EXPECT_LT(f["precision_check_cosine_ppm"][1], 1000000);
  EXPECT_GT(f["precision_check_cosine_ppm"][1], 995000);
  EXPECT_EQ(f.count("precision_switches"), 0u);
  EXPECT_EQ(state->generation(), 0);
  EXPECT_TRUE(m.TakeFigures().empty());  // taken
}

TEST(PrecisionMonitor, ARowBelowTheBoundMovesItsDtypeToTheNextSaferOnce) {
  auto state = State();
  PrecisionMonitor m(state, {}, 1, "m");
  std::vector<float> ref, got;
  Rows(2.0, ref, got);
  const std::vector<LinearDType> dtypes = {LinearDType::kInt8, LinearDType::kInt8};
  m.Check(ref, got, 4, dtypes);
  auto f = ByName(m.TakeFigures());
  EXPECT_LT(f["precision_check_cosine_ppm"][1], 995000);
  EXPECT_EQ(f["precision_switches"], std::vector<int64_t>{1});
  EXPECT_EQ(f["linear_dtype_bits"], std::vector<int64_t>{16});
  EXPECT_EQ(state->generation(), 1);
  const PrecisionChoice plan = state->plan();
  EXPECT_EQ(plan.dtype, LinearDType::kBFloat16);
  EXPECT_EQ(plan.bucket_dtypes, (std::vector<LinearDType>{LinearDType::kFloat32, LinearDType::kBFloat16}));
  // A lane still on the old plan reports the same break: the plan no longer runs int8, no second switch.
  PrecisionMonitor other(state, {}, 1, "m");
  other.Check(ref, got, 4, dtypes);
  EXPECT_EQ(ByName(other.TakeFigures()).count("precision_switches"), 0u);
  EXPECT_EQ(state->generation(), 1);
}

TEST(PrecisionMonitor, WithoutBFloat16Int8GoesStraightToFloat32) {
  auto state = State(/*bf16_runs=*/false);
  PrecisionMonitor m(state, {}, 1, "m");
  std::vector<float> ref, got;
  Rows(2.0, ref, got);
  const std::vector<LinearDType> dtypes = {LinearDType::kInt8, LinearDType::kInt8};
  m.Check(ref, got, 4, dtypes);
  EXPECT_EQ(state->plan().dtype, LinearDType::kFloat32);
  EXPECT_EQ(ByName(m.TakeFigures())["linear_dtype_bits"], std::vector<int64_t>{32});
}

TEST(PrecisionMonitor, RowsComputedInFloat32AreNotChecked) {
  auto state = State();
  PrecisionMonitor m(state, {}, 1, "m");
  std::vector<float> ref, got;
  Rows(2.0, ref, got);
  const std::vector<LinearDType> dtypes = {LinearDType::kInt8, LinearDType::kFloat32};
  m.Check(ref, got, 4, dtypes);
  auto f = ByName(m.TakeFigures());
  EXPECT_EQ(f["precision_check_cosine_ppm"], std::vector<int64_t>{1000000});
  EXPECT_EQ(state->generation(), 0);
}

TEST(PrecisionMonitor, AStricterBoundSwitchesWhatTheDefaultKeeps) {
  PrecisionTolerance strict;
  strict.min_cosine_int8 = strict.min_cosine_bf16 = 0.99999;
  auto state = State();
  PrecisionMonitor m(state, strict, 1, "m");
  std::vector<float> ref, got;
  Rows(0.1, ref, got);  // kept under the default 0.995 (test above)
  const std::vector<LinearDType> dtypes = {LinearDType::kInt8, LinearDType::kInt8};
  m.Check(ref, got, 4, dtypes);
  EXPECT_EQ(state->plan().dtype, LinearDType::kBFloat16);
}

TEST(PrecisionMonitor, AClassifierRecordsArgmaxAgreementAndSwitchesOnAChangedArgmax) {
  PrecisionTolerance t;
  t.kind = PrecisionTolerance::Kind::kClassifier;
  t.max_prob_diff = 1.0;  // only the argmax can break it
  auto state = State();
  PrecisionMonitor m(state, t, 1, "m");
  const std::vector<float> ref = {0.7f, 0.2f, 0.1f, 0.1f, 0.6f, 0.3f};
  const std::vector<float> got = {0.69f, 0.21f, 0.1f, 0.1f, 0.3f, 0.6f};  // row 1's argmax moves
  const std::vector<LinearDType> dtypes = {LinearDType::kInt8, LinearDType::kInt8};
  m.Check(ref, got, 3, dtypes);
  auto f = ByName(m.TakeFigures());
  EXPECT_EQ(f["precision_check_argmax_same"], (std::vector<int64_t>{1, 0}));
  ASSERT_EQ(f["precision_check_prob_diff_ppm"].size(), 2u);
  EXPECT_NEAR(f["precision_check_prob_diff_ppm"][1], 300000, 1);
  EXPECT_EQ(f["precision_switches"], std::vector<int64_t>{1});
}

}  // namespace precision_monitor_test
}  // namespace dfw
