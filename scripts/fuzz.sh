#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for SECONDS (default 10).
# Seeds come from fuzz/corpus/<target>/ when present; crashes are written to build-fuzz/crashes/.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}; shift || true
# DFW_FUZZ_BUILD_TYPE: RelWithDebInfo (default); Debug compiles in ~3.5 min instead of ~6 here but
# executes ~100x fewer inputs per second (5 s: ~500 instead of ~50,000 for the safetensors target).
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE="${DFW_FUZZ_BUILD_TYPE:-RelWithDebInfo}" -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DDFW_FUZZ=ON -DDFW_WITH_CUDA=OFF -DDFW_BENCH=OFF >/dev/null
targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in fuzz/*_fuzz.cc; do [ -e "$f" ] && targets+=("$(basename "$f" .cc)"); done
fi
((${#targets[@]})) || { echo "fuzz: no targets"; exit 0; }
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
mkdir -p build-fuzz/crashes
for t in "${targets[@]}"; do
  work=build-fuzz/corpus/$t; mkdir -p "$work"
  seeds=(); [ -d "fuzz/corpus/$t" ] && seeds=("fuzz/corpus/$t")
  echo "fuzz: $t for ${secs}s"
  build-fuzz/fuzz/$t "$work" "${seeds[@]}" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix=build-fuzz/crashes/ 2>&1 | grep -E '^(stat::number_of_executed_units|==.*ERROR|SUMMARY)' || true
  if ls build-fuzz/crashes/ 2>/dev/null | grep -q .; then echo "fuzz: $t found a crash: $(ls build-fuzz/crashes)"; exit 1; fi
done
