#!/usr/bin/env bash
# Does work reach every SDK process when the input is ONE file? (issue 14, job-sized bundles)
# Through the product (`dfworker run`), the default pipeline's transforms (ReadFromJson →
# RunInference with the bundled MLP on the CPU → WriteToJson) over one file of the breast-cancer
# sample replicated to about SIZE_MB, one harness thread and one BLAS thread per SDK process:
#  1. wall time of 1, 2 and 8 SDK processes, ROUNDS rounds in alternating order (the figures are
#     the best of each; these machines are noisy), ratios 2p/1p (goal >= 1.8) and 8p/2p (goal >= 0.9);
#  2. per-process records of the 2- and 8-process runs (the spread: min/max);
#  3. one SDK process SIGSTOPped for 3 s after the first commit, then SIGCONT, with 2 processes:
#     extra wall time over the undisturbed 2-process run (goal < 3 s).
# Every run's output is checked: all input rows are in the predictions or the error output.
#   scripts/bench_splits.sh [BUILD_DIR=build] [SIZE_MB=5] [ROUNDS=3]
set -euo pipefail
BUILD=${1:-build}
SIZE_MB=${2:-5}
ROUNDS=${3:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$(cd "$BUILD" 2>/dev/null && pwd)/src/cli/dfworker"
[[ -x "$BIN" ]] || { echo "bench_splits: $BIN not built (cmake --build $BUILD --target dfworker)" >&2; exit 2; }
MODEL="$ROOT/pipelines/models/breast_cancer_mlp"
WORK=$(mktemp -d /tmp/dfw-bench-splits-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
mkdir in
rows=$(( SIZE_MB * 1024 * 1024 / ($(wc -c < "$MODEL/sample.jsonl") / $(wc -l < "$MODEL/sample.jsonl")) ))
awk -v n="$rows" '{ l[NR] = $0 } END { for (i = 0; i < n; i++) print l[i % NR + 1] }' "$MODEL/sample.jsonl" > in/one.jsonl
TOTAL=$(wc -l < in/one.jsonl)
sed -e "s#path: pipelines/data/breast_cancer_demo.jsonl#path: in/one.jsonl#" \
    -e "s#model_path: pipelines/models/breast_cancer_mlp#model_path: $MODEL#" \
    -e "s#out/default/#out/#" "$ROOT/pipelines/default.yaml" > p.yaml
grep -q "in/one.jsonl" p.yaml || { echo "bench_splits: pipelines/default.yaml changed shape; update the sed" >&2; exit 2; }

# run NAME PROCESSES [stop] → WALL (s); the log is NAME.log. "stop": SIGSTOP one SDK process for
# 3 s once the first bundle is committed.
run() {
  local name=$1 n=$2 stop=${3:-}
  rm -rf out "job-$name"
  local machine=(--machine_type=n1-standard-$n)
  [[ $n == 1 ]] && machine=(--experiments=no_use_multiple_sdk_containers)
  local start end
  start=$(date +%s.%N)
  OPENBLAS_NUM_THREADS=1 "$BIN" run p.yaml --job_dir "job-$name" "${machine[@]}" --number_of_worker_harness_threads=1 \
    > "$name.log" 2>&1 &
  local pid=$!
  if [[ -n $stop ]]; then
    while [[ ! -s "job-$name/manifest.jsonl" ]] && kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
    local victim
    victim=$(pgrep -f "sdk_harness --job_dir job-$name --index 0" | head -1 || true)
    if [[ -n $victim ]]; then
      kill -STOP "$victim"; sleep 3; kill -CONT "$victim"
    else
      echo "bench_splits: no SDK process to stop (the run ended first?)" >&2
    fi
  fi
  wait "$pid" || { echo "bench_splits: run $name failed:" >&2; cat "$name.log" >&2; exit 1; }
  end=$(date +%s.%N)
  WALL=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }')
  local got
  got=$(cat out/predictions-*.jsonl out/errors-*.jsonl 2>/dev/null | wc -l)
  [[ $got == "$TOTAL" ]] || { echo "bench_splits: $name wrote $got of $TOTAL rows" >&2; cat "$name.log" >&2; exit 1; }
}
best() { printf "%s\n" "$@" | sort -n | head -1; }
spread() { sed -n 's/^SDK processes: .*(records per process: \(.*\))$/\1/p' "$1"; }

echo "one file of $(du -h in/one.jsonl | cut -f1) ($TOTAL rows), $(nproc) CPUs, 1 harness thread and 1 BLAS thread per SDK process"
declare -A W
W[1]="" W[2]="" W[8]=""
for r in $(seq 1 "$ROUNDS"); do
  order=(1 2 8); (( r % 2 == 0 )) && order=(8 2 1)
  for n in "${order[@]}"; do
    run "p$n-r$r" "$n"
    W[$n]+="$WALL "
  done
done
b1=$(best ${W[1]}); b2=$(best ${W[2]}); b8=$(best ${W[8]})
printf "%-10s %-28s %s\n" processes "wall_s (best; all rounds)" "bundles, records per process (last round)"
for n in 1 2 8; do
  printf "%-10s %-28s %s\n" "$n" "$(best ${W[$n]}) (${W[$n]% })" \
    "$(sed -n 's/.*job dir [^ ]* (\([0-9]*\) bundles.*/\1 bundles/p' "p$n-r$ROUNDS.log"), $(spread "p$n-r$ROUNDS.log")"
done
awk -v a="$b1" -v b="$b2" -v c="$b8" \
  'BEGIN { printf "ratios: 2p/1p = %.2f (goal >= 1.8)   8p/2p = %.2f (goal >= 0.90)\n", a / b, b / c }'
run stop 2 stop
awk -v s="$WALL" -v b="$b2" 'BEGIN { printf "one of 2 SDK processes stopped for 3 s: %.2f s vs %.2f s undisturbed: +%.2f s (goal < 3 s)\n", s, b, s - b }'
echo "stopped run: $(spread stop.log)"
