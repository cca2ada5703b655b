#!/usr/bin/env bash
# The whole test suite, from a fresh machine: packages, build (warnings as errors), unit and
# integration tests, the sanitizer build of the unit tests, and short fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

echo "== build (RelWithDebInfo, -Werror)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFW_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300

echo "== sanitizer build (ASan + UBSan) of the unit tests"
# The parsers and engines that take untrusted input; the process-level tests run in the main build.
asan_modules=(common metrics record options catalog plan validate stages pipeline inference backend job)
asan_targets=(); for m in "${asan_modules[@]}"; do asan_targets+=("dfw_${m}_tests"); done
label_regex="^($(IFS='|'; echo "${asan_modules[*]}"))$"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DDFW_SANITIZE=ON -DDFW_WITH_CUDA=OFF -DDFW_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs" --target "${asan_targets[@]}"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 600 -L "$label_regex"

echo "== fuzz (short runs)"
# RelWithDebInfo: a Debug build compiles ~2 min faster here but runs ~100x fewer inputs in 5 s.
bash scripts/fuzz.sh "${DFW_FUZZ_SECONDS:-5}"
