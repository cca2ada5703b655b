#!/usr/bin/env bash
# The whole test suite, from a fresh machine: packages, build (warnings as errors), unit and
# integration tests, the sanitizer build of the unit tests, and short fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

# -O2 without debug info: a third less compile time than RelWithDebInfo here (measured per TU),
# and CI has no use for the DWARF; developers' default build stays RelWithDebInfo.
echo "== build (-O2, -Werror)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DDFW_WERROR=ON -DDFW_TEST_HOOKS=ON >/dev/null
cmake --build build -j"$jobs"
echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300

echo "== sanitizer build (clang, ASan + UBSan + libFuzzer): unit tests and fuzz targets in one tree"
# The parsers and engines that take untrusted input; the process-level tests run in the main build.
asan_modules=(common metrics record options catalog plan validate tenants report stages pipeline inference backend job)
asan_targets=(); for m in "${asan_modules[@]}"; do asan_targets+=("dfw_${m}_tests"); done
label_regex="^($(IFS='|'; echo "${asan_modules[*]}"))$"
# (Test sources build at -O0 in this tree, the code under test at -O1: cmake/dfw.cmake.)
bash scripts/fuzz.sh --build-only "${asan_targets[@]}"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS="suppressions=$PWD/scripts/lsan_python.supp" \
  ctest --test-dir build-fuzz --output-on-failure -j"$jobs" --timeout 600 -L "$label_regex"

echo "== fuzz (short runs)"
bash scripts/fuzz.sh "${DFW_FUZZ_SECONDS:-3}"
