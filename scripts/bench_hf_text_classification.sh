#!/usr/bin/env bash
# Text classification on a MiniLM-based classifier, 2,048 sentences: `dfworker run` with
# HuggingFacePipelineModelHandler against transformers' own pipeline (torch, CPU, batch 32) on the
# same cores, and the rows compared (labels exactly, scores within 1e-4). Never in CI.
#
#   scripts/bench_hf_text_classification.sh [BUILD_DIR] [MINILM_DIR]
#
# MINILM_DIR defaults to ~/.cache/dfworker/all-MiniLM-L6-v2 (scripts/fetch_minilm.sh); the
# classifier is that encoder with a seeded random 2-label head (BertForSequenceClassification),
# written once to $DFW_MODEL_CACHE/minilm-classifier. The venv is scripts/check_hf_pipelines.sh's.
# An ONNX Runtime twin of the job is not part of this script yet.
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
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
start=$(date +%s.%N)
"$build/src/cli/dfworker" run "$work/p.yaml" --job_dir "$work/job" >"$work/run.log" 2>&1
end=$(date +%s.%N)
python3 -c "print('dfworker run: %.2f s, %.0f sentences/s' % ($end - $start, 2048 / ($end - $start)))"
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
