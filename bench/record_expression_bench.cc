// Per-row cost of compiled expressions (ns/row = the reported time per iteration), and of
// compiling one. Run: build-*/bench/record_expression_bench
#include <benchmark/benchmark.h>

#include "dfw/record/expression.h"
#include "bench_main.h"

namespace {

dfw::Row SampleRow() {
  dfw::Row r;
  r.Append("id", dfw::Value::Int(17));
  r.Append("a", dfw::Value::Int(7));
  r.Append("b", dfw::Value::Float(2.5));
  r.Append("text", dfw::Value::String("  The Quick Brown Fox Jumps Over The Lazy Dog  "));
  r.Append("label", dfw::Value::String("spam"));
  return r;
}

void EvaluatePerRow(benchmark::State& state, const char* source, dfw::ExprLanguage lang) {
  auto compiled = dfw::CompileExpression(source, lang);
  if (!compiled.ok()) {
    state.SkipWithError(compiled.status().message().c_str());
    return;
  }
  const dfw::Row row = SampleRow();
  for (auto _ : state) {
    auto v = (*compiled)->Evaluate(row);
    benchmark::DoNotOptimize(v);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_StripLower(benchmark::State& s) { EvaluatePerRow(s, "text.strip().lower()", dfw::ExprLanguage::kPython); }
void BM_ArithmeticCompare(benchmark::State& s) { EvaluatePerRow(s, "a * 2 + b > 10", dfw::ExprLanguage::kPython); }
void BM_SplitLen(benchmark::State& s) { EvaluatePerRow(s, "len(text.split()) > 3", dfw::ExprLanguage::kPython); }
void BM_LabelInList(benchmark::State& s) { EvaluatePerRow(s, "label in ['spam', 'ham']", dfw::ExprLanguage::kPython); }
void BM_FieldCopy(benchmark::State& s) { EvaluatePerRow(s, "id", dfw::ExprLanguage::kPython); }
void BM_GenericCompare(benchmark::State& s) { EvaluatePerRow(s, "a > 3", dfw::ExprLanguage::kGeneric); }

void BM_Compile(benchmark::State& state) {
  for (auto _ : state) {
    auto c = dfw::CompileExpression("text.strip().lower() if a * 2 + b > 10 else label.upper()", dfw::ExprLanguage::kPython);
    benchmark::DoNotOptimize(c);
  }
}

BENCHMARK(BM_StripLower);
BENCHMARK(BM_ArithmeticCompare);
BENCHMARK(BM_SplitLen);
BENCHMARK(BM_LabelInList);
BENCHMARK(BM_FieldCopy);
BENCHMARK(BM_GenericCompare);
BENCHMARK(BM_Compile);

}  // namespace

DFW_BENCHMARK_MAIN();
