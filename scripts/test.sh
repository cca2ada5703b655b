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
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DDFW_SANITIZE=ON -DDFW_WITH_CUDA=OFF -DDFW_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 600 -LE integration

if [ -d fuzz ]; then
  echo "== fuzz (short runs)"
  bash scripts/fuzz.sh 10
fi
