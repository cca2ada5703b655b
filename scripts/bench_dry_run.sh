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
  t0=${EPOCHREALTIME/./}  # microseconds, without forking date
  "$bin" "${args[@]}" >/dev/null
  t=$(( (${EPOCHREALTIME/./} - t0) * 1000 ))
  total=$((total + t)); max=$(( t > max ? t : max )); min=$(( ${min:-$t} < t ? ${min:-$t} : t ))
done
# CPU time of the child processes (user + sys), less sensitive to a busy machine than wall time.
tmp=$(mktemp); times >"$tmp"  # the builtin in this shell, not in a subshell (which has no children)
cpu=$(tail -1 "$tmp" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); print (u[1] * 60 + u[2] + s[1] * 60 + s[2]) }'); rm -f "$tmp"
awk -v total="$total" -v n="$n" -v min="$min" -v max="$max" -v cpu="$cpu" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
  printf "dry run end to end: %d runs, wall mean %.2f ms (min %.2f, max %.2f), CPU %.2f ms/run, load average %s\n",
         n, total / n / 1e6, min / 1e6, max / 1e6, cpu * 1000 / (n + 1), load }'
