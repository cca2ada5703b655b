#!/usr/bin/env bash
# One prepared GPU check (< 8 minutes on one GPU, 16 cores). Run it on a machine with an NVIDIA
# GPU; every step prints PASS, FAIL or SKIP (with the reason), and a step whose piece is not built
# yet or whose hardware is absent is skipped rather than failing the script. Every PASS/FAIL/SKIP
# line also goes to $OUT/gpu-check.txt when $OUT is set (the device tool brings $OUT back), with the
# whole output in $OUT/gpu-check.log and the steps' logs in $OUT/gpu-check-logs.tar.gz. Exit status:
# the number of failed steps (0 = all passed or skipped).
#
#   bash scripts/gpu-check.sh --bundle .gpu  # the lent GPU machine: use a bundle made here by
#                                            # scripts/gpu-bundle.sh (no configure, no build)
#   bash scripts/gpu-check.sh                # build in build-gpu, run every step (needs our Debian libraries)
#   DFW_GPU_CHECK_BUILD=build-x bash scripts/gpu-check.sh
#   DFW_GPU_CHECK_PIPELINE=path.yaml DFW_GPU_CHECK_RECORDS=N DFW_GPU_CHECK_FLAGS='...'  # step 6
#   DFW_GPU_CHECK_BUDGET_S=440               # with --bundle (default 440; none without): later steps SKIP
#
# With --bundle, step 0 is a smoke step (about 10 s): the bundle is whole, this host's glibc is new
# enough, the gzipped libraries unpack, cuBLAS is found and every symbol of libdfw_backend_cuda.so
# resolves, the three binaries start, nvidia-smi sees a GPU, libcuda.so.1 is there and the CUDA
# backend loads (a dry run with --accelerator_backend=cuda selects backend cuda). If any of that
# fails the script stops there with the reason, so a broken bundle or a GPU-less host costs seconds.
# (nvidia-cuda-mps-control missing is a FAIL line but does not stop: steps 3, 6 and 7 still run.)
# --allow-no-gpu turns the GPU items of the smoke step into SKIPs and goes on (scripts/gpu-bundle.sh
# --check runs the CPU-only steps from the bundle that way on a machine without a GPU).
#
# Steps: 0 smoke (--bundle only); 1 GPU and driver facts; 2 configure + build with -DDFW_WITH_CUDA=ON
# (with --bundle: the bundle's facts instead); 3 backend parity tests (the CUDA rows must run, not
# skip); 3b the bfloat16 tensor-core Linear against float32; 4 device tests (ledger, MPS controllers) including the
# real-daemon test; 5 a real MPS daemon in a temp dir with the parity tests as its client; 6 a
# pipeline with 8 SDK processes without and with MPS: measured GPU memory vs the plan, throughput;
# 6b the same pipeline with model_copies: 2 under MPS: model hosts export their GPU copy through CUDA IPC;
# 7 sentence embeddings (MiniLM: $DFW_MINILM_DIR, else a MiniLM-shaped model made by
# scripts/make_bert_shaped.py) with 1 and 8 SDK processes, without and with MPS: sentences/s, and
# one process with dtype float32 vs bfloat16 (speed, and the vectors' cosine); 8 two
# tenants (pipelines/tenants.yaml) under MPS: each process's nvidia-smi memory against its limit;
# 9 pipelines/hf_sentiment.yaml (HuggingFacePipelineModelHandler) with device: cuda vs CPU;
# 10 text generation: pipelines/hf_generate.yaml with device: GPU runs the CUDA decoder engine (its
# log line says so) and gives the CPU's rows, and `dfworker plan` on the Gemma-2B-shaped config
# answers for this GPU;
# 11 the handler efficiency the plan's throughput model uses: the sentence encoder and the MLP
# (float32, one SDK process each, through `dfworker bench --format=json`) reach some GFLOP/s on this
# GPU; divided by the catalog's FP32 peak for it that is each handler's efficiency, written to
# $OUT/gpu-efficiency.json (else a temp file) for `dfworker plan --gpu_efficiency_from`
# (DFW_GPU_CHECK_GPU_TYPE names the catalog GPU when nvidia-smi's name does not match one).
set -uo pipefail
CALLER_PWD=$PWD
BUNDLE=""
ALLOW_NO_GPU=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) BUNDLE=${2:-}; shift 2 || shift ;;
    --bundle=*) BUNDLE=${1#--bundle=}; shift ;;
    --allow-no-gpu) ALLOW_NO_GPU=1; shift ;;
    -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--bundle DIR] [--allow-no-gpu]" >&2; exit 2 ;;
  esac
done
if [ -n "$BUNDLE" ]; then
  case "$BUNDLE" in /*) ;; *) BUNDLE=$CALLER_PWD/$BUNDLE ;; esac
  BUNDLE=$(cd "$BUNDLE" 2>/dev/null && pwd) || { echo "gpu-check: no bundle folder at $BUNDLE" >&2; exit 1; }
fi
cd "$(dirname "$0")/.." || exit 1
REPO=$PWD
BUILD=${DFW_GPU_CHECK_BUILD:-build-gpu}
JOBS=$(nproc)
FAILED=0
TMP=$(mktemp -d /tmp/dfw-gpu-check.XXXXXX)
MPS_PIPE=""
SAMPLER=""
CREATED=()  # LINK|TOP: links this run made at the binaries' compiled-in paths, and the top folder made for each
RESULTS=""
TEE_PID=""
if [ -n "${OUT:-}" ] && mkdir -p "$OUT" 2>/dev/null; then
  RESULTS=$OUT/gpu-check.txt
  : >"$RESULTS"
  exec > >(tee "$OUT/gpu-check.log") 2>&1
  TEE_PID=$!
fi
if [ -n "$BUNDLE" ]; then BUDGET=${DFW_GPU_CHECK_BUDGET_S:-440}; else BUDGET=${DFW_GPU_CHECK_BUDGET_S:-100000}; fi
DEADLINE=$((SECONDS + BUDGET))
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [ -n "$MPS_PIPE" ] && [ -e "$MPS_PIPE/nvidia-cuda-mps-control.pid" ]; then
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$TMP/mps-log nvidia-cuda-mps-control >/dev/null 2>&1
  fi
  [ -n "${SAMPLER:-}" ] && kill "$SAMPLER" 2>/dev/null
  local i link top d
  for ((i = ${#CREATED[@]} - 1; i >= 0; i--)); do
    link=${CREATED[i]%%|*}; top=${CREATED[i]#*|}
    rm -f "$link"
    d=$(dirname "$link")
    while [ "$d" != "$(dirname "$top")" ] && rmdir "$d" 2>/dev/null; do d=$(dirname "$d"); done
  done
  if [ -n "$RESULTS" ]; then
    (cd "$TMP" && find . -maxdepth 2 -name '*.log' -size -4M -print0 | tar --null -T - -czf "$OUT/gpu-check-logs.tar.gz") 2>/dev/null
  fi
  rm -rf "$TMP"
  if [ -n "$TEE_PID" ]; then exec >&- 2>&-; wait "$TEE_PID" 2>/dev/null; fi
}
trap cleanup EXIT

note() { echo "$*"; [ -z "$RESULTS" ] || echo "$*" >>"$RESULTS"; }
say() { printf '\n== %s\n' "$*"; [ -z "$RESULTS" ] || printf '== %s\n' "$*" >>"$RESULTS"; }
pass() { note "PASS: $*"; }
fail() { note "FAIL: $*"; FAILED=$((FAILED + 1)); }
skip() { note "SKIP: $*"; }
# Seconds left for a step that wants $1 (at least 1), and whether less than $1 is left.
tmo() { local left=$((DEADLINE - SECONDS)); [ "$left" -lt "$1" ] || left=$1; [ "$left" -ge 1 ] || left=1; echo "$left"; }
late() { [ $((DEADLINE - SECONDS)) -lt "${1:-20}" ]; }
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
ratio() { awk -v n="$1" -v d="$2" 'BEGIN { if (d > 0) printf "%.1f", n / d; else print "?" }'; }

# Our binaries run through dfw_env: with --bundle, LD_LIBRARY_PATH is the bundle's lib (then what it
# was, for the NVIDIA libraries); other programs (python3, nvidia-smi) keep the host's environment,
# since the bundle's libstdc++ (g++ 12) may be older than the one the host's python was built with.
DFW_LIBPATH=""
dfw_env() {
  if [ -n "$DFW_LIBPATH" ]; then LD_LIBRARY_PATH=$DFW_LIBPATH "$@"; else "$@"; fi
}
MPS_CONTROL=$(command -v nvidia-cuda-mps-control || true)
if [ -z "$MPS_CONTROL" ]; then
  for d in /usr/local/nvidia/bin /usr/bin /usr/local/bin; do
    if [ -x "$d/nvidia-cuda-mps-control" ]; then MPS_CONTROL=$d/nvidia-cuda-mps-control; export PATH=$PATH:$d; break; fi
  done
fi
if ! command -v nvidia-smi >/dev/null 2>&1 && [ -x /usr/local/nvidia/bin/nvidia-smi ]; then export PATH=$PATH:/usr/local/nvidia/bin; fi

BUILT=()
built() { [[ " ${BUILT[*]} " == *" $1 "* ]]; }
DFW="$BUILD/src/cli/dfworker"
BACKEND_TESTS="$BUILD/tests/backend/dfw_backend_tests"
DEVICE_TESTS="$BUILD/tests/device/dfw_device_tests"
ACCEL="type:nvidia-l4;count:1;install-nvidia-driver"

if [ -n "$BUNDLE" ]; then
  say "0. smoke: the bundle ($BUNDLE) starts here and the CUDA backend loads"
  SMOKE_START=$SECONDS
  SMOKE_BAD=()   # the bundle is broken: stop
  SMOKE_GPU=()   # no usable GPU here: stop unless --allow-no-gpu
  smoke_bad() { fail "smoke: $*"; SMOKE_BAD+=("$*"); }
  smoke_gpu() {
    if [ "$ALLOW_NO_GPU" = 1 ]; then skip "smoke: $* (--allow-no-gpu)"; else fail "smoke: $*"; SMOKE_GPU+=("$*"); fi
  }
  missing=()
  for f in bundle.env bin/dfworker bin/dfw_backend_tests bin/dfw_device_tests lib/libdfw_backend_cuda.so share/pipelines/default.yaml; do
    [ -e "$BUNDLE/$f" ] || missing+=("$f")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    smoke_bad "the bundle lacks ${missing[*]} (make it here with bash scripts/gpu-bundle.sh, carry .gpu)"
    note "STOP: the bundle is incomplete; nothing else was run."
    exit "$FAILED"
  fi
  # shellcheck disable=SC1091
  . "$BUNDLE/bundle.env"
  chmod u+x "$BUNDLE"/bin/* 2>/dev/null  # in case the copy lost the mode bits
  note "   bundle: commit $DFW_BUNDLE_COMMIT, built $DFW_BUNDLE_BUILT, CUDA $DFW_BUNDLE_NVCC, architectures $DFW_BUNDLE_CUDA_ARCHITECTURES"
  # The worker's CPython (libdfw_python.so, libpython3.11, the standard library, jinja2) is not
  # carried: the pipelines below use only expressions the compiled subset runs. Say so.
  [ -e "$BUNDLE/lib/libdfw_python.so" ] ||
    skip "python: the bundle carries no libdfw_python.so/libpython3.11: callables the expression subset cannot run, Jinja templates and the Parquet IOs are not exercised on the device"
  DFW=$BUNDLE/bin/dfworker
  BACKEND_TESTS=$BUNDLE/bin/dfw_backend_tests
  DEVICE_TESTS=$BUNDLE/bin/dfw_device_tests
  export DFW_CUDA_BACKEND_PATH=$BUNDLE/lib/libdfw_backend_cuda.so
  # glibc: the bundle carries everything but glibc, so the host's must be at least as new. Its
  # libstdc++/libgcc_s (lib/cxx, g++ 12) need a newer glibc than the rest: where the host's glibc is
  # older, the host's own libstdc++ is used (it must then have GLIBCXX_$DFW_BUNDLE_GLIBCXX).
  glibc_here=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  glibc_ge() { [ -n "$glibc_here" ] && [ "$(printf '%s\n%s\n' "$1" "$glibc_here" | sort -V | head -1)" = "$1" ]; }
  CXX_DIR=""
  if ! glibc_ge "$DFW_BUNDLE_GLIBC"; then
    smoke_bad "this host's glibc is ${glibc_here:-unknown}; the bundle needs $DFW_BUNDLE_GLIBC or newer"
  elif glibc_ge "$DFW_BUNDLE_GLIBC_CXX"; then
    CXX_DIR=$BUNDLE/lib/cxx
    pass "smoke: glibc $glibc_here (bundle needs >= $DFW_BUNDLE_GLIBC; its libstdc++ >= $DFW_BUNDLE_GLIBC_CXX: used)"
  else
    pass "smoke: glibc $glibc_here (bundle needs >= $DFW_BUNDLE_GLIBC); the host's libstdc++ is used (the bundle's needs glibc $DFW_BUNDLE_GLIBC_CXX)"
  fi
  # The big libraries travel gzipped; unpack them next to the bundle's lib, in the temp dir.
  mkdir -p "$TMP/xlib"
  unpack_ok=1
  for z in "$BUNDLE"/lib/*.gz; do
    [ -e "$z" ] || continue
    gzip -dc "$z" >"$TMP/xlib/$(basename "$z" .gz)" 2>/dev/null ||
      python3 -c 'import gzip,shutil,sys; shutil.copyfileobj(gzip.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$z" "$TMP/xlib/$(basename "$z" .gz)" ||
      { smoke_bad "cannot unpack $z"; unpack_ok=0; }
  done
  [ "$unpack_ok" = 1 ] && pass "smoke: unpacked $(find "$TMP/xlib" -type f | wc -l) gzipped libraries"
  DFW_LIBPATH=$BUNDLE/lib${CXX_DIR:+:$CXX_DIR}:$TMP/xlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # cuBLAS is the machine's (the bundle leaves it out); find it where the toolkit or PyTorch keeps it.
  cuda_lib_missing() { dfw_env ldd "$BUNDLE/lib/libdfw_backend_cuda.so" 2>&1 | grep 'not found'; }
  if [ -n "$(cuda_lib_missing)" ]; then
    site=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13*/lib64 \
             $(for s in $site; do echo "$s"/nvidia/cu13/lib "$s"/nvidia/cublas/lib; done); do
      if [ -e "$d/libcublas.so.13" ]; then DFW_LIBPATH=$DFW_LIBPATH:$d; break; fi
    done
  fi
  still=$(cuda_lib_missing | awk '{print $1}' | tr '\n' ' ')
  undefined=$(dfw_env ldd -r "$BUNDLE/lib/libdfw_backend_cuda.so" 2>&1 | grep -c 'undefined symbol')
  if [ -n "$still" ]; then
    smoke_bad "libdfw_backend_cuda.so needs ${still}which this host lacks (looked in LD_LIBRARY_PATH, /usr/local/cuda*, PyTorch's nvidia packages)"
  elif [ "$undefined" -gt 0 ]; then
    dfw_env ldd -r "$BUNDLE/lib/libdfw_backend_cuda.so" 2>&1 | grep -m5 'undefined symbol'
    smoke_bad "libdfw_backend_cuda.so: $undefined undefined symbol(s) against this host's cuBLAS"
  else
    pass "smoke: libdfw_backend_cuda.so links: $(dfw_env ldd "$BUNDLE/lib/libdfw_backend_cuda.so" | awk '/cublas/ {print $1" -> "$3}' | tr '\n' ' ')"
  fi
  # Every library (and symbol version) each bundled ELF needs is found.
  unresolved=$(for f in "$DFW" "$BACKEND_TESTS" "$DEVICE_TESTS" "$BUNDLE/lib/libdfw_backend_cuda.so"; do
                 dfw_env ldd "$f" 2>&1 | grep -E 'not found' | sed "s|^|$(basename "$f"): |"; done | sort -u)
  if [ -n "$unresolved" ]; then
    smoke_bad "unresolved: $(echo "$unresolved" | head -6 | tr '\n' ';' | tr -s ' \t' ' ')"
  else
    pass "smoke: every library the bundle's binaries need resolves"
  fi
  # The binaries start (the whole closure loads).
  if v=$(dfw_env timeout 5 "$DFW" --version 2>&1); then pass "smoke: $v starts"
  else smoke_bad "dfworker --version: $(echo "$v" | tail -2 | tr '\n' ' ')"; fi
  for t in "$BACKEND_TESTS" "$DEVICE_TESTS"; do
    if l=$(dfw_env timeout 5 "$t" --gtest_list_tests 2>&1); then pass "smoke: $(basename "$t") starts ($(echo "$l" | grep -c '^  ') tests)"
    else smoke_bad "$(basename "$t") --gtest_list_tests: $(echo "$l" | tail -2 | tr '\n' ' ')"; fi
  done
  # The test binaries have the build's source and build folders compiled in (DFW_SOURCE_DIR for test
  # data, DFW_BINARY_DIR/src/cli/dfworker for the real-process tests): where those paths are missing,
  # link them to a private copy of the bundle's share/ and to the bundled dfworker.
  SRC=$TMP/src
  cp -r "$BUNDLE/share" "$SRC" && chmod u+x "$SRC"/tests/device/testdata/* 2>/dev/null
  export DFW_CATALOG_DIR=$SRC/configs
  first_missing() { local p=$1; while [ ! -e "$(dirname "$p")" ]; do p=$(dirname "$p"); done; echo "$p"; }
  link_path() {  # link_path TARGET PATH: make PATH a link to TARGET unless PATH exists
    [ -e "$2" ] && return 0
    local top; top=$(first_missing "$2")
    if mkdir -p "$(dirname "$2")" 2>/dev/null && ln -s "$1" "$2" 2>/dev/null; then CREATED+=("$2|$top"); return 0; fi
    return 1
  }
  if link_path "$SRC" "$DFW_BUNDLE_SOURCE_DIR" && link_path "$DFW" "$DFW_BUNDLE_BINARY_DIR/src/cli/dfworker"; then
    pass "smoke: compiled-in paths $DFW_BUNDLE_SOURCE_DIR and $DFW_BUNDLE_BINARY_DIR/src/cli/dfworker resolve${CREATED[*]:+ (linked: ${CREATED[*]%%|*})}"
  else
    fail "smoke: cannot link $DFW_BUNDLE_SOURCE_DIR or $DFW_BUNDLE_BINARY_DIR/src/cli/dfworker (not root?): some device tests will skip or fail"
  fi
  cd "$SRC" || exit 1
  # The GPU: driver, GPU visible, libcuda, MPS control, and the CUDA backend really loading.
  if command -v nvidia-smi >/dev/null 2>&1 && g=$(timeout 10 nvidia-smi -L 2>&1); then
    pass "smoke: nvidia-smi: $(echo "$g" | head -2 | tr '\n' ' ')"
  else
    smoke_gpu "no GPU: nvidia-smi $(command -v nvidia-smi >/dev/null 2>&1 && echo "fails: $(echo "${g:-}" | head -1)" || echo "is not on PATH")"
  fi
  libcuda=""
  if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    libcuda="ldconfig's cache"
  else
    for d in ${DFW_LIBPATH//:/ } /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
      if [ -e "$d/libcuda.so.1" ]; then libcuda=$d; DFW_LIBPATH=$DFW_LIBPATH:$d; break; fi
    done
  fi
  if [ -n "$libcuda" ]; then pass "smoke: libcuda.so.1 found ($libcuda)"
  else smoke_gpu "no NVIDIA driver: libcuda.so.1 is neither in ldconfig's cache nor in LD_LIBRARY_PATH or /usr/local/nvidia/lib64"; fi
  if [ -n "$MPS_CONTROL" ]; then pass "smoke: nvidia-cuda-mps-control at $MPS_CONTROL"
  elif [ "$ALLOW_NO_GPU" = 1 ]; then skip "smoke: nvidia-cuda-mps-control not found (--allow-no-gpu)"
  else fail "smoke: nvidia-cuda-mps-control not found (PATH, /usr/local/nvidia/bin): the MPS steps will skip; going on"; fi
  if [ ${#SMOKE_BAD[@]} -eq 0 ]; then
    dfw_env timeout 20 "$DFW" run pipelines/default.yaml --dry_run --accelerator_backend=cuda --machine_type=g2-standard-8 \
      "--dataflow_service_options=worker_accelerator=$ACCEL" >"$TMP/smoke-backend.log" 2>&1
    rc=$?
    # The plan's accelerator line names the backend in use (a validation finding may still set rc).
    if grep -q "backend cuda" "$TMP/smoke-backend.log"; then
      pass "smoke: the CUDA backend loads: $(grep -m1 -o 'accelerator: .*' "$TMP/smoke-backend.log" | tr -s ' ' | cut -c1-150) (dry run exit $rc)"
    else
      why=$(grep -m1 -E '^error' "$TMP/smoke-backend.log" || grep -v '^\s*$' "$TMP/smoke-backend.log" | tail -3 | tr '\n' ' ')
      smoke_gpu "the CUDA backend does not load (dry run with --accelerator_backend=cuda, exit $rc): $(echo "$why" | cut -c1-400)"
    fi
  fi
  note "   smoke step: $((SECONDS - SMOKE_START)) s"
  if [ ${#SMOKE_BAD[@]} -gt 0 ]; then
    note "STOP: the bundle does not work on this host (${#SMOKE_BAD[@]} problem(s) above); nothing else was run."
    exit "$FAILED"
  fi
  if [ ${#SMOKE_GPU[@]} -gt 0 ]; then
    note "STOP: no usable GPU here (${#SMOKE_GPU[@]} item(s) above; first: ${SMOKE_GPU[0]}); nothing else was run. The bundle itself starts: see the PASS lines."
    exit "$FAILED"
  fi
  BUILT=(dfw_backend_cuda dfw_backend_tests dfw_device_tests dfworker)
fi

HAVE_GPU=0
say "1. GPU and driver"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  HAVE_GPU=1
  nvidia-smi --query-gpu=index,name,compute_cap,memory.total,driver_version --format=csv
  pass "nvidia-smi sees $(nvidia-smi -L | wc -l) GPU(s)"
else
  skip "no NVIDIA GPU or driver here (nvidia-smi missing or failing); GPU rows below will skip"
fi

if [ -n "$BUNDLE" ]; then
  say "2. bundle (no configure, no build)"
  pass "using $BUNDLE: commit $DFW_BUNDLE_COMMIT, CUDA architectures $DFW_BUNDLE_CUDA_ARCHITECTURES, LD_LIBRARY_PATH for our binaries: $DFW_LIBPATH"
else
say "2. configure + build with CUDA ($BUILD)"
if ! timeout 120 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFW_WITH_CUDA=ON -DDFW_WERROR=OFF -DDFW_BENCH=OFF \
     -DDFW_TEST_HOOKS=ON >"$TMP/configure.log" 2>&1; then
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
export DFW_CUDA_BACKEND_PATH="$PWD/$BUILD/src/backend/cuda/libdfw_backend_cuda.so"
fi

say "3. backend parity (CPU reference vs CUDA)"
if ! built dfw_backend_tests; then
  skip "dfw_backend_tests not built"
elif late 30; then
  skip "parity: out of time (budget ${BUDGET}s)"
else
  dfw_env timeout "$(tmo 300)" "$BACKEND_TESTS" --gtest_filter='*Parity*:CudaIpc.*' >"$TMP/parity.log" 2>&1
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

say "3b. bfloat16 Linear layers on the tensor cores (cublasGemmEx) against float32"
if ! built dfw_backend_tests; then
  skip "dfw_backend_tests not built"
elif late 20; then
  skip "bf16 parity: out of time (budget ${BUDGET}s)"
else
  dfw_env timeout "$(tmo 120)" "$BACKEND_TESTS" --gtest_filter='CudaLowPrecision.*' >"$TMP/bf16.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    grep -E 'Failure|Expected|Which|got' "$TMP/bf16.log" | head -12
    fail "bf16 Linear parity (exit $rc)"
  elif grep -q '^\[  SKIPPED \] CudaLowPrecision' "$TMP/bf16.log"; then
    reason=$(grep -m1 -oE "(no CUDA backend here|dtype 'bfloat16' on cuda needs).*" "$TMP/bf16.log" | cut -c1-160)
    if [ "$HAVE_GPU" = 1 ] && ! echo "$reason" | grep -q "compute capability"; then fail "a GPU is present but the bf16 test skipped: $reason"
    else skip "bf16 Linear: $reason"; fi
  else
    pass "bf16 Linear (cublasGemmEx, bf16 in, fp32 accumulate and out) within 1% of float32 on every test shape"
  fi
fi

say "4. device tests (ledger, emulated + nvidia MPS controllers)"
if ! built dfw_device_tests; then
  skip "dfw_device_tests not built"
elif late 30; then
  skip "device tests: out of time (budget ${BUDGET}s)"
else
  if DFW_TEST_MPS_CONTROL="$MPS_CONTROL" dfw_env timeout "$(tmo 180)" "$DEVICE_TESTS" >"$TMP/device.log" 2>&1; then
    pass "device tests: $(grep -oE '^\[  PASSED  \] [0-9]+' "$TMP/device.log" | grep -oE '[0-9]+$') passed$(grep -q '^\[  SKIPPED \] [A-Za-z]' "$TMP/device.log" &&
          echo ", skipped: $(grep -E '^\[  SKIPPED \] [A-Za-z]' "$TMP/device.log" | awk '{print $4}' | sort -u | tr '\n' ' ')")"
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
elif late 40; then
  skip "MPS daemon: out of time (budget ${BUDGET}s)"
else
  MPS_PIPE=$TMP/mps-pipe
  mkdir -p "$MPS_PIPE" "$TMP/mps-log" && chmod 0700 "$MPS_PIPE" "$TMP/mps-log"
  export CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$TMP/mps-log
  if timeout 30 nvidia-cuda-mps-control -d; then
    sleep 1
    echo get_server_list | timeout 10 nvidia-cuda-mps-control
    if built dfw_backend_tests; then
      # The parity tests are an MPS client: their CUDA context goes through the daemon.
      dfw_env timeout "$(tmo 180)" "$BACKEND_TESTS" --gtest_filter='*Parity*cuda_gemm*' >"$TMP/mps-client.log" 2>&1
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
# With --bundle the steps run in a copy of the bundle's share/; a relative path given for the repo still works.
if [ ! -f "$PIPELINE" ] && [ -f "$REPO/$PIPELINE" ]; then PIPELINE=$REPO/$PIPELINE; fi
RECORDS=${DFW_GPU_CHECK_RECORDS:-}
# Extra run flags (DFW_GPU_CHECK_FLAGS). With a GPU the runs ask for --accelerator_backend=cuda, so a
# backend that fails to load fails the step instead of quietly falling back to the emulated GPU.
read -r -a EXTRA <<<"${DFW_GPU_CHECK_FLAGS:-}"
if [ "$HAVE_GPU" = 1 ] && [[ " ${EXTRA[*]} " != *" --accelerator_backend"* ]]; then EXTRA+=(--accelerator_backend=cuda); fi
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
    if late 30; then skip "pipeline ($mode): out of time (budget ${BUDGET}s)"; continue; fi
    echo "-- $mode: plan"
    if ! dfw_env timeout "$(tmo 60)" "$DFW" run "$PIPELINE" "${flags[@]}" --dry_run >"$TMP/plan-$mode.log" 2>&1; then
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
    dfw_env timeout "$(tmo 150)" "$DFW" run "$PIPELINE" "${flags[@]}" >"$TMP/run-$mode.log" 2>&1
    rc=$?
    secs=$(secs_since "$start")
    kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; SAMPLER=""
    if grep -q "not implemented" "$TMP/run-$mode.log"; then
      skip "dfworker run cannot execute pipelines yet: $(grep -m1 'not implemented' "$TMP/run-$mode.log" | cut -c1-120)"
      break
    fi
    peak=$(sort -n "$TMP/mem-$mode.log" | tail -1)
    echo "-- $mode: exit $rc, ${secs}s, peak GPU memory used ${peak:-?} MiB (nvidia-smi, whole device)"
    [ -n "$RECORDS" ] && echo "-- $mode: throughput $(ratio "$RECORDS" "$secs") records/s"
    if [ $rc -eq 0 ]; then pass "pipeline ($mode)"; else tail -10 "$TMP/run-$mode.log"; fail "pipeline ($mode)"; fi
  done
fi

say "6b. shared model copies on the GPU: model_copies: 2, 8 SDK processes, MPS (hosts export through CUDA IPC)"
if ! built dfworker || [ ! -f "$PIPELINE" ]; then
  skip "dfworker not built or no pipeline"
elif late 30; then
  skip "shared copies: out of time (budget ${BUDGET}s)"
elif ! grep -q "device: GPU" "$PIPELINE"; then
  skip "$PIPELINE has no 'device: GPU' line to add model_copies to"
else
  sed -e 's#^\( *\)device: GPU.*#&\n\1model_copies: 2#' "$PIPELINE" >"$TMP/shared.yaml"
  flags=(--machine_type=g2-standard-8 "--dataflow_service_options=worker_accelerator=$ACCEL;use_nvidia_mps" "${EXTRA[@]}")
  dfw_env timeout "$(tmo 60)" "$DFW" run "$TMP/shared.yaml" "${flags[@]}" --dry_run 2>&1 | grep -i -E "cop(y|ies)|memory" | head -6
  if [ "$HAVE_GPU" = 0 ]; then
    skip "shared copies on the GPU: no GPU to run on"
  else
    dfw_env timeout "$(tmo 150)" "$DFW" run "$TMP/shared.yaml" "${flags[@]}" --job_dir "$TMP/shared-job" >"$TMP/shared.log" 2>&1
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
elif late 60; then
  skip "embeddings: out of time (budget ${BUDGET}s)"
else
  if [ -z "$MINILM" ] || [ ! -f "$MINILM/model.safetensors" ]; then
    MINILM=$TMP/minilm-shaped
    timeout "$(tmo 120)" python3 scripts/make_bert_shaped.py "$MINILM" >/dev/null && echo "-- model: MiniLM-shaped, made-up weights ($MINILM)"
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
        if late 30; then skip "embeddings, $procs process(es), $mode: out of time (budget ${BUDGET}s)"; continue; fi
        rm -rf "$TMP/embed-out"
        start=$(date +%s.%N)
        dfw_env timeout "$(tmo 240)" "$DFW" run "$TMP/embed.yaml" "${flags[@]}" >"$TMP/embed-$procs-$mode.log" 2>&1
        rc=$?
        secs=$(secs_since "$start")
        rows=$(cat "$TMP"/embed-out/embeddings-*.jsonl 2>/dev/null | wc -l)
        echo "-- $procs process(es), $mode: exit $rc, $rows/$SENTENCES embeddings in ${secs}s =" \
          "$(ratio "$rows" "$secs") sentences/s (process start and model load included)"
        grep -m2 -i -E "backend|cuda|emulat" "$TMP/embed-$procs-$mode.log" | cut -c1-160
        if [ $rc -eq 0 ] && [ "$rows" = "$SENTENCES" ]; then pass "embeddings, $procs process(es), $mode"
        else tail -8 "$TMP/embed-$procs-$mode.log"; fail "embeddings, $procs process(es), $mode"; fi
      done
    done
    # The encoder's Linear layers in float32 and in bfloat16 (tensor cores), one process each, and
    # the vectors of the two runs compared (cosine per sentence).
    declare -A dtype_secs=()
    for dtype in float32 bfloat16; do
      if late 30; then skip "embeddings, dtype $dtype: out of time (budget ${BUDGET}s)"; continue; fi
      sed -e "s#^\( *\)normalize: true.*#&\n\1dtype: $dtype#" -e "s#$TMP/embed-out/#$TMP/embed-$dtype/#" \
        "$TMP/embed.yaml" >"$TMP/embed-$dtype.yaml"
      rm -rf "$TMP/embed-$dtype"
      start=$(date +%s.%N)
      dfw_env timeout "$(tmo 240)" "$DFW" run "$TMP/embed-$dtype.yaml" --machine_type=g2-standard-8 \
        "--dataflow_service_options=worker_accelerator=$ACCEL" --experiments=no_use_multiple_sdk_containers "${EXTRA[@]}" \
        >"$TMP/embed-dtype-$dtype.log" 2>&1
      rc=$?
      dtype_secs[$dtype]=$(secs_since "$start")
      rows=$(cat "$TMP/embed-$dtype"/embeddings-*.jsonl 2>/dev/null | wc -l)
      echo "-- dtype $dtype, 1 process: exit $rc, $rows/$SENTENCES embeddings in ${dtype_secs[$dtype]}s = $(ratio "$rows" "${dtype_secs[$dtype]}") sentences/s"
      grep -m1 -E "Linear layers|dtype" "$TMP/embed-dtype-$dtype.log" | cut -c1-200
      if [ $rc -ne 0 ] || [ "$rows" != "$SENTENCES" ]; then tail -6 "$TMP/embed-dtype-$dtype.log"; fail "embeddings, dtype $dtype"; fi
    done
    if [ -d "$TMP/embed-float32" ] && [ -d "$TMP/embed-bfloat16" ]; then
      if python3 - "$TMP/embed-float32" "$TMP/embed-bfloat16" <<'PY'
import glob, json, math, os, sys
def load(d):
    out = {}
    for p in glob.glob(os.path.join(d, "embeddings-*.jsonl")):
        for line in open(p):
            r = json.loads(line)
            out[r["id"]] = r["embedding"]["inference"]
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
cos = [sum(x * y for x, y in zip(a[i], b[i])) / (math.sqrt(sum(x * x for x in a[i])) * math.sqrt(sum(y * y for y in b[i])) or 1)
       for i in a if i in b]
print("-- bfloat16 vs float32 on the GPU: %d vectors, min cosine %.6f, mean %.6f" % (len(cos), min(cos), sum(cos) / len(cos)))
sys.exit(0 if cos and min(cos) >= 0.999 else 1)
PY
      then pass "embeddings in bfloat16 agree with float32 (min cosine >= 0.999); float32 ${dtype_secs[float32]}s, bfloat16 ${dtype_secs[bfloat16]}s"
      else fail "embeddings in bfloat16 disagree with float32 (min cosine < 0.999)"; fi
    fi
  fi
fi

say "8. two tenants on one GPU under MPS: each process's measured GPU memory against its limit"
TENANTS_FILE=pipelines/tenants.yaml
if ! built dfworker; then
  skip "dfworker not built"
elif [ ! -f "$TENANTS_FILE" ]; then
  skip "no $TENANTS_FILE"
elif late 60; then
  skip "tenants: out of time (budget ${BUDGET}s)"
elif ! dfw_env timeout "$(tmo 60)" "$DFW" run --tenants "$TENANTS_FILE" "${EXTRA[@]}" --dry_run --format=json \
       >"$TMP/tenants-plan.json" 2>"$TMP/tenants-plan.err"; then
  tail -5 "$TMP/tenants-plan.err"
  fail "tenants admission (dry run)"
elif [ "$HAVE_GPU" = 0 ]; then
  skip "two tenants on the GPU: no GPU to run on (admission passed)"
else
  # Each GPU process of ours carries DFW_TENANT in its environment: sample nvidia-smi's per-process
  # memory every 200 ms and attribute it.
  ( while :; do
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
        while IFS=', ' read -r pid mib; do
          t=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^DFW_TENANT=//p')
          [ -n "$t" ] && echo "$t $pid $mib"
        done
      sleep 0.2
    done ) >"$TMP/tenants-mem.log" &
  SAMPLER=$!
  dfw_env timeout "$(tmo 200)" "$DFW" run --tenants "$TENANTS_FILE" "${EXTRA[@]}" --job_dir "$TMP/tenants-job" \
    >"$TMP/tenants-run.log" 2>&1
  rc=$?
  kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; SAMPLER=""
  echo "-- tenants run: exit $rc"
  if python3 - "$TMP/tenants-plan.json" "$TMP/tenants-mem.log" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
limits = {t["name"]: t["pinned_limit_bytes"] for t in plan["tenants"]["tenants"]}
peak = {}
for line in open(sys.argv[2]):
    parts = line.split()
    if len(parts) != 3 or not parts[2].isdigit():
        continue
    key = (parts[0], parts[1])
    peak[key] = max(peak.get(key, 0), int(parts[2]) << 20)
ok = bool(peak)
for name, limit in limits.items():
    mine = {pid: b for (t, pid), b in peak.items() if t == name}
    if not mine:
        print(f"-- {name}: no process seen by nvidia-smi --query-compute-apps")
        ok = False
        continue
    worst = max(mine.values())
    print(f"-- {name}: {len(mine)} process(es) on the GPU, largest {worst >> 20} MiB, limit {limit >> 20} MiB per process")
    ok = ok and worst <= limit
sys.exit(0 if ok else 1)
PY
  then
    if [ $rc -eq 0 ]; then pass "two tenants: every process within its MPS memory limit"
    else tail -8 "$TMP/tenants-run.log"; fail "tenants run"; fi
  else
    tail -8 "$TMP/tenants-run.log"
    fail "two tenants: a process over its limit, or none seen on the GPU"
  fi
  skip "allocating past a tenant's limit fails: no allocation probe is built yet (the emulated daemon's test covers the rule)"
fi

say "9. HuggingFacePipelineModelHandler with device: cuda: the same rows as on the CPU (scores within 1e-4)"
HF_PIPE=pipelines/hf_sentiment.yaml
if ! built dfworker; then
  skip "dfworker not built"
elif [ ! -f "$HF_PIPE" ]; then
  skip "no $HF_PIPE"
elif [ "$HAVE_GPU" != 1 ]; then
  skip "hf pipeline on cuda: no GPU"
elif late 40; then
  skip "hf pipeline on cuda: out of time (budget ${BUDGET}s)"
else
  for dev in CPU cuda; do
    sed -e "s/device: CPU/device: $dev/" -e "s#out/hf_sentiment#$TMP/hf-$dev#" "$HF_PIPE" >"$TMP/hf-$dev.yaml"
    dfw_env timeout "$(tmo 60)" "$DFW" run "$TMP/hf-$dev.yaml" "${EXTRA[@]}" --job_dir "$TMP/hf-job-$dev" >"$TMP/hf-$dev.log" 2>&1
    echo "-- hf $dev: exit $?"
  done
  if ! grep -q "Switching to CPU" "$TMP/hf-cuda.log" && python3 - "$TMP/hf-CPU" "$TMP/hf-cuda" <<'PY'
import glob, json, sys
def rows(d):
    return sorted((json.loads(l) for f in glob.glob(d + "/reviews*") for l in open(f)), key=lambda r: r["id"])
a, b = rows(sys.argv[1]), rows(sys.argv[2])
ok = len(a) == len(b) == 4 and all(x["sentiment"]["label"] == y["sentiment"]["label"] and
                                   abs(x["sentiment"]["score"] - y["sentiment"]["score"]) < 1e-4 for x, y in zip(a, b))
print(f"-- {len(a)} CPU rows, {len(b)} cuda rows, equal: {ok}")
sys.exit(0 if ok else 1)
PY
  then pass "hf pipeline: cuda rows equal the CPU rows"
  else tail -6 "$TMP/hf-cuda.log"; fail "hf pipeline on cuda"; fi
fi

say "10. text generation: device GPU runs the CUDA decoder engine and gives the CPU's rows; the plan answers for this GPU"
GEN_PIPE=pipelines/hf_generate.yaml
if ! built dfworker; then
  skip "dfworker not built"
elif [ ! -f "$GEN_PIPE" ]; then
  skip "no $GEN_PIPE"
elif late 40; then
  skip "text generation: out of time (budget ${BUDGET}s)"
else
  for dev in CPU GPU; do
    sed -e "s/device: CPU/device: $dev/" -e "s#out/hf_generate#$TMP/gen-$dev#" "$GEN_PIPE" >"$TMP/gen-$dev.yaml"
    dfw_env timeout "$(tmo 60)" "$DFW" run "$TMP/gen-$dev.yaml" "${EXTRA[@]}" --job_dir "$TMP/gen-job-$dev" >"$TMP/gen-$dev.log" 2>&1
    echo "-- generate $dev: exit $?"
  done
  grep -h "text generation engine" "$TMP/gen-GPU.log" | sort -u | head -2
  if [ "$HAVE_GPU" != 1 ]; then
    skip "text generation on the CUDA engine: no GPU"
  elif ! grep -q "text generation engine: cuda decoder engine" "$TMP/gen-GPU.log"; then
    tail -6 "$TMP/gen-GPU.log"; fail "text generation with device GPU did not run the CUDA decoder engine"
  elif cmp -s <(cat "$TMP"/gen-CPU/completions* | sort) <(cat "$TMP"/gen-GPU/completions* | sort) &&
     [ "$(cat "$TMP"/gen-CPU/completions* | wc -l)" = 5 ]; then
    pass "text generation: the CUDA engine's rows equal the CPU rows (5 completions)"
  else
    diff <(cat "$TMP"/gen-CPU/completions* | sort) <(cat "$TMP"/gen-GPU/completions* | sort) | head -6
    tail -6 "$TMP/gen-GPU.log"; fail "text generation rows differ between the CPU and the CUDA engine"
  fi
  if [ -f testdata/right_sizing/gemma-2b-generate.yaml ]; then
    dfw_env timeout "$(tmo 30)" "$DFW" plan testdata/right_sizing/gemma-2b-generate.yaml >"$TMP/gen-plan.log" 2>&1
    echo "-- plan exit $?"; grep -i -E "seqs|sequences" "$TMP/gen-plan.log" | head -8
    if [ "$HAVE_GPU" = 1 ]; then
      note "this GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1) — compare with the plan's row for it"
    fi
  fi
fi

say "11. handler efficiency: each model's achieved FLOP/s over the catalog's FP32 peak (plan --gpu_efficiency_from)"
EFF_FILE=${RESULTS:+$OUT/gpu-efficiency.json}
EFF_FILE=${EFF_FILE:-$TMP/gpu-efficiency.json}
CATALOG_GPUS=$REPO/configs/gpus.yaml
[ -f "$CATALOG_GPUS" ] || CATALOG_GPUS=${BUNDLE:+$BUNDLE/share/configs/gpus.yaml}
if ! built dfworker; then
  skip "dfworker not built"
elif [ "$HAVE_GPU" != 1 ]; then
  skip "handler efficiency: no GPU to measure on"
elif late 60; then
  skip "handler efficiency: out of time (budget ${BUDGET}s)"
elif [ ! -f "${CATALOG_GPUS:-}" ]; then
  skip "handler efficiency: no configs/gpus.yaml"
else
  # float32 Linear layers: the estimate divides the FP32 peak, so that is the precision measured.
  # One SDK process each, through `dfworker bench --format=json` (the models' GFLOP/s per point).
  EFF_RUNS=()
  if [ -f "$TMP/embed.yaml" ]; then
    sed -e "s#^\( *\)normalize: true.*#&\n\1dtype: float32#" "$TMP/embed.yaml" >"$TMP/eff-encoder.yaml"
    EFF_RUNS+=("SentenceEmbeddingHandler|$TMP/eff-encoder.yaml|pipelines/embed_sentences.yaml (MiniLM shapes)")
  fi
  if [ -f "$PIPELINE" ] && grep -q "MlpModelHandlerSafetensors" "$PIPELINE" && grep -q "device: GPU" "$PIPELINE"; then
    sed -e 's#^\( *\)device: GPU.*#&\n\1dtype: float32#' "$PIPELINE" >"$TMP/eff-mlp.yaml"
    EFF_RUNS+=("MlpModelHandlerSafetensors|$TMP/eff-mlp.yaml|$PIPELINE")
  fi
  smi_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  EFF_ARGS=()
  for run in "${EFF_RUNS[@]}"; do
    IFS='|' read -r handler yaml label <<<"$run"
    if late 30; then skip "handler efficiency, $handler: out of time (budget ${BUDGET}s)"; continue; fi
    dfw_env timeout "$(tmo 200)" "$DFW" bench "$yaml" --sweep sdk_processes=1 --repeat 1 --format=json \
      --machine_type=g2-standard-8 "--dataflow_service_options=worker_accelerator=$ACCEL" "${EXTRA[@]}" \
      >"$TMP/eff-$handler.json" 2>"$TMP/eff-$handler.log"
    rc=$?
    if [ $rc -eq 0 ]; then
      EFF_ARGS+=("$handler" "$TMP/eff-$handler.json" "$label")
    else
      tail -6 "$TMP/eff-$handler.log"
      fail "handler efficiency: the bench of $handler exited $rc"
    fi
  done
  if [ ${#EFF_ARGS[@]} -eq 0 ]; then
    skip "handler efficiency: nothing measured (no embedding pipeline from step 7, no MLP pipeline, or every bench failed)"
  elif python3 - "$CATALOG_GPUS" "$smi_name" "${DFW_GPU_CHECK_GPU_TYPE:-}" "$EFF_FILE" "${EFF_ARGS[@]}" <<'PY'
import datetime, json, re, sys
catalog_path, smi_name, forced, out_path = sys.argv[1:5]
runs = [sys.argv[i:i + 3] for i in range(5, len(sys.argv), 3)]  # handler, bench result, pipeline
# The catalog's GPUs (top-level entries are indented two spaces): name, display name, FP32 peak.
gpus, cur = [], None
for line in open(catalog_path):
    m = re.match(r"  - name: (\S+)", line)
    if m:
        cur = {"name": m.group(1), "display": "", "fp32": None}
        gpus.append(cur)
        continue
    if cur is None:
        continue
    m = re.match(r"    display_name: (.+)", line)
    if m:
        cur["display"] = m.group(1).strip()
    m = re.match(r"    peak_tflops: \{fp32: ([0-9.]+)", line)
    if m:
        cur["fp32"] = float(m.group(1))
def tokens(s):
    return {t for t in re.split(r"[\s_-]+", s.lower()) if t and t not in ("nvidia", "tesla")}
if forced:
    matches = [g for g in gpus if g["name"] == forced]
else:
    have = tokens(smi_name)
    matches = [g for g in gpus if g["display"] and tokens(g["display"]) <= have]
    if not matches:  # e.g. "NVIDIA H200" for "NVIDIA H200 141GB": the model token alone, if only one has it
        model = lambda g: {t for t in tokens(g["display"]) if re.fullmatch(r"[a-z]+[0-9]+", t)}
        matches = [g for g in gpus if g["display"] and model(g) and model(g) <= have]
if len(matches) != 1 or not matches[0]["fp32"]:
    sys.exit("-- cannot tell which catalog GPU '%s' is (%s); set DFW_GPU_CHECK_GPU_TYPE" %
             (forced or smi_name, ", ".join(g["name"] for g in matches) or "none"))
gpu = matches[0]
entries = []
for handler, bench_path, pipeline in runs:
    bench = json.load(open(bench_path))
    rec = bench["recommended_point"]
    point = bench["points"][rec if rec >= 0 else 0]
    gflops = next((m["gflops"] for m in point["models"] if m.get("gflops")), None)
    if not gflops:
        print("-- %s: the bench measured no GFLOP/s (models: %s)" % (handler, point["models"]))
        continue
    efficiency = gflops / (gpu["fp32"] * 1000.0)
    print("-- %s on %s (%s): %.1f GFLOP/s of %.4g TFLOP/s FP32 = efficiency %.4g" %
          (handler, gpu["name"], smi_name, gflops, gpu["fp32"], efficiency))
    if not 0 < efficiency <= 1:
        sys.exit("-- efficiency %.4g is outside (0, 1]: the measurement or the catalog peak is off" % efficiency)
    entries.append({"handler": handler, "pipeline": pipeline, "dtype": "float32", "achieved_gflops": gflops,
                    "peak_tflops": gpu["fp32"], "efficiency": efficiency})
if not entries:
    sys.exit("-- no model reported its GFLOP/s")
json.dump({"format": "dfworker-gpu-efficiency", "format_version": 1, "gpu": gpu["name"],
           "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") +
                       " by scripts/gpu-check.sh on " + smi_name,
           "handlers": entries}, open(out_path, "w"), indent=2)
PY
  then
    plan_for=$TMP/eff-encoder.yaml
    [ -f "$plan_for" ] || plan_for=$TMP/eff-mlp.yaml
    if dfw_env timeout "$(tmo 30)" "$DFW" plan "$plan_for" --gpu_efficiency_from "$EFF_FILE" --format=json \
         >"$TMP/eff-plan.json" 2>"$TMP/eff-plan.log"; then
      pass "handler efficiency written to $EFF_FILE; dfworker plan --gpu_efficiency_from reads it"
    else
      tail -4 "$TMP/eff-plan.log"
      fail "handler efficiency: dfworker plan refused $EFF_FILE"
    fi
  else
    fail "handler efficiency: could not compute it (above)"
  fi
fi

say "summary"
note "$FAILED failed step(s) in $SECONDS s"
exit "$FAILED"
