#!/usr/bin/env bash
# Pipeline benchmark: ReadFromJson → MapToFields → Filter → WriteToJson on 1M records (one thread)
# next to simdjson's raw parse rate of the same file. Prints both in records/s (items_per_second).
# Usage: scripts/bench_pipeline.sh [BUILD_DIR]   (default build-bench, Release)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-bench}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDFW_WITH_CUDA=OFF -DDFW_BENCH=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" --target pipeline_json_bench
"$dir/bench/pipeline_json_bench" --benchmark_counters_tabular=true
