#!/usr/bin/env bash
# Checks dfworker's text generation (HuggingFacePipelineModelHandler, task: text-generation) against
# transformers itself (never in CI: it needs PyPI).
#
#   scripts/check_text_generation.sh [--models] [BUILD_DIR]    (default: build)
#
# 1. installs transformers + torch (CPU use; PyPI's torch brings its CUDA libraries, ~5 GB) into a
#    venv, $DFW_HF_VENV (default ~/.cache/dfworker/hf-venv), once;
# 2. with --models, rewrites the tiny decoder-only models in testdata/hf/decoders/
#    (scripts/make_tiny_decoder_models.py, which also re-picks seeds with clear greedy margins);
# 3. rewrites testdata/hf/references/text_generation_*.json with transformers.pipeline("text-generation")
#    on those models (scripts/hf_generation_references.py);
# 4. builds and runs the C++ tests matching '*TextGeneration*:*Decoder*' in every test binary that has
#    them (a binary without such tests is reported and skipped; so is a missing BUILD_DIR);
# 5. says whether the references differ from the committed ones (git status testdata/hf/references):
#    a difference is drift between the installed transformers and the one that wrote them.
set -euo pipefail
cd "$(dirname "$0")/.."
models=0
if [[ "${1:-}" == "--models" ]]; then models=1; shift; fi
build=${1:-build}
filter='*TextGeneration*:*Decoder*'
venv=${DFW_HF_VENV:-$HOME/.cache/dfworker/hf-venv}
if ! "$venv/bin/python" -c "import torch, transformers, tokenizers, safetensors" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet torch "transformers>=5.0" tokenizers safetensors numpy
fi
"$venv/bin/python" -c "import torch, transformers, tokenizers; print('transformers', transformers.__version__, '| torch', torch.__version__, '| tokenizers', tokenizers.__version__)"
if (( models )); then
  "$venv/bin/python" scripts/make_tiny_decoder_models.py testdata/hf/decoders 2>/dev/null | grep -E '^(wrote|  )'
fi
"$venv/bin/python" scripts/hf_generation_references.py testdata/hf/decoders 2>/dev/null | grep -E '^(wrote|min)'

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  echo "no CMake build in '$build': C++ tests skipped (configure one with scripts/build.sh, or pass BUILD_DIR)"
else
  cmake --build "$build" --target dfw_inference_tests dfw_stages_tests
  ran=0
  for bin in "$build"/tests/*/dfw_*_tests; do
    [[ -x "$bin" ]] || continue
    n=$("$bin" --gtest_list_tests --gtest_filter="$filter" | grep -c '^  ' || true)
    if (( n > 0 )); then
      echo "== $bin --gtest_filter='$filter'"
      "$bin" --gtest_filter="$filter"
      ran=1
    fi
  done
  if (( ! ran )); then
    echo "no test matching '$filter' in $build/tests/*/dfw_*_tests yet: nothing compared with the references"
  fi
fi

changed=$(git status --porcelain -- 'testdata/hf/references/text_generation_*.json' testdata/hf/decoders)
if [[ -z "$changed" ]]; then
  echo "references unchanged: this transformers agrees with the committed ones on every case"
else
  echo "references or models differ from the committed ones (new or changed):"
  echo "$changed"
fi
