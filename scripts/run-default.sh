#!/usr/bin/env bash
# Builds dfworker and runs the embedded default pipeline on an emulated NVIDIA L4 worker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh build >&2
exec build/src/cli/dfworker run pipelines/default.yaml \
  --dataflow_service_options="worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps" \
  --machine_type=g2-standard-8 "$@"
