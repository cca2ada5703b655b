// Combine's configuration and its combine functions (accumulators that merge), shared by the
// partial sink and the merge source (combine.cc).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/expression.h"
#include "dfw/record/value.h"
#include "dfw/stages/stage.h"
#include "windowing.h"

namespace dfw::stages_internal {

enum class CombineFnKind { kSum, kCount, kMean, kMin, kMax, kAll, kAny, kGroup, kConcat, kTopLargest, kTopSmallest };

struct Aggregation {
  std::string output;  // the output field
  std::unique_ptr<CompiledExpression> value;  // `value:` (a field name or an expression)
  CombineFnKind fn = CombineFnKind::kSum;
  int64_t n = 0;       // top-n
  int input = 0;       // index into CombineSpec::inputs: aggregations of the same value share one
};

// One distinct `value:` of the aggregations, evaluated once per row.
struct CombineInput {
  const CompiledExpression* expr = nullptr;  // owned by the first aggregation with this value
  std::string field;  // the value is this field as it is (no expression to evaluate); "" otherwise
};

struct CombineSpec {
  std::vector<std::string> group_by;
  std::vector<Aggregation> aggregations;
  std::vector<CombineInput> inputs;
  int64_t partitions = 1;  // shuffle partitions (fused stages); 1 when not fused
  std::optional<WindowFn> window;  // the Combine's own `windowing:` (applied to its input rows)
};

// Parses group_by/combine/language of a Combine transform. Errors name the field and the allowed
// values; Beam's combine fns that dfworker has not (or a Python class other than TopCombineFn) are
// kUnimplemented naming the fn.
Result<CombineSpec> ParseCombineSpec(const StageConfig& config);

// One aggregation's running state. Kept native while a bundle folds rows in (no allocation per
// row for sums, counts and means); a Value only in the shuffle file (ToValue/FromValue).
struct Accumulator {
  Value v;      // sum (int or float), min/max (null = nothing seen yet), all/any
  List items;   // group, concat, top-n (best first)
  double sum = 0;  // mean
  int64_t n = 0;   // count, mean
};
using Accumulators = std::vector<Accumulator>;

// An empty accumulator for each aggregation.
Accumulators NewAccumulators(const CombineSpec& spec);
// Folds one input value in (a Python-style TypeError message when the value cannot be combined).
Status AddInput(const Aggregation& a, Accumulator& acc, const Value& input);
// Merges `from` into `into` (both accumulators of `a`).
Status MergeAccumulator(const Aggregation& a, Accumulator& into, Accumulator from);
// The shuffle form of an accumulator, and back (kDataLoss when the shape does not fit the fn).
Value ToValue(const Aggregation& a, const Accumulator& acc);
Result<Accumulator> FromValue(const Aggregation& a, Value v);
// The output value of a finished accumulator.
Value ExtractOutput(const Aggregation& a, Accumulator acc);

// The key of a row: its group_by values, as a list. A list-valued key field (unhashable in
// Python) or a missing field is an error naming the field.
Result<Value> GroupKey(const CombineSpec& spec, const Row& row);


// Stable 64-bit hash of an encoded key (FNV-1a): the same partition in every process and build.
uint64_t KeyHash(std::string_view encoded_key);

}  // namespace dfw::stages_internal
