#!/usr/bin/env bash
# The CPU backend's GEMM paths side by side: sgemm GFLOP/s of OpenBLAS, oneDNN, the calibrated
# default ("auto") and oneDNN's own dnnl_sgemm on a MiniLM-shaped encoder's products (4096 rows:
# batch 32 x 128 tokens; bench/backend_gemm_bench.cc), then MiniLM-shaped sentence embeddings/s per
# path (bench/inference_embedding_bench.cc, BM_Embed grouped, batch 32, <= 128 tokens). Each binary
# runs RUNS times (default 3; the paths alternate within every run); medians and ratios are printed,
# with the load average before and after (a figure taken while the load rose is not a figure).
#
# The model is $DFW_MINILM_DIR when set (scripts/fetch_minilm.sh), else a random-weight model with
# all-MiniLM-L6-v2's shapes made by scripts/make_bert_shaped.py (the work per sentence is MiniLM's;
# the embeddings mean nothing). The environment is used as it is (OPENBLAS_CORETYPE included) and
# printed; the script refuses to run while the 1-minute load average is >= 1.5 (FORCE=1 overrides,
# and the figures are then noted as taken under load).
#
# With BEFORE=DIR (a folder holding inference_embedding_bench and inference_mlp_bench built from the
# commit before the oneDNN path), each run also times those, alternating with this build's: the
# embeddings before/after and the MLP handler's rows/s (batch 256, one model and two lanes).
#
# Usage: scripts/bench_gemm.sh [BUILD_DIR]   (BUILD_DIR default: build, configured with DFW_BENCH=ON)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${RUNS:-3}
load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" 'BEGIN { exit !(l >= 1.5) }'; then
  if [[ ${FORCE:-0} != 1 ]]; then
    echo "bench_gemm: load average $load >= 1.5 (something else is running); rerun when idle or with FORCE=1" >&2
    exit 2
  fi
  echo "bench_gemm: WARNING: running under load $load (FORCE=1)" >&2
fi
for t in backend_gemm_bench inference_embedding_bench inference_mlp_bench; do
  [[ -x $build/bench/$t ]] || cmake --build "$build" --target "$t"
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=${DFW_MINILM_DIR:-}
if [[ -z $model ]]; then
  model=$work/minilm_shaped
  python3 scripts/make_bert_shaped.py "$model" >/dev/null
  model_note="random-weight model with all-MiniLM-L6-v2's shapes (scripts/make_bert_shaped.py)"
else
  model_note="$model"
fi
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs;" \
  "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>} ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA-<unset>}; load $load"
echo "model: $model_note"
for i in $(seq "$runs"); do
  echo "run $i: load $(cut -d' ' -f1 /proc/loadavg)"
  "$build/bench/backend_gemm_bench" --benchmark_min_time=0.3 --benchmark_out="$work/gemm_$i.json" --benchmark_out_format=json >/dev/null
  DFW_MINILM_DIR=$model "$build/bench/inference_embedding_bench" --benchmark_filter='BM_Embed/grouped:1/' \
    --benchmark_min_time=2 --benchmark_out="$work/embed_$i.json" --benchmark_out_format=json >/dev/null
  mlp_filter='BM_MlpHandlerRaw/256/|BM_MlpHandlerRawLanes/256/'
  "$build/bench/inference_mlp_bench" --benchmark_filter="$mlp_filter" \
    --benchmark_out="$work/mlp_after_$i.json" --benchmark_out_format=json >/dev/null
  if [[ -n ${BEFORE:-} ]]; then
    DFW_MINILM_DIR=$model "$BEFORE/inference_embedding_bench" --benchmark_filter='BM_Embed/grouped:1/' \
      --benchmark_min_time=2 --benchmark_out="$work/embed_before_$i.json" --benchmark_out_format=json >/dev/null
    "$BEFORE/inference_mlp_bench" --benchmark_filter="$mlp_filter" \
      --benchmark_out="$work/mlp_before_$i.json" --benchmark_out_format=json >/dev/null
  fi
done
echo "load after: $(cut -d' ' -f1 /proc/loadavg)"
python3 - "$work" "$runs" <<'PY'
import json, statistics, sys, collections
work, runs = sys.argv[1], int(sys.argv[2])
gemm = collections.defaultdict(list)
embed = collections.defaultdict(list)
labels = {}
for i in range(1, runs + 1):
    for b in json.load(open(f"{work}/gemm_{i}.json"))["benchmarks"]:
        name = b["name"].split("/")
        key = "/".join(p for p in name[:-1] if not p.startswith("path:"))  # drop path and real_time
        path = next(p for p in name if p.startswith("path:"))[5:]
        gemm[(key, path)].append(b["GFLOPs"])
    for b in json.load(open(f"{work}/embed_{i}.json"))["benchmarks"]:
        path = next(p for p in b["name"].split("/") if p.startswith("path:"))[5:]
        embed[path].append(b["items_per_second"])
        labels[path] = b.get("label", "")
med = lambda v: statistics.median(v)
names = {"0": "openblas", "1": "onednn", "2": "auto", "3": "dnnl_sgemm"}
print(f"\nsgemm GFLOP/s, median of {runs} runs (0 openblas, 1 onednn, 2 auto, 3 dnnl_sgemm)")
print(f"{'shape':44} {'openblas':>9} {'onednn':>9} {'auto':>9} {'dnnl_sgemm':>10} {'onednn/openblas':>16} {'auto/openblas':>14} {'onednn/dnnl_sgemm':>18}")
for key in sorted({k for k, _ in gemm}, key=lambda s: s):
    v = {p: med(gemm[(key, p)]) for p in names if (key, p) in gemm}
    cell = lambda p, w: f" {v[p]:{w}.1f}" if p in v else f" {'-':>{w}}"
    ratio = lambda a, b, w: f" {v[a] / v[b]:{w}.2f}" if a in v and b in v else f" {'-':>{w}}"
    print(f"{key:44}" + cell("0", 9) + cell("1", 9) + cell("2", 9) + cell("3", 10) +
          ratio("1", "0", 16) + ratio("2", "0", 14) + ratio("1", "3", 18))
epaths = {"0": "auto (default)", "1": "openblas", "2": "onednn"}
print(f"\nMiniLM-shaped embeddings, sentences/s (BM_Embed grouped, batch 32, <= 128 tokens), median of {runs}:")
for p in "102":
    if p in embed:
        print(f"  {epaths[p]:15} {med(embed[p]):8.1f}  runs {' '.join(f'{x:.1f}' for x in embed[p])}"
              f"  ratio to openblas {med(embed[p]) / med(embed['1']):.2f}")
import os
before = [b["items_per_second"] for i in range(1, runs + 1) if os.path.exists(f"{work}/embed_before_{i}.json")
          for b in json.load(open(f"{work}/embed_before_{i}.json"))["benchmarks"]]
if before:
    print(f"  {'before (BEFORE)':15} {med(before):8.1f}  runs {' '.join(f'{x:.1f}' for x in before)}"
          f"  after (auto) / before {med(embed['0']) / med(before):.2f}")
for p in "102":
    if p in labels:
        print(f"  [{epaths[p]}] {labels[p]}")
mlp = collections.defaultdict(list)
for side in ("after", "before"):
    for i in range(1, runs + 1):
        f = f"{work}/mlp_{side}_{i}.json"
        if os.path.exists(f):
            for b in json.load(open(f))["benchmarks"]:
                mlp[(b["name"], side)].append(b["rows/s"])
if mlp:
    print(f"\nMLP handler rows/s (64-2048-2048-16, batch 256), median of {runs}:")
    for name in sorted({n for n, _ in mlp}):
        a, b = mlp.get((name, "after")), mlp.get((name, "before"))
        line = f"  {name:40} after {med(a):9.0f}" if a else f"  {name:40}"
        if b:
            line += f"  before {med(b):9.0f}  after/before {med(a) / med(b):.2f}"
        print(line)
PY
