#!/usr/bin/env bash
# Checks HuggingFacePipelineModelHandler against transformers itself (never in CI: it needs PyPI).
#
#   scripts/check_hf_pipelines.sh [BUILD_DIR]    (default: build)
#
# 1. installs transformers + torch (CPU use; PyPI's torch brings its CUDA libraries, ~5 GB) into a
#    venv, $DFW_HF_VENV (default ~/.cache/dfworker/hf-venv), once;
# 2. rewrites testdata/hf/references/*.json with transformers.pipeline(...) and tokenizers on the
#    committed tiny models (scripts/hf_pipeline_references.py); `git diff testdata/hf/references`
#    then shows any drift between the transformers version installed and the committed one;
# 3. runs the C++ tests that compare dfworker's results with those references (labels, tokens,
#    entity groups, offsets exactly; scores within 1e-4).
# To regenerate the tiny models themselves: $DFW_HF_VENV/bin/python scripts/make_tiny_hf_models.py
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
venv=${DFW_HF_VENV:-$HOME/.cache/dfworker/hf-venv}
if ! "$venv/bin/python" -c "import torch, transformers, tokenizers" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet torch "transformers>=4.40" tokenizers safetensors numpy
fi
"$venv/bin/python" -c "import torch, transformers, tokenizers; print('transformers', transformers.__version__, '| torch', torch.__version__, '| tokenizers', tokenizers.__version__)"
"$venv/bin/python" scripts/hf_pipeline_references.py testdata/hf 2>/dev/null | grep -c '^wrote' | sed 's/^/references written: /'
cmake --build "$build" --target dfw_inference_tests dfw_stages_tests
"$build/tests/inference/dfw_inference_tests" --gtest_filter='*HfTokenizer*:*HfPipeline*'
"$build/tests/stages/dfw_stages_tests" --gtest_filter='HfPipelineStage*'
if git diff --quiet -- testdata/hf/references; then
  echo "references unchanged: dfworker matches this transformers on every committed case"
else
  echo "references changed (git diff testdata/hf/references): the tests above ran against the new ones"
fi
