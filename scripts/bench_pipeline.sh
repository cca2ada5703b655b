#!/usr/bin/env bash
# Pipeline benchmark: ReadFromJson → MapToFields → Filter → WriteToJson on 1M records (one thread)
# next to simdjson's raw parse rate of the same file, the cost of only writing the output bytes, and
# the floor for any engine: the same work hand-fused into one loop (BM_HandFusedFloor/0 with the
# simdjson DOM, /1 with On-Demand), checked to write the pipeline's bytes exactly.
# Prints records/s (items_per_second) for each. The binary is built for AVX2 (On-Demand's kernel).
# Usage: scripts/bench_pipeline.sh [BUILD_DIR]   (default build-bench, Release)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-bench}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDFW_WITH_CUDA=OFF -DDFW_BENCH=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" --target pipeline_json_bench
# On disk (the temp dir) and, where there is one, on tmpfs: the difference is the disk's share.
echo "== working dir: ${TMPDIR:-/tmp} (disk)"
"$dir/bench/pipeline_json_bench" --benchmark_counters_tabular=true
if [[ -d /dev/shm && -w /dev/shm ]]; then
  echo "== working dir: /dev/shm (tmpfs: CPU cost only)"
  DFW_BENCH_DIR=/dev/shm "$dir/bench/pipeline_json_bench" --benchmark_counters_tabular=true
fi
