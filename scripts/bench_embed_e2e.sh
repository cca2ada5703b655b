#!/usr/bin/env bash
# End to end, as a user runs it: all-MiniLM-L6-v2 sentence embeddings of N sentences (default
# 2,048) from a JSONL file to a JSONL file of vectors, two ways, alternating, on the same input:
#   - dfworker: `dfworker run embed.yaml` with the default flags (this host, one SDK process per
#     core) — ReadFromJson → RunInference (SentenceEmbeddingHandler, batch 32, max 128 tokens,
#     mean pooling, normalised, device CPU) → WriteToJson;
#   - ONNX Runtime: a Python script doing the same (HF tokenizers, batches of 32 sorted by length,
#     max 128 tokens, mean pooling under the mask, L2 normalisation; ONNX Runtime CPU with every
#     core), reading and writing the same JSONL. The ONNX graph is exported once from the same
#     safetensors (untimed; cached next to the model).
# Timed: each whole command, wall clock (start-up and model load included on both sides); the
# ONNX Runtime script also reports its time from session creation on. Both outputs are checked:
# every id once, and every vector within cosine 0.9999 of the other side's when dfworker ran float32,
# 0.999 for bfloat16 and 0.995 for int8 (the bounds `dtype: auto` holds each to at load; the dtype
# is read from dfworker's log). Prints each round, the medians, the ratio and the precision chosen.
# onnxruntime, onnx and tokenizers go into the cache venv (scripts/fetch_minilm.sh) for this script
# only; the product and CI never need them.
#
# Usage: scripts/bench_embed_e2e.sh [BUILD_DIR=build] [N=2048] [ROUNDS=3] [CACHE_DIR] [DTYPE=auto]
# As on an AVX2-only or an AVX-512-VNNI CPU (both sides): scripts/as-cpu.sh avx2 scripts/bench_embed_e2e.sh ...
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${1:-build}
n=${2:-2048}
rounds=${3:-3}
cache=${4:-${DFW_MODEL_CACHE:-$HOME/.cache/dfworker}}
dtype=${5:-auto}
bin="$(cd "$build" && pwd)/src/cli/dfworker"
[[ -x $bin ]] || { echo "bench_embed_e2e: $bin not built (cmake --build $build --target dfworker)" >&2; exit 2; }
model=$(scripts/fetch_minilm.sh "$cache" | tail -1)
py=$cache/venv/bin/python
if ! "$py" -c "import onnxruntime, onnx, tokenizers" 2>/dev/null; then
  "$py" -m pip install --quiet onnxruntime onnx tokenizers
fi
work=$(mktemp -d /tmp/dfw-bench-embed-XXXXXX)
trap 'rm -rf "$work"' EXIT
onnx="$cache/minilm-bert.onnx"

# The sentences: varied lengths, accents, CJK, emoji (the same as scripts/bench_embeddings.sh's).
"$py" scripts/make_sentences.py "$work/sentences.jsonl" "$n" --jsonl

# The ONNX graph of the same BertModel (dynamic batch and sequence axes), once.
if [[ ! -s $onnx ]]; then
  "$py" - "$model" "$onnx" <<'PY'
import sys, torch
from transformers import AutoModel, AutoTokenizer
model_dir, out = sys.argv[1:3]
bert = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
enc = AutoTokenizer.from_pretrained(model_dir)(["a warm-up sentence", "another"], padding=True, return_tensors="pt")
class Wrapper(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m
    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
with torch.no_grad():
    torch.onnx.export(Wrapper(bert), (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]), out,
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
                      opset_version=17, dynamo=False,
                      dynamic_axes={k: {0: "batch", 1: "seq"} for k in
                                    ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")})
PY
fi

cat >"$work/ort_embed.py" <<'PY'
# ONNX Runtime, end to end: JSONL in, JSONL of normalised mean-pooled embeddings out.
import json, os, sys, time
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
model_dir, onnx_path, src, dst = sys.argv[1:5]
t0 = time.perf_counter()
threads = os.cpu_count()
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
tok.enable_truncation(128)
tok.enable_padding()
rows = [json.loads(line) for line in open(src, encoding="utf-8")]
texts = [r["text"] for r in rows]
order = np.argsort([-len(t) for t in texts], kind="stable")  # as sentence-transformers sorts
out = np.empty((len(texts), 384), dtype=np.float32)
for i in range(0, len(order), 32):
    idx = order[i:i + 32]
    enc = tok.encode_batch([texts[j] for j in idx])
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    hidden = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    m = mask[..., None].astype(np.float32)
    pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    out[idx] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
with open(dst, "w") as f:
    for r, v in zip(rows, out):
        f.write(json.dumps({"id": r["id"], "embedding": v.tolist()}) + "\n")
print(json.dumps({"from_session_s": time.perf_counter() - t0, "threads": threads, "ort": ort.__version__}))
PY

cat >"$work/embed.yaml" <<EOF
pipeline:
  type: chain
  source:
    type: ReadFromJson
    config: {path: $work/sentences.jsonl}
  transforms:
    - type: RunInference
      name: Embed
      config:
        inference_tag: embedding
        model_handler:
          type: SentenceEmbeddingHandler
          config: {model_path: '$model', input_field: text, max_seq_length: 128, pooling: mean, normalize: true,
                   device: CPU, min_batch_size: 32, max_batch_size: 512, dtype: $dtype}
  sink:
    type: WriteToJson
    config: {path: $work/dfw-out/embeddings, file_name_suffix: .jsonl}
EOF

now() { date +%s.%N; }
dfw_times=() ort_times=() ort_inner=()
for r in $(seq 1 "$rounds"); do
  rm -rf "$work/dfw-out" "$work/job"
  t0=$(now)
  "$bin" run "$work/embed.yaml" --job_dir "$work/job" >"$work/dfw.log" 2>&1 || { cat "$work/dfw.log" >&2; exit 1; }
  t1=$(now)
  dfw_times+=("$(echo "$t1 - $t0" | bc)")
  t0=$(now)
  "$py" "$work/ort_embed.py" "$model" "$onnx" "$work/sentences.jsonl" "$work/ort.jsonl" >"$work/ort.json" 2>"$work/ort.log" \
    || { cat "$work/ort.log" >&2; exit 1; }
  t1=$(now)
  ort_times+=("$(echo "$t1 - $t0" | bc)")
  ort_inner+=("$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['from_session_s'])" "$work/ort.json")")
  printf 'round %d: dfworker %.2f s, ONNX Runtime %.2f s (%.2f s from session creation)\n' "$r" "${dfw_times[-1]}" \
    "${ort_times[-1]}" "${ort_inner[-1]}"
done
# (The SDK processes log to the job dir; dfw.log has the launcher's lines. `|| true`: a line that is
# not there must not end the script under pipefail before the outputs are checked.)
logs=("$work/dfw.log" "$work"/job/logs/*.log)
grep -hE "SDK processes:|inference backend" "${logs[@]}" 2>/dev/null | head -2 | cut -c1-240 || true
grep -hE "Linear layers in" "${logs[@]}" 2>/dev/null | head -1 | cut -c1-400 || true
ran=$dtype
if [[ $ran == auto ]]; then
  # The choice may differ per token bucket ("int8 for 9-16 tokens, ...; float32 for 1-8 tokens"):
  # the lowest precision any bucket runs sets the bound the two outputs are held to.
  chose=$(grep -hoE "Linear layers in [^(]*" "${logs[@]}" 2>/dev/null | head -1 || true)
  case $chose in
    *int8*) ran=int8 ;;
    *bfloat16*) ran=bfloat16 ;;
    *float32*) ran=float32 ;;
    *) ran= ;;
  esac
fi
case $ran in
  bfloat16) min_cos=0.999 ;;
  int8) min_cos=0.995 ;;
  *) min_cos=0.9999 ;;
esac

"$py" - "$n" "$work/sentences.jsonl" "$work/dfw-out" "$work/ort.jsonl" "${dfw_times[*]}" "${ort_times[*]}" "${ort_inner[*]}" \
  "$work/ort.json" "$min_cos" "$dtype" "${ran:-?}" <<'PY'
import glob, json, os, statistics, sys
import numpy as np
n = int(sys.argv[1])
dfw = {}
for path in sorted(glob.glob(os.path.join(sys.argv[3], "*.jsonl"))):
    for line in open(path):
        r = json.loads(line)
        if r["id"] in dfw:
            sys.exit("dfworker wrote id %s twice" % r["id"])
        dfw[r["id"]] = np.array(r["embedding"]["inference"], dtype=np.float32)
ort = {r["id"]: np.array(r["embedding"], dtype=np.float32) for r in map(json.loads, open(sys.argv[4]))}
if sorted(dfw) != list(range(n)) or sorted(ort) != list(range(n)):
    sys.exit("ids missing: dfworker %d of %d, ONNX Runtime %d of %d" % (len(dfw), n, len(ort), n))
cos = min(float(dfw[i] @ ort[i]) for i in range(n))
d = [float(x) for x in sys.argv[5].split()]
o = [float(x) for x in sys.argv[6].split()]
inner = [float(x) for x in sys.argv[7].split()]
info = json.load(open(sys.argv[8]))
md, mo = statistics.median(d), statistics.median(o)
print("all-MiniLM-L6-v2 end to end, %d sentences (JSONL -> JSONL), %d rounds alternating; load average %.2f"
      % (n, len(d), os.getloadavg()[0]))
dtype, ran = sys.argv[10], sys.argv[11]
flags = open("/proc/cpuinfo").read().split("flags", 1)[1].split("\n", 1)[0].split()
isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8") if f in flags]
# oneDNN capped below the CPU (ONEDNN_MAX_CPU_ISA) runs the kernels of the ISA it is capped at:
# judge the run by that ISA's goal (ONNX Runtime is not capped, so the comparison is conservative).
cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
# Under scripts/as-cpu.sh every process of both sides (this one too) saw the smaller CPU's cpuid:
# both picked that CPU's kernels, and the run is judged as that CPU.
masked = os.environ.get("DFW_CPU_MASK", "")
if masked == "avx2":
    flags = [f for f in flags if not f.startswith(("avx512", "amx", "avx_vnni"))]
elif masked == "avx512-vnni":
    flags = [f for f in flags if not f.startswith(("amx", "avx512_bf16", "avx_vnni"))]
if cap in ("SSE41", "AVX", "AVX2"):
    flags = [f for f in flags if not f.startswith(("avx512", "amx", "avx_vnni"))]
elif cap in ("AVX512_CORE",):
    flags = [f for f in flags if not f.startswith(("amx", "avx512_vnni", "avx512_bf16", "avx_vnni"))]
elif cap in ("AVX512_CORE_VNNI", "AVX512_CORE_BF16"):  # AVX-512 with VNNI (and BF16), no AMX
    flags = [f for f in flags if not f.startswith("amx")]
print("  CPU flags: %s%s%s" % (" ".join(isa), "; every process saw cpuid as %s (scripts/as-cpu.sh): %s" % (
    masked, " ".join(f for f in isa if f in flags)) if masked else "", "; oneDNN capped at %s: judged as %s" % (
    cap, " ".join(f for f in ("avx2", "avx512f", "avx512_vnni", "amx_bf16") if f in flags)) if cap else ""))
print("  dfworker run (dtype %-8s ran %-8s): median %6.2f s  %7.1f sentences/s  (rounds: %s)"
      % (dtype, ran, md, n / md, ", ".join("%.2f" % x for x in d)))
print("  ONNX Runtime %s (%d threads): median %6.2f s  %7.1f sentences/s  (rounds: %s; from session creation %.2f s)"
      % (info["ort"], info["threads"], mo, n / mo, ", ".join("%.2f" % x for x in o), statistics.median(inner)))
print("  every id once on both sides; min cosine between the two outputs %.6f" % cos)
ratio = mo / md
# The goals for this CPU (docs/precision.md): with the defaults AMX 4.0x, AVX-512 VNNI 3.0x, AVX2 only
# 1.2x; float32 1.2x everywhere.
if dtype == "float32":
    goal = 1.2
elif "amx_bf16" in flags or "amx_int8" in flags:
    goal = 4.0
elif "avx512_vnni" in flags:
    goal = 3.0
else:
    goal = 1.2
print("  dfworker / ONNX Runtime (sentences/s): %.2fx  (goal on this CPU >= %.1fx: %s)" % (ratio, goal, "met" if ratio >= goal else "NOT met"))
if cos < float(sys.argv[9]):
    sys.exit("the two outputs disagree: min cosine %.6f < %s" % (cos, sys.argv[9]))
PY
