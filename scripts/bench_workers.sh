#!/usr/bin/env bash
# Process-scaling benchmark of the worker VM (issue 5): records/s for 1, 2, 4 and 8 SDK processes
# on a CPU-bound fake job (each record busy-spins SPIN_US microseconds, standing in for CPU stages),
# and the start-up time from launch to the first committed bundle (as logged by the launcher).
#   scripts/bench_workers.sh [BUILD_DIR=build] [RECORDS=4000] [SPIN_US=500]
set -euo pipefail
BUILD=${1:-build}
RECORDS=${2:-4000}
SPIN=${3:-500}
BIN="$BUILD/tests/integration/dfw_fake_job"
[[ -x "$BIN" ]] || { echo "bench_workers: $BIN not built (cmake --build $BUILD --target dfw_fake_job)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/dfw-bench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
seq -f "record-%g" 0 $((RECORDS - 1)) > "$WORK/in.txt"
printf "%-10s %12s %12s %22s\n" processes seconds records/s first_commit_ms
for n in 1 2 4 8; do
  start=$(date +%s.%N)
  DFW_TEST_RECORD_SPIN_US=$SPIN "$BIN" run --input "$WORK/in.txt" --output "$WORK/out-$n.txt" --processes "$n" \
    --lines_per_bundle 50 --job_dir "$WORK/job-$n" > "$WORK/log-$n.txt" 2>&1
  end=$(date +%s.%N)
  cmp -s "$WORK/in.txt" "$WORK/out-$n.txt" || { echo "bench_workers: wrong output with $n processes" >&2; exit 1; }
  first=$(sed -n 's/.*first bundle committed \([0-9.]*\) ms.*/\1/p' "$WORK/log-$n.txt")
  awk -v n="$n" -v s="$start" -v e="$end" -v r="$RECORDS" -v f="$first" \
    'BEGIN { printf "%-10d %12.2f %12.0f %22s\n", n, e - s, r / (e - s), f }'
done
# Start-up alone: 8 processes, one tiny bundle, no per-record work.
seq 1 8 > "$WORK/tiny.txt"
"$BIN" run --input "$WORK/tiny.txt" --output "$WORK/tiny-out.txt" --processes 8 --lines_per_bundle 8 \
  --job_dir "$WORK/job-tiny" > "$WORK/log-tiny.txt" 2>&1
echo "start-up, 8 processes, launch to first committed bundle: $(sed -n 's/.*first bundle committed \([0-9.]*\) ms.*/\1/p' "$WORK/log-tiny.txt") ms"
