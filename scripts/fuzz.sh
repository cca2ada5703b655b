#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for SECONDS (default 10).
# Seeds come from fuzz/corpus/<target>/ when present; crashes are written to build-fuzz/crashes/.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#        scripts/fuzz.sh --build-only [EXTRA_TARGET...]   configure + build the fuzz targets and the
#                                                        extra targets (e.g. unit tests) in one go
# The tree is a sanitizer build as a whole (DFW_FUZZ implies DFW_SANITIZE), so CI builds its ASan
# unit tests here too. Flags: -O1 with line tables and assertions on (measured here: a TU compiles in
# about the time of gcc -O0 -g -fsanitize, 15-35% faster than clang -O2 -g; fuzzing stays optimised).
set -euo pipefail
cd "$(dirname "$0")/.."
# Targets that load the pipeline start the embedded CPython, which keeps what it imported until the
# process ends: LeakSanitizer skips only allocations made inside it (scripts/lsan_python.supp).
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan_python.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
build_only=0
if [ "${1:-}" = "--build-only" ]; then build_only=1; shift; secs=0; else secs=${1:-10}; shift || true; fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${DFW_FUZZ_OPT_FLAGS:--O1 -gline-tables-only}" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="${DFW_FUZZ_OPT_FLAGS:--O1 -gline-tables-only}" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDFW_FUZZ=ON -DDFW_WITH_CUDA=OFF -DDFW_BENCH=OFF >/dev/null
fuzzers=()
for f in fuzz/*_fuzz.cc; do [ -e "$f" ] && fuzzers+=("$(basename "$f" .cc)"); done
if ((build_only)); then
  cmake --build build-fuzz -j"$(nproc)" --target "${fuzzers[@]}" "$@"
  exit 0
fi
targets=("$@")
((${#targets[@]})) || targets=("${fuzzers[@]}")
((${#targets[@]})) || { echo "fuzz: no targets"; exit 0; }
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
mkdir -p build-fuzz/crashes
for t in "${targets[@]}"; do
  work=build-fuzz/corpus/$t; mkdir -p "$work"
  seeds=(); [ -d "fuzz/corpus/$t" ] && seeds=("fuzz/corpus/$t")
  echo "fuzz: $t for ${secs}s"
  build-fuzz/fuzz/$t "$work" "${seeds[@]}" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix=build-fuzz/crashes/ 2>&1 | grep -E '^(stat::number_of_executed_units|==.*ERROR|SUMMARY)' || true
  # A slow unit (over libFuzzer's -report_slow_units, 10 s) is reported, not failed: it is a large
  # legal input on an instrumented build; hangs still fail, as timeout- artifacts.
  for s in build-fuzz/crashes/slow-unit-*; do [ -e "$s" ] && echo "fuzz: $t: slow input kept as $s"; done
  if ls build-fuzz/crashes/ 2>/dev/null | grep -v '^slow-unit-' | grep -q .; then
    echo "fuzz: $t found a crash: $(ls build-fuzz/crashes | grep -v '^slow-unit-')"; exit 1
  fi
done
