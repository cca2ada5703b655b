#!/usr/bin/env bash
# The encoder's precisions side by side on all-MiniLM-L6-v2: float32, bfloat16 and int8 Linear
# layers (bench/inference_precision_bench.cc), one thread (as each SDK process of `dfworker run`
# runs), the dtypes interleaved at random over REPS repetitions on the same N sentences, with each
# one's min / mean cosine to float32 over every sentence. When the ONNX graph of the model exists
# (scripts/bench_embed_e2e.sh exports it) and onnxruntime is in the cache venv, ONNX Runtime's own
# dynamic int8 (quantize_dynamic, its defaults) is measured for accuracy on the same sentences, for
# comparison. Prints one table and the CPU flags it ran on. The end-to-end speed against ONNX
# Runtime float32 is scripts/bench_embed_e2e.sh's.
#
# Usage: scripts/bench_precision.sh [BUILD_DIR=build] [N=512] [REPS=3] [CACHE_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
n=${2:-512}
reps=${3:-3}
cache=${4:-${DFW_MODEL_CACHE:-$HOME/.cache/dfworker}}
bench=$build/bench/inference_precision_bench
[[ -x $bench ]] || { echo "bench_precision: $bench not built (cmake --build $build --target inference_precision_bench)" >&2; exit 2; }
model=$(scripts/fetch_minilm.sh "$cache" | tail -1)
py=$cache/venv/bin/python
work=$(mktemp -d /tmp/dfw-bench-precision-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$py" scripts/make_sentences.py "$work/sentences.txt" "$n"

OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 DFW_MINILM_DIR=$model DFW_BENCH_SENTENCES=$work/sentences.txt \
  "$bench" --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true --benchmark_min_time=1 \
  --benchmark_format=json --benchmark_out="$work/bench.json" >/dev/null 2>"$work/bench.log" \
  || { cat "$work/bench.log" >&2; exit 1; }

ort_line=""
onnx=$cache/minilm-bert.onnx
if [[ -s $onnx ]] && "$py" -c "import onnxruntime, tokenizers" 2>/dev/null; then
  ort_line=$("$py" - "$model" "$onnx" "$work/sentences.txt" "$work/int8.onnx" <<'PY'
import os, sys
import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic
from tokenizers import Tokenizer
model_dir, fp32_path, sentences, int8_path = sys.argv[1:5]
quantize_dynamic(fp32_path, int8_path, weight_type=QuantType.QInt8)
tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
tok.enable_truncation(128)
tok.enable_padding()
texts = [line.rstrip("\n") for line in open(sentences, encoding="utf-8")]
def embed(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    out = []
    for i in range(0, len(texts), 32):
        enc = tok.encode_batch(texts[i:i + 32])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        h = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        m = mask[..., None].astype(np.float32)
        p = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        out.append(p / np.linalg.norm(p, axis=1, keepdims=True))
    return np.concatenate(out)
a, b = embed(fp32_path), embed(int8_path)
cos = (a * b).sum(1)
print("%.6f %.6f" % (cos.min(), cos.mean()))
PY
  ) || ort_line=""
fi

"$py" - "$work/bench.json" "$n" "$ort_line" <<'PY'
import json, os, statistics, sys
runs = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type") == "iteration"]
by, skipped = {}, {}
for b in runs:
    # A dtype this CPU cannot run is a skipped benchmark: no label, its reason in error_message.
    if b.get("error_occurred") or "label" not in b:
        arg = [part for part in b["name"].split("/") if part.startswith("dtype:")]
        d = ("float32", "bfloat16", "int8")[int(arg[0][6:])] if arg else b["name"]
        skipped[d] = b.get("error_message", "skipped")
        continue
    by.setdefault(b["label"], []).append(b)
flags = [l for l in open("/proc/cpuinfo") if l.startswith("flags")][0].split()
want = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
print("all-MiniLM-L6-v2, %s sentences, 1 thread, dtypes interleaved (%d repetitions); load average %.2f"
      % (sys.argv[2], len(by.get("float32", [])), os.getloadavg()[0]))
print("CPU flags: %s" % " ".join(f for f in want if f in flags))
ref = statistics.median(b["items_per_second"] for b in by["float32"]) if "float32" in by else None
print("  %-9s %14s %9s %12s %12s" % ("dtype", "sentences/s", "vs fp32", "min cosine", "mean cosine"))
for d in ("float32", "bfloat16", "int8"):
    if d not in by:
        why = skipped.get(d, "see the benchmark's log")
        print("  %-9s not run: %s" % (d, why))
        continue
    s = statistics.median(b["items_per_second"] for b in by[d])
    print("  %-9s %14.1f %8.2fx %12.6f %12.6f" % (d, s, s / ref if ref else float("nan"), by[d][0]["min_cosine"],
                                                by[d][0]["mean_cosine"]))
if sys.argv[3]:
    mn, mean = map(float, sys.argv[3].split())
    print("  %-9s %14s %9s %12.6f %12.6f   (ONNX Runtime quantize_dynamic vs its own float32)" % ("ORT int8", "-", "-", mn, mean))
PY
