#!/usr/bin/env bash
# Builds only what the demo runs (dfworker, and the CUDA backend library where nvcc exists), then
# runs the embedded default pipeline on an emulated NVIDIA L4 worker (g2-standard-8) with MPS.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS="dfworker dfw_backend_cuda" bash scripts/build.sh build >&2
exec build/src/cli/dfworker run pipelines/default.yaml \
  --dataflow_service_options="worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps" \
  --machine_type=g2-standard-8 "$@"
