#!/usr/bin/env bash
# Sentence-embedding throughput on the CPU backend: all-MiniLM-L6-v2 at batch 32, seq <= 128,
# next to the GEMM-bound limit (GFLOP per sentence ÷ measured sgemm GFLOP/s) and next to PyTorch
# CPU (sentence-transformers, same sentences, same batch size and max length). Prints one table.
#
# Usage: scripts/bench_embeddings.sh [BUILD_DIR] [CACHE_DIR]
#   BUILD_DIR: a build configured with -DDFW_BENCH=ON (default: build)
#   CACHE_DIR: where scripts/fetch_minilm.sh puts the model and its venv (default ~/.cache/dfworker)
# Timings are wall-clock on a machine others may share: the load average is printed with them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cache=${2:-${DFW_MODEL_CACHE:-$HOME/.cache/dfworker}}
bench=$build/bench/inference_embedding_bench
if [[ ! -x $bench ]]; then
  cmake -S . -B "$build" -G Ninja -DDFW_BENCH=ON >/dev/null
  cmake --build "$build" --target inference_embedding_bench
fi
model=$(scripts/fetch_minilm.sh "$cache" | tail -1)
py=$cache/venv/bin/python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The same 512 sentences for both sides: varied lengths, accents, CJK, emoji.
"$py" - "$work/sentences.txt" <<'PY'
import random, sys
words = ("search retrieval embedding vector model sentence query document ranking semantic similarity "
         "neural network training inference batch latency throughput memory pipeline worker résumé café "
         "naïve 日本 中文 😀 — don't 3.5 100%").split()
rng = random.Random(7)
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for _ in range(512):
        f.write(" ".join(rng.choice(words) for _ in range(rng.randint(4, 110))) + "\n")
PY

DFW_MINILM_DIR=$model DFW_BENCH_SENTENCES=$work/sentences.txt "$bench" --benchmark_min_time=2 \
  --benchmark_format=json >"$work/ours.json"

"$py" - "$model" "$work/sentences.txt" "$work/torch.json" <<'PY'
import json, sys, time
import torch
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1], device="cpu")
model.max_seq_length = 128
texts = open(sys.argv[2], encoding="utf-8").read().splitlines()
model.encode(texts[:64], batch_size=32)  # warm-up
best = 0.0
for _ in range(3):
    t0 = time.perf_counter()
    model.encode(texts, batch_size=32, normalize_embeddings=True)
    best = max(best, len(texts) / (time.perf_counter() - t0))
json.dump({"sentences_per_s": best, "threads": torch.get_num_threads(), "torch": torch.__version__},
          open(sys.argv[3], "w"))
PY

"$py" - "$work/ours.json" "$work/torch.json" <<'PY'
import json, os, sys
ours = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]}
torch = json.load(open(sys.argv[2]))
grouped = ours["BM_Embed/grouped:1/real_time"]
inorder = ours["BM_Embed/grouped:0/real_time"]
sgemm = max(b["GFLOPs"] for n, b in ours.items() if n.startswith("BM_Sgemm"))
gflop = grouped["GFLOP_per_sentence"]
limit = sgemm / gflop
best_other = torch["sentences_per_s"]
print("all-MiniLM-L6-v2, CPU, batch 32, seq <= 128, 512 sentences; load average %s" % os.getloadavg()[0])
print("  dfworker, length-grouped batches : %8.1f sentences/s  (padding ratio %.2f)" % (grouped["items_per_second"], grouped["padding_ratio"]))
print("  dfworker, batches in input order : %8.1f sentences/s  (padding ratio %.2f)" % (inorder["items_per_second"], inorder["padding_ratio"]))
print("  GEMM-bound limit                 : %8.1f sentences/s  (%.3f GFLOP/sentence at %.1f GFLOP/s sgemm)" % (limit, gflop, sgemm))
print("  PyTorch %s CPU (%d threads)  : %8.1f sentences/s" % (torch["torch"], torch["threads"], best_other))
print("  dfworker / PyTorch               : %8.2fx" % (grouped["items_per_second"] / best_other))
print("  dfworker / GEMM-bound limit      : %8.2fx" % (grouped["items_per_second"] / limit))
PY
