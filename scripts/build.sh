#!/usr/bin/env bash
# Configures and builds dfworker into a build dir (default build/). With TARGETS set (e.g.
# TARGETS=dfworker), builds only those; otherwise everything (tests and benchmarks included).
# The configuration is the one scripts/test.sh uses (-O2, no debug info), so running the demo and
# then the tests in one tree never rebuilds everything.
# Usage: [TARGETS="t1 t2"] scripts/build.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
dir=${1:-build}; shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" "$@" >/dev/null
targets=()
for t in ${TARGETS:-}; do
  # The CUDA backend library exists only where nvcc was found at configure time.
  if [[ $t == dfw_backend_cuda ]] && ! ninja -C "$dir" -t targets all 2>/dev/null | grep -q '^dfw_backend_cuda:'; then continue; fi
  targets+=("$t")
done
cmake --build "$dir" -j"$(nproc)" ${targets[@]+--target "${targets[@]}"}
