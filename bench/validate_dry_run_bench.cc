// In-process cost of a dry run: parse flags → plan → validate → render (no process start-up).
#include <benchmark/benchmark.h>

#include "dfw/catalog/catalog.h"
#include "dfw/options/parse.h"
#include "dfw/plan/plan.h"
#include "dfw/validate/report.h"
#include "dfw/validate/validate.h"
#include "bench_main.h"

namespace {

const std::vector<std::string> kArgs = {
    "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps",
    "--machine_type=g2-standard-8", "--experiments=use_runner_v2", "--number_of_worker_harness_threads=4"};

void BM_LoadEmbeddedCatalog(benchmark::State& state) {
  for (auto _ : state) {
    auto catalog = dfw::Catalog::LoadEmbedded();
    benchmark::DoNotOptimize(catalog.ok());
  }
}
BENCHMARK(BM_LoadEmbeddedCatalog);

void BM_ParsePlanValidateRender(benchmark::State& state) {
  auto catalog = dfw::Catalog::LoadEmbedded();
  if (!catalog.ok()) return state.SkipWithError(catalog.status().ToString().c_str());
  for (auto _ : state) {
    dfw::PipelineOptions options = dfw::ParsePipelineOptions(kArgs);
    auto plan = dfw::MakePlan(options, *catalog, {}, dfw::HostInfo{8, 0, std::nullopt, ""});
    auto diagnostics = dfw::Validate(options, *catalog, plan.ok() ? &*plan : nullptr);
    std::string json = dfw::RenderJsonReport(diagnostics, plan.ok() ? &*plan : nullptr);
    benchmark::DoNotOptimize(json.data());
  }
}
BENCHMARK(BM_ParsePlanValidateRender);

}  // namespace

DFW_BENCHMARK_MAIN();
