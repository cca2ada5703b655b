#!/usr/bin/env bash
# Builds only what the demo runs — dfworker, and the CUDA backend library only where an NVIDIA
# driver could load it (without libcuda the run emulates the GPU and never loads the library) —
# then runs the default pipeline on a g2-standard-8 with an NVIDIA L4 and MPS (emulated without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=dfworker
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then targets+=" dfw_backend_cuda"; fi
TARGETS=$targets bash scripts/build.sh build >&2
exec build/src/cli/dfworker run pipelines/default.yaml \
  --dataflow_service_options="worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps" \
  --machine_type=g2-standard-8 "$@"
