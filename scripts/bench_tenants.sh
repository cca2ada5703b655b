#!/usr/bin/env bash
# Tenants benchmark (issue 19), through the product: the two committed pipelines (the MLP
# classifier, pipelines/default.yaml, and the sentence embeddings, pipelines/embed_sentences.yaml)
#   together:   one `dfworker run --tenants` with both tenants on one emulated L4 under MPS, with
#               borrowing: when one tenant ends, the other's launcher starts its slots' SDK processes;
#   no-borrow:  the same, with borrowing: false (each tenant keeps its guaranteed processes only);
#   one-by-one: the same two tenants, each alone in its own `dfworker run --tenants`, one after the other.
# Inputs are the committed ones replicated (CLASSIFY_REPS x 5,724 rows, EMBED_REPS x 35 sentences);
# each tenant gets PROCS guaranteed SDK processes. The two modes alternate REPS times (this machine
# is noisy and shared: compare within one run); printed: every wall time, the median of each mode,
# per-tenant records/s (rows / the tenant's own elapsed_s in its metrics.json) and the ratio
# together / one-by-one, and what was borrowed in each together run (tenants_report.json "borrowing").
# Every run's output is checked: all rows in the main or the error output.
#   scripts/bench_tenants.sh [BUILD_DIR=build] [REPS=3] [CLASSIFY_REPS=20] [EMBED_REPS=40] [PROCS=1]
set -euo pipefail
BUILD=${1:-build}
REPS=${2:-3}
CLASSIFY_REPS=${3:-20}
EMBED_REPS=${4:-40}
PROCS=${5:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$(cd "$BUILD" 2>/dev/null && pwd)/src/cli/dfworker"
[[ -x "$BIN" ]] || { echo "bench_tenants: $BIN not built (cmake --build $BUILD --target dfworker)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/dfw-bt-XXXXXX)  # short: MPS socket paths live under it
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
mkdir in
for _ in $(seq "$CLASSIFY_REPS"); do cat "$ROOT/pipelines/data/breast_cancer_demo.jsonl"; done > in/classify.jsonl
for _ in $(seq "$EMBED_REPS"); do cat "$ROOT/testdata/tiny_bert/sentences.jsonl"; done > in/sentences.jsonl
CLASSIFY_ROWS=$(wc -l < in/classify.jsonl)
EMBED_ROWS=$(wc -l < in/sentences.jsonl)
sed -e "s#path: pipelines/data/breast_cancer_demo.jsonl#path: in/classify.jsonl#" \
    -e "s#model_path: pipelines/models/breast_cancer_mlp#model_path: $ROOT/pipelines/models/breast_cancer_mlp#" \
    "$ROOT/pipelines/default.yaml" > classify.yaml
sed -e "s#path: testdata/tiny_bert/sentences.jsonl#path: in/sentences.jsonl#" \
    -e "s#model_path: testdata/tiny_bert #model_path: $ROOT/testdata/tiny_bert #" \
    "$ROOT/pipelines/embed_sentences.yaml" > embed.yaml
grep -q "in/classify.jsonl" classify.yaml && grep -q "in/sentences.jsonl" embed.yaml && grep -q "model_path: $ROOT/testdata" embed.yaml ||
  { echo "bench_tenants: the committed pipelines changed shape; update the sed" >&2; exit 2; }
header() {
  cat <<YAML
options:
  machine_type: g2-standard-8
  dataflow_service_options:
    - worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps
tenants:
YAML
}
classify_entry="  - {name: classify, pipeline: classify.yaml, gpu_memory: 8GiB, active_thread_percentage: 50, sdk_processes: $PROCS}"
embed_entry="  - {name: embed, pipeline: embed.yaml, gpu_memory: 8GiB, active_thread_percentage: 50, sdk_processes: $PROCS}"
{ header; echo "$classify_entry"; echo "$embed_entry"; } > both.yaml
{ echo "borrowing: false"; cat both.yaml; } > both-no-borrow.yaml
{ header; echo "$classify_entry"; } > classify-only.yaml
{ header; echo "$embed_entry"; } > embed-only.yaml

rows_in() { cat "$@" 2>/dev/null | grep -c . || true; }
check() {  # every input row in the main or the error output
  local c e
  c=$(( $(rows_in out/default/predictions-*) + $(rows_in out/default/errors-*) ))
  e=$(( $(rows_in out/embed_sentences/embeddings-*) + $(rows_in out/embed_sentences/errors-*) ))
  [[ $c == "$CLASSIFY_ROWS" && $e == "$EMBED_ROWS" ]] ||
    { echo "bench_tenants: rows lost: classify $c of $CLASSIFY_ROWS, embed $e of $EMBED_ROWS (logs in $WORK)" >&2; trap - EXIT; exit 1; }
}
borrowed() {  # "embed +2 at 1.3 s (after classify)" per borrowing event, or "none"
  python3 -c "import json,sys
b = json.load(open(sys.argv[1])).get('borrowing', [])
print('; '.join('%s +%d at %.1f s (after %s)' % (e['tenant'], e['processes_after'] - e['processes_before'], e['at_s'], e['after']) for e in b) or 'none')" "$1"
}
elapsed() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['elapsed_s'])" "$1"; }
# run_tenants FILE JOB → appends the log to JOB.log; returns dfworker's status.
run_tenants() { "$BIN" run --tenants "$1" --job_dir "$2" --accelerator_backend=emulated > "$2.log" 2>&1; }

declare -a T_WALL S_WALL N_WALL T_C T_E S_C S_E N_C N_E
for r in $(seq "$REPS"); do
  for mode in together no-borrow one-by-one; do
    rm -rf out job-*
    start=$(date +%s.%N)
    if [[ $mode == together ]]; then
      run_tenants both.yaml job-both
      wall=$(echo "$(date +%s.%N) - $start" | bc)
      T_WALL+=("$wall"); T_C+=("$(elapsed job-both/tenants/classify/metrics.json)"); T_E+=("$(elapsed job-both/tenants/embed/metrics.json)")
      note="borrowing: $(borrowed job-both/tenants_report.json)"
    elif [[ $mode == no-borrow ]]; then
      run_tenants both-no-borrow.yaml job-nb
      wall=$(echo "$(date +%s.%N) - $start" | bc)
      N_WALL+=("$wall"); N_C+=("$(elapsed job-nb/tenants/classify/metrics.json)"); N_E+=("$(elapsed job-nb/tenants/embed/metrics.json)")
      note=""
    else
      run_tenants classify-only.yaml job-c
      run_tenants embed-only.yaml job-e
      wall=$(echo "$(date +%s.%N) - $start" | bc)
      note=""
      S_WALL+=("$wall"); S_C+=("$(elapsed job-c/tenants/classify/metrics.json)"); S_E+=("$(elapsed job-e/tenants/embed/metrics.json)")
    fi
    check
    printf 'rep %d %-10s wall %6.2f s  %s\n' "$r" "$mode" "$wall" "$note"
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
tw=$(median "${T_WALL[@]}"); sw=$(median "${S_WALL[@]}"); nw=$(median "${N_WALL[@]}")
nc=$(median "${N_C[@]}"); ne=$(median "${N_E[@]}")
tc=$(median "${T_C[@]}"); te=$(median "${T_E[@]}"); sc=$(median "${S_C[@]}"); se=$(median "${S_E[@]}")
echo "inputs: classify $CLASSIFY_ROWS rows, embed $EMBED_ROWS sentences; $PROCS SDK process(es) per tenant; $(nproc) cores; $REPS reps (medians)"
printf 'together (with borrowing): wall %6.2f s | classify %8.0f rec/s (%.2f s) | embed %6.0f rec/s (%.2f s)\n' "$tw" \
  "$(echo "$CLASSIFY_ROWS / $tc" | bc -l)" "$tc" "$(echo "$EMBED_ROWS / $te" | bc -l)" "$te"
printf 'together, no borrowing:    wall %6.2f s | classify %8.0f rec/s (%.2f s) | embed %6.0f rec/s (%.2f s)\n' "$nw" \
  "$(echo "$CLASSIFY_ROWS / $nc" | bc -l)" "$nc" "$(echo "$EMBED_ROWS / $ne" | bc -l)" "$ne"
printf 'one-by-one:                wall %6.2f s | classify %8.0f rec/s (%.2f s) | embed %6.0f rec/s (%.2f s)\n' "$sw" \
  "$(echo "$CLASSIFY_ROWS / $sc" | bc -l)" "$sc" "$(echo "$EMBED_ROWS / $se" | bc -l)" "$se"
printf 'ratio together (borrowing) / one-by-one wall time: %.2f (below 1: running the tenants together is faster)\n' "$(echo "$tw / $sw" | bc -l)"
printf 'ratio together (borrowing) / together without: %.2f (below 1: borrowing helps)\n' "$(echo "$tw / $nw" | bc -l)"
