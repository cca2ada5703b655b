#!/usr/bin/env bash
# Process-scaling benchmark of the worker VM (issue 5), through the product (`dfworker run`):
#  1. records/s for 1, 2, 4 and 8 SDK processes on the default pipeline's transforms
#     (pipelines/default.yaml: ReadFromJson → RunInference with the bundled breast-cancer MLP on
#     the CPU → WriteToJson, bad rows to the error output), with THREADS harness threads per
#     process (default 1: a Dataflow Python SDK process is GIL-bound to about one core, and with
#     one thread each the ratios measure what adding processes costs or gains; THREADS=2 shows
#     dfworker's default, where one process already uses both cores of this machine), with
#     its sample.jsonl replicated into FILES input files of ROWS rows each (one bundle per file);
#     processes = vCPUs of --machine_type=n1-standard-N, as on Dataflow;
#  2. the ratios 2p/1p and 8p/2p (goals on 2 cores: >= 1.8 and >= 0.9);
#  3. start-up: launch → first committed bundle with 8 processes on the default pipeline's own
#     input (one bundle), as logged by the launcher, median of STARTS runs, with the CPU time of
#     those runs.
# Every run's output is checked: all input rows are in the predictions or the error output.
# records/s = rows / wall time of the whole `dfworker run` (start-up and shutdown included); CPU
# is user+sys of the launcher and every SDK process (perf stat task-clock when perf works).
#   scripts/bench_workers.sh [BUILD_DIR=build] [FILES=16] [ROWS=10000] [STARTS=5] [THREADS=1]
set -euo pipefail
BUILD=${1:-build}
FILES=${2:-16}
ROWS=${3:-10000}
STARTS=${4:-5}
THREADS=${5:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$(cd "$BUILD" 2>/dev/null && pwd)/src/cli/dfworker"
[[ -x "$BIN" ]] || { echo "bench_workers: $BIN not built (cmake --build $BUILD --target dfworker)" >&2; exit 2; }
MODEL="$ROOT/pipelines/models/breast_cancer_mlp"
WORK=$(mktemp -d /tmp/dfw-bench-workers-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
mkdir in
for f in $(seq 0 $((FILES - 1))); do
  awk -v n="$ROWS" '{ l[NR] = $0 } END { for (i = 0; i < n; i++) print l[i % NR + 1] }' "$MODEL/sample.jsonl" \
    > "in/part-$((1000 + f)).jsonl"
done
TOTAL=$((FILES * ROWS))
# pipelines/default.yaml with the input glob and the model path made absolute.
sed -e "s#path: pipelines/data/breast_cancer_demo.jsonl#path: in/*.jsonl#" \
    -e "s#model_path: pipelines/models/breast_cancer_mlp#model_path: $MODEL#" \
    -e "s#out/default/#out/#" "$ROOT/pipelines/default.yaml" > p.yaml
grep -q "in/\*.jsonl" p.yaml || { echo "bench_workers: pipelines/default.yaml changed shape; update the sed" >&2; exit 2; }
sed -e "s#path: in/\*.jsonl#path: $MODEL/sample.jsonl#" p.yaml > startup.yaml

HAVE_PERF=no
perf stat -x, -e task-clock -o /dev/null true > /dev/null 2>&1 && HAVE_PERF=yes
# run NAME PIPELINE ARGS... → sets WALL (s) and CPU (s); the log is NAME.log.
run() {
  local name=$1 pipeline=$2
  shift 2
  rm -rf out "job-$name"
  local start end
  start=$(date +%s.%N)
  if [[ $HAVE_PERF == yes ]]; then
    perf stat -x, -e task-clock -o "$name.cpu" "$BIN" run "$pipeline" --job_dir "job-$name" "$@" > "$name.log" 2>&1
    CPU=$(awk -F, '/task-clock/ { printf "%.2f", $1 / 1000 }' "$name.cpu")
  else
    /usr/bin/time -f "%U %S" -o "$name.cpu" "$BIN" run "$pipeline" --job_dir "job-$name" "$@" > "$name.log" 2>&1
    CPU=$(awk '{ printf "%.2f", $1 + $2 }' "$name.cpu")
  fi
  end=$(date +%s.%N)
  WALL=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }')
}
rows_out() { cat out/predictions-*.jsonl out/errors-*.jsonl 2>/dev/null | wc -l; }
first_commit_ms() { sed -n 's/.*first bundle committed \([0-9.]*\) ms after launch.*/\1/p' "$1"; }

echo "dfworker run, default pipeline's transforms, $FILES files x $ROWS rows = $TOTAL rows, $(nproc) CPUs," \
  "$THREADS harness thread(s) per process"
printf "%-10s %9s %12s %9s %14s %16s\n" processes wall_s records/s cpu_s cpu_ms/1k_rec first_commit_ms
declare -A RATE
for n in 1 2 4 8; do
  run "p$n" p.yaml "--machine_type=n1-standard-$n" "--number_of_worker_harness_threads=$THREADS"
  got=$(rows_out)
  [[ $got == "$TOTAL" ]] || { echo "bench_workers: $n processes wrote $got of $TOTAL rows; log:" >&2; cat "p$n.log" >&2; exit 1; }
  grep -q "$n SDK processes" "p$n.log" || { echo "bench_workers: expected $n SDK processes" >&2; cat "p$n.log" >&2; exit 1; }
  RATE[$n]=$(awk -v r="$TOTAL" -v w="$WALL" 'BEGIN { printf "%.0f", r / w }')
  printf "%-10d %9.2f %12d %9.2f %14.1f %16s\n" "$n" "$WALL" "${RATE[$n]}" "$CPU" \
    "$(awk -v c="$CPU" -v r="$TOTAL" 'BEGIN { print c * 1e6 / r }')" "$(first_commit_ms "p$n.log")"
done
awk -v a="${RATE[1]}" -v b="${RATE[2]}" -v c="${RATE[8]}" \
  'BEGIN { printf "ratios: 2p/1p = %.2f (goal >= 1.8)   8p/2p = %.2f (goal >= 0.90)\n", b / a, c / b }'

starts=()
cpus=()
for i in $(seq 1 "$STARTS"); do
  run "start$i" startup.yaml --machine_type=n1-standard-8
  grep -q "8 SDK processes" "start$i.log" || { echo "bench_workers: start-up run did not use 8 processes" >&2; cat "start$i.log" >&2; exit 1; }
  starts+=("$(first_commit_ms "start$i.log")")
  cpus+=("$CPU")
done
median() { printf "%s\n" "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "start-up, 8 processes, launch to first committed bundle (default pipeline, its sample input): median" \
  "$(median "${starts[@]}") ms of $STARTS runs [${starts[*]}] (goal <= 150 ms); CPU of a whole run: median" \
  "$(median "${cpus[@]}") s [${cpus[*]}]"
