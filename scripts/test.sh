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

# pyarrow (not a Debian package) for the Parquet IOs, which run in the embedded Python: a venv of
# Debian's python3.11, the interpreter whose libpython3.11 dfworker embeds (a pyenv python3 on PATH
# would not match it), seeing the system's packages (python3-jinja2, numpy). Without a package index
# the Parquet tests skip saying so.
echo "== Python environment for the Parquet tests (build/pyarrow-venv)"
pyarrow_venv="$PWD/build/pyarrow-venv"
if [[ "$(/usr/bin/python3.11 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" != "3.11" ]]; then
  echo "pyarrow venv: /usr/bin/python3.11 (Debian's python3.11, matching libpython3.11) is missing: Parquet tests will skip"
elif { [[ -x "$pyarrow_venv/bin/python" ]] || /usr/bin/python3.11 -m venv --system-site-packages "$pyarrow_venv"; } &&
     { "$pyarrow_venv/bin/python" -c 'import pyarrow, sys; sys.exit(pyarrow.__version__ != "26.0.1")' 2>/dev/null ||
       "$pyarrow_venv/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 30 --retries 1 pyarrow==26.0.1; }; then
  export DFW_TEST_PYARROW_PYTHON="$pyarrow_venv/bin/python" DFW_BEAM_SUITE_PYTHON_ENV="$pyarrow_venv"
else
  echo "pyarrow venv: could not install pyarrow==26.0.1 into $pyarrow_venv (no package index reachable?): Parquet tests will skip"
fi

echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300

echo "== sanitizer build (clang, ASan + UBSan + libFuzzer): unit tests and fuzz targets in one tree"
# The parsers and engines that take untrusted input; the process-level tests run in the main build.
asan_modules=(common metrics record options catalog plan validate tenants report stages pipeline tokenizers inference backend job)
asan_targets=(); for m in "${asan_modules[@]}"; do asan_targets+=("dfw_${m}_tests"); done
label_regex="^($(IFS='|'; echo "${asan_modules[*]}"))$"
# (Test sources build at -O0 in this tree, the code under test at -O1: cmake/dfw.cmake.)
bash scripts/fuzz.sh --build-only "${asan_targets[@]}"
# pyarrow's native libraries are not instrumented and keep process-wide pools: the Parquet tests
# run in the main build only.
env -u DFW_TEST_PYARROW_PYTHON -u DFW_BEAM_SUITE_PYTHON_ENV \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS="suppressions=$PWD/scripts/lsan_python.supp" \
  ctest --test-dir build-fuzz --output-on-failure -j"$jobs" --timeout 600 -L "$label_regex"

echo "== fuzz (short runs)"
bash scripts/fuzz.sh "${DFW_FUZZ_SECONDS:-3}"
