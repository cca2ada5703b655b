#!/usr/bin/env bash
# End-to-end dry-run benchmark: runs the issue's acceptance command N times (default 200) with the
# built binary and prints the mean, min and max wall time per run in milliseconds.
# Usage: scripts/bench_dry_run.sh [BUILD_DIR] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; n=${2:-200}
bin=$dir/src/cli/dfworker
if [ ! -x "$bin" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$dir" --target dfworker
fi
args=(run pipelines/default.yaml --dry_run
      --dataflow_service_options="worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps"
      --machine_type=g2-standard-8)
"$bin" "${args[@]}" >/dev/null  # warm the page cache; fails the script if the dry run fails
total=0; min=; max=0
for ((i = 0; i < n; i++)); do
  t0=$(date +%s%N)
  "$bin" "${args[@]}" >/dev/null
  t=$(( $(date +%s%N) - t0 ))
  total=$((total + t)); max=$(( t > max ? t : max )); min=$(( ${min:-$t} < t ? ${min:-$t} : t ))
done
awk -v total="$total" -v n="$n" -v min="$min" -v max="$max" 'BEGIN {
  printf "dry run end to end: %d runs, mean %.2f ms, min %.2f ms, max %.2f ms\n", n, total / n / 1e6, min / 1e6, max / 1e6 }'
