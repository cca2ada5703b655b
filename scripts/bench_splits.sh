#!/usr/bin/env bash
# Does work reach every SDK process when the input is ONE file? (issue 14, job-sized bundles)
# Through the product (`dfworker run`), ReadFromJson → RunInference → WriteToJson over ONE file of
# about SIZE_MB, one harness thread and one BLAS thread per SDK process. MODEL=compute (default):
# the compute-bound MLP of scripts/bench_inference.sh (64 → 2048 → 2048 → 16, random weights made
# here, 8.4 MFLOP a row, batches of 256), so the pipeline is inference-bound; MODEL=default: the
# bundled breast-cancer MLP on its sample rows (start-up and JSON dominate: a 30 → 32 → 16 → 2 net).
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
MODEL_KIND=${MODEL:-compute}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$(cd "$BUILD" 2>/dev/null && pwd)/src/cli/dfworker"
[[ -x "$BIN" ]] || { echo "bench_splits: $BIN not built (cmake --build $BUILD --target dfworker)" >&2; exit 2; }
MODEL="$ROOT/pipelines/models/breast_cancer_mlp"
WORK=$(mktemp -d /tmp/dfw-bench-splits-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
mkdir in
if [[ $MODEL_KIND == default ]]; then
  rows=$(( SIZE_MB * 1024 * 1024 / ($(wc -c < "$MODEL/sample.jsonl") / $(wc -l < "$MODEL/sample.jsonl")) ))
  awk -v n="$rows" '{ l[NR] = $0 } END { for (i = 0; i < n; i++) print l[i % NR + 1] }' "$MODEL/sample.jsonl" > in/one.jsonl
  sed -e "s#path: pipelines/data/breast_cancer_demo.jsonl#path: in/one.jsonl#" \
      -e "s#model_path: pipelines/models/breast_cancer_mlp#model_path: $MODEL#" \
      -e "s#out/default/#out/#" "$ROOT/pipelines/default.yaml" > p.yaml
  grep -q "in/one.jsonl" p.yaml || { echo "bench_splits: pipelines/default.yaml changed shape; update the sed" >&2; exit 2; }
else
  # The model (random F32 weights, safetensors written by hand) and rows of 64 numbers.
  python3 - "$SIZE_MB" <<'PY'
import array, json, os, random, struct, sys
random.seed(5)
os.makedirs("model", exist_ok=True)
dims = [64, 2048, 2048, 16]
layers, tensors, blobs, offset = [], {}, [], 0
for i in range(3):
    name = f"fc{i + 1}"
    act = "relu" if i < 2 else "none"
    layers.append({"name": name, "out_features": dims[i + 1], "activation": act})
    for suffix, n, shape in (("weight", dims[i] * dims[i + 1], [dims[i + 1], dims[i]]), ("bias", dims[i + 1], [dims[i + 1]])):
        a = array.array("f", (random.uniform(-0.05, 0.05) for _ in range(n)))
        blob = a.tobytes()
        tensors[f"{name}.{suffix}"] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
header = json.dumps(tensors).encode()
header += b" " * (-len(header) % 8)
with open("model/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + b"".join(blobs))
json.dump({"model_type": "mlp", "input_dim": 64, "output": "softmax", "layers": layers}, open("model/config.json", "w"))
target = int(sys.argv[1]) * 1024 * 1024
with open("in/one.jsonl", "w") as f:
    size, i = 0, 0
    while size < target:
        line = json.dumps({"id": i, "x": [round(random.uniform(-1, 1), 4) for _ in range(64)]}) + "\n"
        f.write(line)
        size += len(line)
        i += 1
PY
  cat > p.yaml <<YAML
pipeline:
  type: chain
  source: {type: ReadFromJson, config: {path: in/one.jsonl}}
  transforms:
    - type: RunInference
      name: Classify
      config:
        model_handler:
          type: MlpModelHandlerSafetensors
          config: {model_path: model, input_field: x, device: CPU, min_batch_size: 256, max_batch_size: 256, blas_threads: 1}
        error_handling: {output: failed}
  sink: {type: WriteToJson, config: {path: out/predictions, file_name_suffix: .jsonl}}
  extra_transforms:
    - type: WriteToJson
      input: Classify.failed
      config: {path: out/errors, file_name_suffix: .jsonl}
YAML
fi
TOTAL=$(wc -l < in/one.jsonl)

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

echo "MODEL=$MODEL_KIND: one file of $(du -h in/one.jsonl | cut -f1) ($TOTAL rows), $(nproc) CPUs, 1 harness thread and 1 BLAS thread per SDK process"
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
