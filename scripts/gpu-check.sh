#!/usr/bin/env bash
# One prepared GPU check (< 8 minutes on one GPU, 16 cores). Run it on a machine with an NVIDIA
# GPU; every step prints PASS, FAIL or SKIP (with the reason), and a step whose piece is not built
# yet or whose hardware is absent is skipped rather than failing the script. Exit status: the
# number of failed steps (0 = all passed or skipped).
#
#   bash scripts/gpu-check.sh                # build in build-gpu, run every step
#   DFW_GPU_CHECK_BUILD=build-x bash scripts/gpu-check.sh
#   DFW_GPU_CHECK_PIPELINE=path.yaml DFW_GPU_CHECK_RECORDS=N DFW_GPU_CHECK_FLAGS='...'  # step 6
#
# Steps: 1 GPU and driver facts; 2 configure + build with -DDFW_WITH_CUDA=ON; 3 backend parity
# tests (the CUDA rows must run, not skip); 4 device tests (ledger, MPS controllers) including the
# real-daemon test; 5 a real MPS daemon in a temp dir with the parity tests as its client; 6 a
# pipeline with 8 SDK processes without and with MPS: measured GPU memory vs the plan, throughput;
# 6b the same pipeline with model_copies: 2 under MPS: model hosts export their GPU copy through CUDA IPC;
# 7 sentence embeddings (MiniLM: $DFW_MINILM_DIR, else a MiniLM-shaped model made by
# scripts/make_bert_shaped.py) with 1 and 8 SDK processes, without and with MPS: sentences/s.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${DFW_GPU_CHECK_BUILD:-build-gpu}
JOBS=$(nproc)
FAILED=0
TMP=$(mktemp -d /tmp/dfw-gpu-check.XXXXXX)
MPS_PIPE=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [ -n "$MPS_PIPE" ] && [ -e "$MPS_PIPE/nvidia-cuda-mps-control.pid" ]; then
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$TMP/mps-log nvidia-cuda-mps-control >/dev/null 2>&1
  fi
  [ -n "${SAMPLER:-}" ] && kill "$SAMPLER" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

say() { printf '\n== %s\n' "$*"; }
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }
skip() { echo "SKIP: $*"; }

HAVE_GPU=0
say "1. GPU and driver"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  HAVE_GPU=1
  nvidia-smi --query-gpu=index,name,compute_cap,memory.total,driver_version --format=csv
  pass "nvidia-smi sees $(nvidia-smi -L | wc -l) GPU(s)"
else
  skip "no NVIDIA GPU or driver here (nvidia-smi missing or failing); GPU rows below will skip"
fi

say "2. configure + build with CUDA ($BUILD)"
BUILT=()
if ! timeout 120 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFW_WITH_CUDA=ON -DDFW_WERROR=OFF -DDFW_BENCH=OFF \
     >"$TMP/configure.log" 2>&1; then
  tail -20 "$TMP/configure.log"
  fail "configure with -DDFW_WITH_CUDA=ON"
else
  for t in dfw_backend_cuda dfw_backend_tests dfw_device_tests dfworker; do
    if timeout 300 cmake --build "$BUILD" -j"$JOBS" --target "$t" >"$TMP/build-$t.log" 2>&1; then
      BUILT+=("$t")
      pass "built $t"
    elif grep -q "unknown target" "$TMP/build-$t.log"; then
      skip "$t: no such target yet"
    else
      tail -15 "$TMP/build-$t.log"
      fail "build $t"
    fi
  done
fi
built() { [[ " ${BUILT[*]} " == *" $1 "* ]]; }

say "3. backend parity (CPU reference vs CUDA)"
if ! built dfw_backend_tests; then
  skip "dfw_backend_tests not built"
else
  export DFW_CUDA_BACKEND_PATH="$PWD/$BUILD/src/backend/cuda/libdfw_backend_cuda.so"
  timeout 300 "$BUILD/tests/backend/dfw_backend_tests" --gtest_filter='*Parity*:CudaIpc.*' >"$TMP/parity.log" 2>&1
  rc=$?
  grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$TMP/parity.log" | sort | uniq -c | head -40
  skipped=$(grep -c -E '^\[  SKIPPED \] (AllCases/.*cuda_|CudaIpc.Parent)' "$TMP/parity.log")
  if [ $rc -ne 0 ]; then
    grep -E 'Failure|got .* reference' "$TMP/parity.log" | head -20
    fail "parity tests (exit $rc)"
  elif [ "$HAVE_GPU" = 1 ] && [ "$skipped" -gt 0 ]; then
    grep -m1 "unavailable" "$TMP/parity.log"
    fail "a GPU is present but $skipped CUDA rows skipped"
  elif [ "$HAVE_GPU" = 1 ]; then
    pass "parity: CUDA rows ran and matched the CPU reference; CUDA IPC: a second process read the exported bytes"
  else
    skip "parity: CPU rows passed; CUDA rows skipped (no GPU): $(grep -m1 -o "unavailable: .*" "$TMP/parity.log" | cut -c1-160)"
  fi
fi

say "4. device tests (ledger, emulated + nvidia MPS controllers)"
MPS_CONTROL=$(command -v nvidia-cuda-mps-control || true)
if ! built dfw_device_tests; then
  skip "dfw_device_tests not built"
else
  if DFW_TEST_MPS_CONTROL="$MPS_CONTROL" timeout 180 "$BUILD/tests/device/dfw_device_tests" >"$TMP/device.log" 2>&1; then
    pass "device tests: $(grep -E '^\[  PASSED' "$TMP/device.log")"
    grep -A8 "RealDaemonStartsAnswersAndQuits" "$TMP/device.log" | grep -E "OK|SKIPPED|Control" | head -10
  else
    grep -E 'Failure|FAILED' "$TMP/device.log" | head -20
    fail "device tests"
  fi
fi

say "5. real MPS daemon in a private temp dir"
if [ -z "$MPS_CONTROL" ]; then
  skip "nvidia-cuda-mps-control not on PATH"
elif [ "$HAVE_GPU" = 0 ]; then
  skip "no GPU"
else
  MPS_PIPE=$TMP/mps-pipe
  mkdir -p "$MPS_PIPE" "$TMP/mps-log" && chmod 0700 "$MPS_PIPE" "$TMP/mps-log"
  export CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$TMP/mps-log
  if timeout 30 nvidia-cuda-mps-control -d; then
    sleep 1
    echo get_server_list | timeout 10 nvidia-cuda-mps-control
    if built dfw_backend_tests; then
      # The parity tests are an MPS client: their CUDA context goes through the daemon.
      timeout 180 "$BUILD/tests/backend/dfw_backend_tests" --gtest_filter='*Parity*cuda_gemm*' >"$TMP/mps-client.log" 2>&1
      echo "client run: $(grep -E '^\[  (PASSED|FAILED)' "$TMP/mps-client.log" | tr '\n' ' ')"
    fi
    echo quit | timeout 10 nvidia-cuda-mps-control
    sleep 1
    tail -15 "$TMP/mps-log/control.log" 2>/dev/null
    if grep -q "NEW CLIENT\|New client" "$TMP/mps-log/control.log" "$TMP/mps-log/server.log" 2>/dev/null; then
      pass "MPS daemon started, served a client, quit"
    else
      fail "MPS daemon ran but control.log shows no client"
    fi
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  else
    fail "nvidia-cuda-mps-control -d failed"
  fi
fi

say "6. pipeline with 8 SDK processes, without and with MPS"
PIPELINE=${DFW_GPU_CHECK_PIPELINE:-pipelines/default.yaml}
RECORDS=${DFW_GPU_CHECK_RECORDS:-}
# Extra run flags, e.g. "--accelerator_backend=cuda" once the options module knows it.
read -r -a EXTRA <<<"${DFW_GPU_CHECK_FLAGS:-}"
ACCEL="type:nvidia-l4;count:1;install-nvidia-driver"
DFW="$BUILD/src/cli/dfworker"
if ! built dfworker; then
  skip "dfworker not built"
elif [ ! -f "$PIPELINE" ]; then
  skip "no pipeline at $PIPELINE (set DFW_GPU_CHECK_PIPELINE)"
else
  for mode in no_mps mps; do
    opts="$ACCEL"
    [ "$mode" = mps ] && opts="$ACCEL;use_nvidia_mps"
    # g2-standard-8: 8 vCPUs, so 8 SDK processes.
    flags=(--machine_type=g2-standard-8 "--dataflow_service_options=worker_accelerator=$opts" "${EXTRA[@]}")
    echo "-- $mode: plan"
    if ! timeout 60 "$DFW" run "$PIPELINE" "${flags[@]}" --dry_run >"$TMP/plan-$mode.log" 2>&1; then
      tail -10 "$TMP/plan-$mode.log"
      fail "dry run ($mode)"
      continue
    fi
    grep -i -E "memory|process|copies|mps" "$TMP/plan-$mode.log" | head -12
    if [ "$HAVE_GPU" = 0 ]; then
      skip "pipeline ($mode): no GPU to run on (plan above)"
      continue
    fi
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$TMP/mem-$mode.log" 2>/dev/null &
    SAMPLER=$!
    start=$(date +%s.%N)
    timeout 150 "$DFW" run "$PIPELINE" "${flags[@]}" >"$TMP/run-$mode.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; SAMPLER=""
    if grep -q "not implemented" "$TMP/run-$mode.log"; then
      skip "dfworker run cannot execute pipelines yet: $(grep -m1 'not implemented' "$TMP/run-$mode.log" | cut -c1-120)"
      break
    fi
    secs=$(echo "$end - $start" | bc)
    peak=$(sort -n "$TMP/mem-$mode.log" | tail -1)
    echo "-- $mode: exit $rc, ${secs}s, peak GPU memory used ${peak:-?} MiB (nvidia-smi, whole device)"
    [ -n "$RECORDS" ] && echo "-- $mode: throughput $(echo "scale=1; $RECORDS / $secs" | bc) records/s"
    if [ $rc -eq 0 ]; then pass "pipeline ($mode)"; else tail -10 "$TMP/run-$mode.log"; fail "pipeline ($mode)"; fi
  done
fi

say "6b. shared model copies on the GPU: model_copies: 2, 8 SDK processes, MPS (hosts export through CUDA IPC)"
if ! built dfworker || [ ! -f "$PIPELINE" ]; then
  skip "dfworker not built or no pipeline"
elif ! grep -q "device: GPU" "$PIPELINE"; then
  skip "$PIPELINE has no 'device: GPU' line to add model_copies to"
else
  sed -e 's#^\( *\)device: GPU.*#&\n\1model_copies: 2#' "$PIPELINE" >"$TMP/shared.yaml"
  flags=(--machine_type=g2-standard-8 "--dataflow_service_options=worker_accelerator=$ACCEL;use_nvidia_mps" "${EXTRA[@]}")
  timeout 60 "$DFW" run "$TMP/shared.yaml" "${flags[@]}" --dry_run 2>&1 | grep -i -E "cop(y|ies)|memory" | head -6
  if [ "$HAVE_GPU" = 0 ]; then
    skip "shared copies on the GPU: no GPU to run on"
  else
    timeout 150 "$DFW" run "$TMP/shared.yaml" "${flags[@]}" --job_dir "$TMP/shared-job" >"$TMP/shared.log" 2>&1
    rc=$?
    exported=$(cat "$TMP"/shared-job/logs/model-host-*.log 2>/dev/null | grep -c "exported through CUDA IPC")
    opened=$(cat "$TMP"/shared-job/logs/*.log "$TMP/shared.log" 2>/dev/null | grep -c "GPU copy (CUDA IPC")
    echo "-- exit $rc; hosts that exported: $exported; SDK processes that ran on a host's GPU copy: $opened"
    grep -h -m3 -E "cannot use model host|no CUDA backend" "$TMP"/shared-job/logs/*.log 2>/dev/null | cut -c1-200
    if [ $rc -eq 0 ] && [ "$exported" -ge 2 ] && [ "$opened" -ge 1 ]; then pass "shared copies through CUDA IPC"
    else tail -10 "$TMP/shared.log"; fail "shared copies through CUDA IPC"; fi
  fi
fi

say "7. sentence embeddings (MiniLM shapes), 1 and 8 SDK processes, without and with MPS"
SENTENCES=${DFW_GPU_CHECK_SENTENCES:-4000}
MINILM=${DFW_MINILM_DIR:-}
if ! built dfworker; then
  skip "dfworker not built"
else
  if [ -z "$MINILM" ] || [ ! -f "$MINILM/model.safetensors" ]; then
    MINILM=$TMP/minilm-shaped
    python3 scripts/make_bert_shaped.py "$MINILM" >/dev/null && echo "-- model: MiniLM-shaped, made-up weights ($MINILM)"
  else
    echo "-- model: $MINILM"
  fi
  python3 - "$TMP/sentences.jsonl" "$SENTENCES" <<'PY'
import json, random, sys
words = ("search retrieval embedding vector model sentence query document ranking semantic similarity "
         "neural network training inference batch latency throughput memory pipeline worker résumé café "
         "naïve 日本 中文 — don't 3.5 100%").split()
rng = random.Random(7)
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": i, "text": " ".join(rng.choice(words) for _ in range(rng.randint(4, 110)))}) + "\n")
PY
  sed -e "s#path: testdata/tiny_bert/sentences.jsonl#path: $TMP/sentences.jsonl#" \
      -e "s#model_path: testdata/tiny_bert #model_path: $MINILM #" \
      -e "s#out/embed_sentences/#$TMP/embed-out/#" pipelines/embed_sentences.yaml >"$TMP/embed.yaml"
  if [ ! -f "$MINILM/model.safetensors" ] || ! grep -q "$TMP/sentences.jsonl" "$TMP/embed.yaml"; then
    fail "could not prepare the embedding pipeline (model or pipelines/embed_sentences.yaml changed shape)"
  elif [ "$HAVE_GPU" = 0 ]; then
    skip "embedding runs: no GPU to run on"
  else
    for procs in 1 8; do
      for mode in no_mps mps; do
        if [ "$procs" = 1 ] && [ "$mode" = mps ]; then
          echo "-- 1 process, mps: not run (Dataflow refuses MPS with one SDK process: mps-single-sdk-process)"
          continue
        fi
        opts="$ACCEL"
        [ "$mode" = mps ] && opts="$ACCEL;use_nvidia_mps"
        flags=(--machine_type=g2-standard-8 "--dataflow_service_options=worker_accelerator=$opts" "${EXTRA[@]}")
        [ "$procs" = 1 ] && flags+=(--experiments=no_use_multiple_sdk_containers)
        rm -rf "$TMP/embed-out"
        start=$(date +%s.%N)
        timeout 240 "$DFW" run "$TMP/embed.yaml" "${flags[@]}" >"$TMP/embed-$procs-$mode.log" 2>&1
        rc=$?
        end=$(date +%s.%N)
        secs=$(echo "$end - $start" | bc)
        rows=$(cat "$TMP"/embed-out/embeddings-*.jsonl 2>/dev/null | wc -l)
        echo "-- $procs process(es), $mode: exit $rc, $rows/$SENTENCES embeddings in ${secs}s =" \
          "$(echo "scale=1; $rows / $secs" | bc) sentences/s (process start and model load included)"
        grep -m2 -i -E "backend|cuda|emulat" "$TMP/embed-$procs-$mode.log" | cut -c1-160
        if [ $rc -eq 0 ] && [ "$rows" = "$SENTENCES" ]; then pass "embeddings, $procs process(es), $mode"
        else tail -8 "$TMP/embed-$procs-$mode.log"; fail "embeddings, $procs process(es), $mode"; fi
      done
    done
  fi
fi

say "summary"
echo "$FAILED failed step(s)"
exit "$FAILED"
