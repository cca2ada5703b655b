#!/usr/bin/env bash
# RunInference speed on this machine, three figures side by side:
#   1. OpenBLAS sgemm GFLOP/s (n = 256, 512, 1024),
#   2. the MLP handler called directly (rows/s) on a compute-bound model, 64 → 2048 → 2048 → 16:
#      one model with every CPU in its BLAS pool, and one model per CPU with one BLAS thread each
#      (the layout of the pipeline's inference lanes),
#   3. a pipeline ReadFromJson → RunInference (same model, fixed batches of 256) → WriteToJson on
#      N rows (default 200000, so start-up — about 0.07 s — and the end-of-run drain weigh under
#      1%), through `dfworker run`, three runs (median); records/s and the ratio to the faster of
#      the two direct figures at batch 256.
# Usage: scripts/bench_inference.sh [BUILD_DIR] [ROWS]
# BUILD_DIR is configured as Release (DFW_BENCH=ON) only when it has no CMakeCache.txt yet.
# DFW_BENCH_DFWORKER=path uses that dfworker binary instead of building one in BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-bench}
rows=${2:-200000}
work=$(mktemp -d /tmp/dfw-bench-inference.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDFW_BENCH=ON >/dev/null
fi
dfworker=${DFW_BENCH_DFWORKER:-$build/src/cli/dfworker}
targets=(inference_mlp_bench)
[[ -n ${DFW_BENCH_DFWORKER:-} ]] || targets+=(dfworker)
cmake --build "$build" --target "${targets[@]}" >/dev/null

export DFW_BENCH_MODEL_DIR=$work/model
"$build/bench/inference_mlp_bench" --benchmark_counters_tabular=true | tee "$work/bench.txt"

python3 - "$work/in.jsonl" "$rows" <<'PY'
import json, random, sys
random.seed(3)
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": i, "x": [round(random.uniform(-1, 1), 4) for _ in range(64)]}) + "\n")
PY
cat > "$work/bench.yaml" <<YAML
pipeline:
  type: chain
  source: {type: ReadFromJson, config: {path: $work/in.jsonl}}
  transforms:
    - type: RunInference
      config:
        model_handler:
          type: MlpModelHandlerSafetensors
          config: {model_path: $work/model, input_field: x, min_batch_size: 256, max_batch_size: 256}
  sink: {type: WriteToJson, config: {path: $work/out/pred, file_name_suffix: .jsonl}}
YAML
times=()
for i in 1 2 3; do
  rm -rf "$work/out"
  start=$(date +%s.%N)
  "$dfworker" run "$work/bench.yaml" --experiments=no_use_multiple_sdk_containers >"$work/run.log" 2>&1 ||
    { cat "$work/run.log"; exit 1; }
  end=$(date +%s.%N)
  times+=("$(python3 -c "print($end - $start)")")
done
python3 - "$rows" "$work/bench.txt" "${times[@]}" <<'PY'
import re, statistics, sys
rows, bench, times = int(sys.argv[1]), sys.argv[2], [float(t) for t in sys.argv[3:]]
def rate(name):
    # rows/s is the last "<number>[kMG]/s" token on the benchmark's line (e.g. "13.87k/s").
    for line in open(bench):
        if line.startswith(name + "/"):
            v, unit = re.findall(r"([0-9.]+)([kMG]?)/s", line)[-1]
            return float(v) * {"k": 1e3, "M": 1e6, "G": 1e9, "": 1}[unit]
    return None
t = statistics.median(times)
p = rows / t
print(f"pipeline: {rows} rows in {t:.2f} s (median of {', '.join(f'{x:.2f}' for x in times)}) = {p:,.0f} records/s "
      "(process start and model load included)")
one, lanes = rate("BM_MlpHandlerRaw/256"), rate("BM_MlpHandlerRawLanes/256")
for label, r in (("one model, all CPUs in BLAS", one), ("one model per CPU (lanes)", lanes)):
    if r:
        print(f"raw handler, batch 256, {label}: {r:,.0f} rows/s; pipeline / raw = {100 * p / r:.0f}%")
best = max(r for r in (one, lanes) if r)
print(f"pipeline / faster raw = {100 * p / best:.0f}% (goal >= 90%)")
PY
