// main() for the Google Benchmark targets: the library's log lines (the CPU backend's GEMM
// calibration, model loads) go to stderr, so `--benchmark_format=json > file` stays valid JSON.
#pragma once

#include <benchmark/benchmark.h>

#include "dfw/common/logging.h"

#define DFW_BENCHMARK_MAIN()                                   \
  int main(int argc, char** argv) {                            \
    (void)::dfw::InitLogging("info", "bench");                 \
    ::benchmark::Initialize(&argc, argv);                      \
    if (::benchmark::ReportUnrecognizedArguments(argc, argv)) { \
      return 1;                                                \
    }                                                          \
    ::benchmark::RunSpecifiedBenchmarks();                     \
    ::benchmark::Shutdown();                                   \
    return 0;                                                  \
  }                                                            \
  static_assert(true, "")
