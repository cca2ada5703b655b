#!/usr/bin/env bash
# Text classification on a MiniLM-based classifier, 2,048 sentences: `dfworker run` with
# HuggingFacePipelineModelHandler against transformers' own pipeline (torch, CPU, batch 32) and an
# ONNX Runtime twin of the job (the same model exported to ONNX, `tokenizers` + onnxruntime, batch
# 32, as many threads as cores) on the same cores, and the rows compared (labels exactly, scores
# within 1e-4). Where the CPU runs bfloat16 (avx512_bf16 or amx_bf16) a second dfworker run with
# `load_pipeline_args: {torch_dtype: bfloat16}` is timed and compared with the float32 rows
# (labels agreeing, largest score difference). Never in CI.
#
#   scripts/bench_hf_text_classification.sh [BUILD_DIR] [MINILM_DIR]
#
# MINILM_DIR defaults to ~/.cache/dfworker/all-MiniLM-L6-v2 (scripts/fetch_minilm.sh); the
# classifier is that encoder with a seeded random 2-label head (BertForSequenceClassification),
# written once to $DFW_MODEL_CACHE/minilm-classifier. The venv is scripts/check_hf_pipelines.sh's.
# onnxruntime and onnx are added to that venv when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cache=${DFW_MODEL_CACHE:-$HOME/.cache/dfworker}
minilm=${2:-$cache/all-MiniLM-L6-v2}
venv=${DFW_HF_VENV:-$cache/hf-venv}
cls=$cache/minilm-classifier
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -d "$minilm" ] || { echo "no $minilm: run scripts/fetch_minilm.sh first"; exit 2; }
"$venv/bin/python" -c "import torch, transformers" 2>/dev/null || { echo "no venv $venv: run scripts/check_hf_pipelines.sh first"; exit 2; }
"$venv/bin/python" -c "import onnxruntime, onnx" 2>/dev/null || "$venv/bin/pip" install --quiet onnxruntime onnx
if [ ! -f "$cls/model.safetensors" ]; then
  "$venv/bin/python" - "$minilm" "$cls" <<'PY'
import sys, torch
from transformers import AutoTokenizer, BertForSequenceClassification
torch.manual_seed(0)
labels = {0: "NEGATIVE", 1: "POSITIVE"}
m = BertForSequenceClassification.from_pretrained(sys.argv[1], num_labels=2, id2label=labels,
                                                  label2id={v: k for k, v in labels.items()})
m.save_pretrained(sys.argv[2])
AutoTokenizer.from_pretrained(sys.argv[1]).save_pretrained(sys.argv[2])
PY
fi
python3 - "$work/in.jsonl" <<'PY'
import json, random, sys
random.seed(2)
words = "the a movie film great terrible boring wonderful plot actor scene music long short story ending loved hated watched again never always".split()
with open(sys.argv[1], "w") as f:
    for i in range(2048):
        f.write(json.dumps({"id": i, "text": " ".join(random.choice(words) for _ in range(random.randint(8, 24))) + "."}) + "\n")
PY
cat >"$work/p.yaml" <<YAML
options: {yaml_experimental_features: [ML]}
pipeline:
  type: chain
  transforms:
    - {type: ReadFromJson, config: {path: $work/in.jsonl}}
    - type: RunInference
      config:
        model_handler:
          type: HuggingFacePipelineModelHandler
          config:
            task: text-classification
            model: $cls
            preprocess: {callable: 'lambda row: row.text'}
            max_batch_size: 64
    - {type: WriteToJson, config: {path: $work/out/r, file_name_suffix: .jsonl}}
YAML
flags=$(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_bf16|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags $flags)"
start=$(date +%s.%N)
"$build/src/cli/dfworker" run "$work/p.yaml" --job_dir "$work/job" >"$work/run.log" 2>&1
end=$(date +%s.%N)
python3 -c "print('dfworker run (float32): %.2f s, %.0f sentences/s' % ($end - $start, 2048 / ($end - $start)))"
if grep -q -w -E 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  sed -e 's#            max_batch_size: 64#            max_batch_size: 64\n            load_pipeline_args: {torch_dtype: bfloat16}#' \
      -e "s#$work/out/r#$work/out-bf16/r#" "$work/p.yaml" >"$work/p-bf16.yaml"
  start=$(date +%s.%N)
  "$build/src/cli/dfworker" run "$work/p-bf16.yaml" --job_dir "$work/job-bf16" >"$work/run-bf16.log" 2>&1
  end=$(date +%s.%N)
  python3 -c "print('dfworker run (bfloat16): %.2f s, %.0f sentences/s' % ($end - $start, 2048 / ($end - $start)))"
  python3 - "$work" <<'PY'
import glob, json, sys
def rows(d):
    out = {}
    for f in glob.glob(d + "/*"):
        for l in open(f):
            r = json.loads(l); out[r["id"]] = r["inference"]["inference"][0]
    return out
a, b = rows(sys.argv[1] + "/out"), rows(sys.argv[1] + "/out-bf16")
same = sum(1 for k in a if a[k]["label"] == b[k]["label"])
diff = max(abs(a[k]["score"] - b[k]["score"]) for k in a)
print("bfloat16 vs float32: labels equal on %d of %d rows, largest score difference %.6f" % (same, len(a), diff))
flipped = [a[k]["score"] for k in a if a[k]["label"] != b[k]["label"]]
if flipped:  # a 2-label top score near 0.5 is a near tie: how near were the rows that flipped
    print("  the %d rows whose label differs: float32 top score at most %.6f (a tie is 0.5)" % (len(flipped), max(flipped)))
PY
fi
"$venv/bin/python" - "$work" "$cls" "$(nproc)" <<'PY' 2>/dev/null
import glob, json, sys, time, torch
from transformers import pipeline
work, cls, cores = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(cores)
rows = [json.loads(l) for l in open(work + "/in.jsonl")]
p = pipeline("text-classification", model=cls, device="cpu")
p([r["text"] for r in rows[:32]], batch_size=32)
t = time.time(); out = p([r["text"] for r in rows], batch_size=32); d = time.time() - t
print("transformers pipeline (torch %d threads, batch 32): %.2f s, %.0f sentences/s" % (cores, d, len(rows) / d))
got = {}
for f in glob.glob(work + "/out/*"):
    for l in open(f):
        r = json.loads(l); got[r["id"]] = r["inference"]["inference"][0]
bad = sum(1 for r, o in zip(rows, out) if got[r["id"]]["label"] != o["label"] or abs(got[r["id"]]["score"] - o["score"]) > 1e-4)
print("rows compared: %d, mismatches (label, or score beyond 1e-4): %d" % (len(got), bad))
PY
"$venv/bin/python" - "$work" "$cls" "$(nproc)" <<'PY' 2>/dev/null
# The ONNX Runtime twin: the same BertForSequenceClassification as an ONNX graph (dynamic batch and
# sequence), tokenized by `tokenizers` through the fast tokenizer, batches of 32 in input order
# padded to their longest, softmax of the logits; tokenization and inference timed together.
import glob, json, os, sys, time
import numpy as np, onnxruntime as ort, torch
from transformers import AutoTokenizer, BertForSequenceClassification
work, cls, cores = sys.argv[1], sys.argv[2], int(sys.argv[3])
onnx_path = os.path.join(cls, "classifier.onnx")
tok = AutoTokenizer.from_pretrained(cls)
if not os.path.exists(onnx_path):
    m = BertForSequenceClassification.from_pretrained(cls, attn_implementation="eager").eval()
    enc = tok(["a warm-up sentence", "another one"], padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.onnx.export(m, (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]), onnx_path,
                          input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
                          opset_version=17, dynamo=False,
                          dynamic_axes={k: {0: "batch", 1: "seq"} for k in ("input_ids", "attention_mask", "token_type_ids")})
opts = ort.SessionOptions()
opts.intra_op_num_threads = cores
sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
id2label = BertForSequenceClassification.config_class.from_pretrained(cls).id2label
rows = [json.loads(l) for l in open(work + "/in.jsonl")]
texts = [r["text"] for r in rows]
def run(batch):
    e = tok(batch, padding=True, truncation=True, max_length=512, return_tensors="np")
    logits = sess.run(["logits"], {k: e[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})[0]
    p = np.exp(logits - logits.max(axis=1, keepdims=True)); p /= p.sum(axis=1, keepdims=True)
    return [(id2label[int(i)], float(q[i])) for q, i in zip(p, p.argmax(axis=1))]
run(texts[:32])
t = time.time(); out = [o for s in range(0, len(texts), 32) for o in run(texts[s:s + 32])]; d = time.time() - t
print("ONNX Runtime %s (%d threads, batch 32, in-process: no start-up or file I/O, unlike the dfworker run): %.2f s, %.0f sentences/s" % (ort.__version__, cores, d, len(texts) / d))
got = {}
for f in glob.glob(work + "/out/*"):
    for l in open(f):
        r = json.loads(l); got[r["id"]] = r["inference"]["inference"][0]
bad = sum(1 for r, (label, score) in zip(rows, out) if got[r["id"]]["label"] != label or abs(got[r["id"]]["score"] - score) > 1e-4)
print("rows compared with ONNX Runtime: %d, mismatches (label, or score beyond 1e-4): %d" % (len(got), bad))
PY
