#!/usr/bin/env bash
# Builds, here, everything scripts/gpu-check.sh runs on a lent GPU machine, and collects it with its
# shared-library closure into one git-ignored folder (default .gpu/) to carry there: that machine has
# the CUDA 13 toolkit, the NVIDIA driver, cmake, ninja and PyTorch, but none of our Debian libraries
# and no package registry, so it cannot configure or build this project.
#
#   bash scripts/gpu-bundle.sh            # configure + build (build-gpu-bundle/), collect into .gpu/
#   bash scripts/gpu-bundle.sh --no-build # collect again from the existing build
#   bash scripts/gpu-bundle.sh --check    # check an existing bundle here (see below)
#   then, on the GPU machine: bash scripts/gpu-check.sh --bundle .gpu   (docs/building.md, "GPU check")
#
# The build: -DDFW_WITH_CUDA=ON, CUDA code as sm_90 SASS + compute_90 PTX (H100/H200, compute
# capability 9.0; PTX lets a newer chip JIT it), Release at -O2 without debug info, the DFW_TEST_*
# hooks on (the real-process tests need them), no benchmarks; only the targets gpu-check runs.
#
# The bundle:
#   bin/     dfworker, dfw_backend_tests, dfw_device_tests (stripped)
#   lib/     libdfw_backend_cuda.so (stripped; CUDA runtime linked statically) and the ldd closure of
#            all of them except glibc's pieces and the loader (libc, libm, libpthread, libdl, librt,
#            libresolv, libutil, libmvec, ld-linux, vdso) and the NVIDIA driver/toolkit libraries
#            (libcuda, libnvidia-*, libcublas*, libcudart*, libnvrtc*, libnvJitLink*), which the GPU
#            machine has, and libopenblas.so.0 with its closure (dfworker loads it with dlopen, so
#            ldd does not list it). A library over 2 MiB (libopenblas 36 MB, libdnnl, libcrypto,
#            libgfortran) is stored gzipped (NAME.gz), which keeps the bundle under its limit;
#            gpu-check unpacks it.
#   lib/cxx/ libstdc++ and libgcc_s of g++ 12: a host's own may be older than what our binaries need
#            (GLIBCXX_3.4.30), but Debian 12's libstdc++ needs glibc 2.36 (arc4random): gpu-check uses
#            these where the host's glibc is new enough, else the host's own.
#   share/   the tracked files the steps read, laid out like the source tree: configs/, pipelines/,
#            testdata/, tests/device/testdata/, scripts/make_bert_shaped.py
#   bundle.env  where it was built (the test binaries have DFW_SOURCE_DIR and DFW_BINARY_DIR compiled
#            in; gpu-check links those paths to the bundle when they are missing), the commit, the
#            newest glibc symbol version lib/ + bin/ need and the one lib/cxx/ needs, and the NVIDIA
#            libraries it expects there.
# Fails when the bundle is over 48 MiB (the working tree travels with it, 64 MiB in all).
#
# --check (this machine has no GPU): (1) every library each bundled ELF needs resolves, under
# `env -i LD_LIBRARY_PATH=<bundle lib>`, inside the bundle or to the excluded glibc/NVIDIA set, and a
# real start (LD_DEBUG=libs) loads nothing else; (2) the CUDA library holds sm_90 SASS and compute_90
# PTX; (3) with the build folder moved aside and LD_LIBRARY_PATH pointing only at the bundle:
# gpu-check.sh --bundle --allow-no-gpu (smoke, CPU parity rows, device tests, dry runs) has no failure,
# and --accelerator_backend=emulated runs of pipelines/default.yaml and embed_sentences.yaml write
# every row. Exit status 0 when all of that holds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${DFW_GPU_BUNDLE_BUILD:-build-gpu-bundle}
DEST=${DFW_GPU_BUNDLE_DIR:-.gpu}
LIMIT_MIB=48
TARGETS=(dfworker dfw_backend_cuda dfw_backend_tests dfw_device_tests)
# name in the bundle : path in the build folder
BINS=(dfworker:src/cli/dfworker dfw_backend_tests:tests/backend/dfw_backend_tests
      dfw_device_tests:tests/device/dfw_device_tests)
CUDA_LIB=src/backend/cuda/libdfw_backend_cuda.so
# Libraries never carried: glibc and the loader (every host has its own, and they must match the
# kernel-facing loader), and the NVIDIA driver/toolkit set the GPU machine provides.
EXCLUDE_RE='^(linux-vdso|linux-gate|ld-linux[^/]*|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale|libthread_db)\.so'
NVIDIA_RE='^lib(cuda|nvidia-[^/]*|cublas[^/]*|cublasLt|cudart|nvrtc[^/]*|nvJitLink)\.so'
# Share: what gpu-check's steps and the test binaries read (relative to the source root).
SHARE_PATHS=(configs pipelines testdata tests/device/testdata scripts/make_bert_shaped.py)

MODE=build
case "${1:-}" in
  "") ;;
  --no-build) MODE=collect ;;
  --check) MODE=check ;;
  -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--no-build | --check]" >&2; exit 2 ;;
esac

die() { echo "gpu-bundle: $*" >&2; exit 1; }
mib() { echo "scale=1; $1 / 1048576" | bc; }

# ---- check mode -----------------------------------------------------------------------------
if [ "$MODE" = check ]; then
  [ -f "$DEST/bundle.env" ] || die "no bundle at $DEST (run bash scripts/gpu-bundle.sh first)"
  BUNDLE=$(cd "$DEST" && pwd)
  # shellcheck disable=SC1091
  . "$BUNDLE/bundle.env"
  TMP=$(mktemp -d /tmp/dfw-gpu-bundle-check.XXXXXX)
  MOVED=""
  # shellcheck disable=SC2317  # invoked by the EXIT trap
  restore() {
    if [ -n "$MOVED" ] && [ -d "$MOVED" ]; then
      if [ ! -e "$DFW_BUNDLE_BINARY_DIR" ]; then mv "$MOVED" "$DFW_BUNDLE_BINARY_DIR"
      else echo "gpu-bundle: $DFW_BUNDLE_BINARY_DIR reappeared; the build is at $MOVED" >&2; fi
    fi
    rm -rf "$TMP"
  }
  trap restore EXIT
  FAILS=0
  ok() { echo "PASS: $*"; }
  bad() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

  echo "== 1. every library the bundle loads resolves inside it or to the excluded glibc/NVIDIA set"
  mkdir -p "$TMP/xlib"
  for z in "$BUNDLE"/lib/*.gz; do
    [ -e "$z" ] || continue
    gzip -dc "$z" >"$TMP/xlib/$(basename "$z" .gz)"
  done
  LIBPATH="$BUNDLE/lib:$BUNDLE/lib/cxx:$TMP/xlib"
  elfs=("$BUNDLE"/bin/* "$BUNDLE"/lib/*.so* "$BUNDLE"/lib/cxx/* "$TMP"/xlib/*)
  outside=0; missing_nv=()
  for f in "${elfs[@]}"; do
    [[ $f == *.gz ]] && continue
    [ -f "$f" ] || continue
    while read -r name arrow path _; do
      [ "$arrow" = "=>" ] || continue
      if [ "$path" = "not" ]; then
        if [[ $name =~ $NVIDIA_RE ]]; then missing_nv+=("$name")
        else bad "$(basename "$f"): $name not found"; outside=1; fi
      elif [[ $path == "$BUNDLE/lib/"* || $path == "$TMP/xlib/"* ]]; then :
      elif [[ $name =~ $EXCLUDE_RE || $name =~ $NVIDIA_RE ]]; then :
      else bad "$(basename "$f"): $name resolves outside the bundle ($path)"; outside=1
      fi
    done < <(env -i LD_LIBRARY_PATH="$LIBPATH" ldd "$f" 2>&1)
  done
  resolved_nv=$(env -i LD_LIBRARY_PATH="$LIBPATH" ldd "$BUNDLE/lib/libdfw_backend_cuda.so" | awk '$3 ~ /^\// {print $1" -> "$3}' | grep -E 'cublas' | tr '\n' ' ' || true)
  [ "$outside" = 0 ] && ok "ldd: ${#elfs[@]} ELF files; all resolve in the bundle or to glibc/NVIDIA (here the NVIDIA ones: ${resolved_nv:-none}${missing_nv[*]:+; not found here: ${missing_nv[*]}})"
  # A real start: the loader's own account of what it opened (LD_DEBUG=libs).
  env -i LD_LIBRARY_PATH="$LIBPATH" LD_DEBUG=libs "$BUNDLE/bin/dfworker" --version >"$TMP/ld-debug.log" 2>&1 || true
  stray=$(grep -o 'calling init: [^ ]*' "$TMP/ld-debug.log" | awk '{print $3}' | sort -u |
          grep -v -E "^($BUNDLE/lib/|$TMP/xlib/)" | while read -r p; do
            n=$(basename "$p"); [[ $n =~ $EXCLUDE_RE ]] || echo "$p"; done)
  loaded=$(grep -c 'calling init:' "$TMP/ld-debug.log" || true)
  if [ -n "$stray" ]; then bad "dfworker --version loaded from outside the bundle: $stray"
  else ok "LD_DEBUG=libs: dfworker --version initialised $loaded libraries, all from the bundle or glibc"; fi
  glibc_here=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
  echo "   bundle needs glibc >= $DFW_BUNDLE_GLIBC, its lib/cxx >= $DFW_BUNDLE_GLIBC_CXX (this machine: $glibc_here)"

  echo "== 2. CUDA code in libdfw_backend_cuda.so"
  CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  if [ -x "$CUOBJDUMP" ]; then
    elf=$("$CUOBJDUMP" --list-elf "$BUNDLE/lib/libdfw_backend_cuda.so" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ')
    ptx=$("$CUOBJDUMP" --list-ptx "$BUNDLE/lib/libdfw_backend_cuda.so" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ')
    if [[ $elf == *sm_90* && $ptx == *sm_90* ]]; then ok "machine code: $elf; PTX: $ptx"
    else bad "expected sm_90 machine code and PTX; machine code: ${elf:-none}, PTX: ${ptx:-none}"; fi
  else
    # No cuobjdump here: read the .nv_fatbin section's entry headers (kind 1 = PTX, 2 = ELF; arch).
    found=$(python3 - "$BUNDLE/lib/libdfw_backend_cuda.so" <<'PY'
import struct, subprocess, sys
f = sys.argv[1]
for line in subprocess.run(["readelf", "-SW", f], capture_output=True, text=True).stdout.splitlines():
    if ".nv_fatbin" in line:
        cols = line.split("]")[1].split()
        off, size = int(cols[3], 16), int(cols[4], 16)
        break
else:
    sys.exit("no .nv_fatbin section")
data = open(f, "rb").read()[off:off + size]
pos, seen = 0, set()
while pos + 16 <= len(data):
    magic, _, hsz, fsz = struct.unpack_from("<IHHQ", data, pos)
    if magic != 0xBA55ED50:
        pos += 8
        continue
    e, end = pos + hsz, pos + hsz + fsz
    while e < end:
        kind, _, ehs, esz, _, _, _, _, arch = struct.unpack_from("<HHIQIIHHI", data, e)
        seen.add(("PTX compute_%d" if kind == 1 else "SASS sm_%d") % arch)
        e += ehs + esz
    pos = end
print(" ".join(sorted(seen)))
PY
    )
    if [[ $found == *"PTX compute_90"* && $found == *"SASS sm_90"* ]]; then ok "fat binary (no cuobjdump here; read its headers): $found"
    else bad "expected sm_90 SASS and compute_90 PTX; found: ${found:-nothing}"; fi
  fi

  echo "== 3. CPU-only steps from the bundle, build folder moved aside, LD_LIBRARY_PATH only the bundle"
  if [ -d "$DFW_BUNDLE_BINARY_DIR" ]; then
    MOVED="$DFW_BUNDLE_BINARY_DIR.moved-by-gpu-bundle-check"
    mv "$DFW_BUNDLE_BINARY_DIR" "$MOVED"
    echo "   moved $DFW_BUNDLE_BINARY_DIR aside (put back on exit)"
  fi
  CLEAN_ENV=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" TMPDIR=/tmp LANG=C.UTF-8)
  if "${CLEAN_ENV[@]}" bash scripts/gpu-check.sh --bundle "$BUNDLE" --allow-no-gpu >"$TMP/gpu-check.log" 2>&1; then
    ok "gpu-check.sh --bundle --allow-no-gpu: $(grep -c '^PASS' "$TMP/gpu-check.log") PASS, $(grep -c '^SKIP' "$TMP/gpu-check.log") SKIP, 0 FAIL"
  else
    bad "gpu-check.sh --bundle --allow-no-gpu (exit $?)"
  fi
  grep -E '^(PASS|FAIL|SKIP)' "$TMP/gpu-check.log" | sed 's/^/   | /'
  # Real pipeline runs on the emulated accelerator, from a private copy of the bundle's share/.
  cp -r "$BUNDLE/share" "$TMP/src"
  flags=(--machine_type=g2-standard-8 "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver"
         --accelerator_backend=emulated)
  run_bundle() {
    (cd "$TMP/src" && "${CLEAN_ENV[@]}" LD_LIBRARY_PATH="$LIBPATH" DFW_CATALOG_DIR="$TMP/src/configs" \
      DFW_CUDA_BACKEND_PATH="$BUNDLE/lib/libdfw_backend_cuda.so" timeout 300 "$BUNDLE/bin/dfworker" "$@")
  }
  rows() { { cat "$TMP/src/$1"*.jsonl 2>/dev/null || true; } | wc -l; }  # WriteToJson: path is a prefix
  if run_bundle run pipelines/default.yaml "${flags[@]}" --job_dir "$TMP/job-default" >"$TMP/default.log" 2>&1; then
    p=$(rows out/default/predictions-); e=$(rows out/default/errors-)
    if [ "$p" = 5720 ] && [ "$e" = 4 ]; then ok "emulated run of pipelines/default.yaml: $p predictions, $e errors"
    else bad "emulated run of pipelines/default.yaml: $p predictions (want 5720), $e errors (want 4)"; fi
  else
    tail -8 "$TMP/default.log"; bad "emulated run of pipelines/default.yaml"
  fi
  want=$(wc -l <"$TMP/src/testdata/tiny_bert/sentences.jsonl")
  if run_bundle run pipelines/embed_sentences.yaml "${flags[@]}" --job_dir "$TMP/job-embed" >"$TMP/embed.log" 2>&1; then
    # testdata/tiny_bert/sentences.jsonl plants bad rows (a non-string text, a missing one): errors.
    n=$(rows out/embed_sentences/embeddings-); e=$(rows out/embed_sentences/errors-)
    if [ "$n" -gt 0 ] && [ $((n + e)) = "$want" ]; then ok "emulated run of pipelines/embed_sentences.yaml: $n embeddings + $e errors = $want rows"
    else bad "emulated run of pipelines/embed_sentences.yaml: $n embeddings + $e errors, want $want rows"; fi
  else
    tail -8 "$TMP/embed.log"; bad "emulated run of pipelines/embed_sentences.yaml"
  fi
  echo "== 4. a bare host, simulated: a mount namespace where /usr/lib/x86_64-linux-gnu holds only glibc and"
  echo "   what the shell tools need, and cuBLAS is only in /usr/local/cuda/targets/x86_64-linux/lib"
  if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
    keep=$TMP/keep; mkdir -p "$keep"
    tools=(bash sh grep sed awk tar gzip find sort cp mkdir ln rm rmdir mv cat wc head tail tr cut date mktemp
           getconf ldconfig timeout env stat sleep dirname basename uniq nproc ls id printf python3)
    { for t in "${tools[@]}"; do
        p=$(PATH=/usr/local/bin:/usr/bin:/bin; command -v "$t") && [ -f "$p" ] && { ldd "$p" 2>/dev/null || true; }
      done
      for f in "$BUNDLE"/bin/* "$BUNDLE/lib/libdfw_backend_cuda.so"; do ldd "$f"; done; } | awk '$2 == "=>" && $3 ~ /^\// {print $1" "$3} $1 ~ /^\// {print $1" "$1}' | sort -u |
      while read -r name path; do
        n=$(basename "$name")
        # glibc and the tools' own libraries stay; everything the bundle carries is hidden (cuBLAS moves).
        [[ $n =~ $NVIDIA_RE ]] && continue
        if [[ $n =~ $EXCLUDE_RE ]] || { [ ! -e "$BUNDLE/lib/$n" ] && [ ! -e "$BUNDLE/lib/cxx/$n" ] && [ ! -e "$BUNDLE/lib/$n.gz" ]; }; then
          cp -L "$path" "$keep/$n"
        fi
      done
    kept=$(find "$keep" -type f -printf '%f ')
    cat >"$TMP/bare.sh" <<EOS
set -e
cublas=\$(dirname "\$(readlink -f /usr/local/cuda/lib/libcublas.so.13)")
mount -t tmpfs none /usr/local/cuda/targets 2>/dev/null || { mkdir -p /usr/local/cuda/targets; mount -t tmpfs none /usr/local/cuda/targets; }
mkdir -p /usr/local/cuda/targets/x86_64-linux/lib
for f in libcublas.so.13 libcublasLt.so.13; do
  touch /usr/local/cuda/targets/x86_64-linux/lib/\$f
  mount --bind "\$cublas/\$f" /usr/local/cuda/targets/x86_64-linux/lib/\$f
done
mount -t tmpfs none "\$cublas"
mount --bind "$keep" /usr/lib/x86_64-linux-gnu
set +e
for l in libtbb.so.12 libyaml-cpp.so.0.7 libspdlog.so.1.10 openblas-pthread/libopenblas.so.0 libstdc++.so.6 libgcc_s.so.1; do
  [ ! -e /usr/lib/x86_64-linux-gnu/\$l ] || { echo "bare host: \$l still visible"; exit 1; }
done
[ ! -e /usr/local/cuda/lib/libcublas.so.13 ] || { echo "bare host: /usr/local/cuda/lib still has cuBLAS"; exit 1; }
cd "$ROOT"
"\$@"
EOS
    if "${CLEAN_ENV[@]}" unshare -m --propagation private bash "$TMP/bare.sh" bash scripts/gpu-check.sh --bundle "$BUNDLE" --allow-no-gpu >"$TMP/bare.log" 2>&1; then
      ok "bare host: gpu-check.sh --bundle --allow-no-gpu: $(grep -c '^PASS' "$TMP/bare.log") PASS, 0 FAIL; $(grep -m1 -o 'libcublas.so.13 -> [^ ]*' "$TMP/bare.log")"
    else
      grep -E '^(FAIL|bare host)' "$TMP/bare.log" | head -10; bad "bare host: gpu-check.sh --bundle --allow-no-gpu"
    fi
    rm -rf "$TMP/src/out"
    if (cd "$TMP/src" && "${CLEAN_ENV[@]}" LD_LIBRARY_PATH="$LIBPATH" unshare -m --propagation private bash "$TMP/bare.sh" \
          bash -c "cd '$TMP/src' && timeout 300 '$BUNDLE/bin/dfworker' run pipelines/default.yaml ${flags[*]@Q} --job_dir '$TMP/job-bare'") >"$TMP/bare-run.log" 2>&1 &&
       [ "$(rows out/default/predictions-)" = 5720 ]; then
      ok "bare host: emulated run of pipelines/default.yaml: $(rows out/default/predictions-) predictions"
    else
      tail -8 "$TMP/bare-run.log"; bad "bare host: emulated run of pipelines/default.yaml"
    fi
    echo "   kept in the simulated /usr/lib/x86_64-linux-gnu: $kept"
  else
    echo "SKIP: bare host: needs root and unshare -m"
  fi
  echo "== check: $FAILS failure(s)"
  exit "$FAILS"
fi

# ---- build ----------------------------------------------------------------------------------
command -v bc >/dev/null || die "bc is needed"
if [ "$MODE" = build ]; then
  echo "== configure $BUILD (CUDA sm_90 + PTX, Release -O2, test hooks on)"
  nice -n 10 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCMAKE_CUDA_FLAGS_RELEASE="-O2 -DNDEBUG" -DDFW_WITH_CUDA=ON -DDFW_CUDA_ARCHITECTURES=90 \
    -DDFW_TEST_HOOKS=ON -DDFW_BENCH=OFF -DDFW_WERROR=OFF -DDFW_FUZZ=OFF -DDFW_SANITIZE=OFF >"/tmp/dfw-gpu-bundle-configure.log" 2>&1 ||
    { tail -20 /tmp/dfw-gpu-bundle-configure.log; die "configure failed"; }
  echo "== build ${TARGETS[*]} (nice, -j$(nproc); a full CUDA build takes a while on few cores)"
  nice -n 10 cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}" || die "build failed"
fi
[ -f "$BUILD/CMakeCache.txt" ] || die "no build at $BUILD (run without --no-build)"
grep -q '^DFW_TEST_HOOKS:BOOL=ON' "$BUILD/CMakeCache.txt" || die "$BUILD was configured without -DDFW_TEST_HOOKS=ON"
[ -f "$BUILD/$CUDA_LIB" ] || die "$BUILD/$CUDA_LIB is missing (configured without CUDA?)"

# ---- collect --------------------------------------------------------------------------------
echo "== collect into $DEST/"
case "$DEST" in /*) ;; *)
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qxF "/$DEST/" "$exclude" 2>/dev/null || echo "/$DEST/" >>"$exclude" ;;
esac
rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/share"
for b in "${BINS[@]}"; do
  cp "$BUILD/${b#*:}" "$DEST/bin/${b%%:*}"
done
cp "$BUILD/$CUDA_LIB" "$DEST/lib/"
strip --strip-unneeded "$DEST"/bin/* "$DEST/lib/libdfw_backend_cuda.so"

# Loaded at run time with dlopen, so in no ldd list: OpenBLAS (src/backend/cpu/openblas_api.cc
# looks in the build's libdir, then by soname, which finds this copy through LD_LIBRARY_PATH).
openblas="$(pkg-config --variable=libdir openblas)/libopenblas.so.0"
[ -e "$openblas" ] || die "OpenBLAS ($openblas), which dfworker loads at run time, is not found here"
cp -L "$openblas" "$DEST/lib/libopenblas.so.0"

# The ldd closure of everything bundled (ldd lists indirect needs too), minus the excluded set.
declare -A seen=()
nvidia_needed=()
for f in "$DEST"/bin/* "$DEST/lib/libdfw_backend_cuda.so" "$DEST/lib/libopenblas.so.0"; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [[ $name =~ $NVIDIA_RE ]]; then
      [[ " ${nvidia_needed[*]} " == *" $name "* ]] || nvidia_needed+=("$name")
      continue
    fi
    [[ $name =~ $EXCLUDE_RE ]] && continue
    [ "$path" = "not" ] && die "$(basename "$f") needs $name, which is not found here"
    [ -n "${seen[$name]:-}" ] && continue
    seen[$name]=$path
    case "$name" in
      libstdc++.so.*|libgcc_s.so.*) mkdir -p "$DEST/lib/cxx"; cp -L "$path" "$DEST/lib/cxx/$name" ;;
      *) cp -L "$path" "$DEST/lib/$name" ;;
    esac
  done < <(ldd "$f")
done
# The large libraries are stored gzipped (gzip is on every host; gpu-check unpacks them).
for f in "$DEST"/lib/*; do
  if [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $((2 * 1048576)) ]; then gzip -9n "$f"; fi
done

# The tracked files the steps read, as they are in this working tree.
git ls-files -z -- "${SHARE_PATHS[@]}" | tar --null -T - -cf - | tar -C "$DEST/share" -xf -

# The newest glibc symbol version the bundled ELFs ask for (the GPU machine's glibc must be >= it),
# for bin/ + lib/ and for lib/cxx/ apart.
newest() { grep -o "$1_[0-9.]*" | sort -u -V | tail -1 | sed "s/$1_//"; }
z=$(mktemp /tmp/dfw-gpu-bundle-z.XXXXXX)
glibc_need=$( { for f in "$DEST"/bin/* "$DEST"/lib/*.so*; do [[ $f == *.gz ]] && continue; objdump -T "$f"; done
                for g in "$DEST"/lib/*.gz; do [ -e "$g" ] || continue; gzip -dc "$g" >"$z"; objdump -T "$z"; done
              } 2>/dev/null | newest GLIBC)
rm -f "$z"
glibc_cxx=$(objdump -T "$DEST"/lib/cxx/* 2>/dev/null | newest GLIBC)
glibcxx_need=$( { for f in "$DEST"/bin/* "$DEST"/lib/*.so*; do [[ $f == *.gz ]] || objdump -T "$f"; done; } 2>/dev/null | newest GLIBCXX)
commit=$(git rev-parse --short=12 HEAD)
git diff --quiet HEAD -- . 2>/dev/null || commit="$commit+uncommitted"
cat >"$DEST/bundle.env" <<EOF
# Written by scripts/gpu-bundle.sh; read by scripts/gpu-check.sh --bundle.
DFW_BUNDLE_COMMIT='$commit'
DFW_BUNDLE_BUILT='$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(grep -m1 '^PRETTY_NAME=' /etc/os-release | cut -d'"' -f2), $(g++ --version | head -1)'
DFW_BUNDLE_NVCC='$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo '?')'
DFW_BUNDLE_CUDA_ARCHITECTURES='$(grep '^DFW_CUDA_ARCHITECTURES:' "$BUILD/CMakeCache.txt" | cut -d= -f2)'
DFW_BUNDLE_SOURCE_DIR='$ROOT'
DFW_BUNDLE_BINARY_DIR='$(cd "$BUILD" && pwd)'
DFW_BUNDLE_GLIBC='$glibc_need'
DFW_BUNDLE_GLIBC_CXX='$glibc_cxx'
DFW_BUNDLE_GLIBCXX='$glibcxx_need'
DFW_BUNDLE_NVIDIA_LIBS='${nvidia_needed[*]}'
EOF

bytes=$(du -sb "$DEST" | cut -f1)
echo "   bin:   $(find "$DEST/bin" -type f -printf '%f ')"
echo "   lib:   $(find "$DEST/lib" -maxdepth 1 -type f -printf '%f ')"
echo "   lib/cxx: $(find "$DEST/lib/cxx" -type f -printf '%f ' 2>/dev/null) (need glibc >= $glibc_cxx; else the host's libstdc++ must have GLIBCXX_$glibcxx_need)"
echo "   expected on the GPU machine: ${nvidia_needed[*]} (+ libcuda.so.1, which the static CUDA runtime opens), glibc >= $glibc_need"
echo "   share: ${SHARE_PATHS[*]}"
echo "== bundle $DEST: $(mib "$bytes") MiB ($bytes bytes; limit $LIMIT_MIB MiB); commit $commit"
[ "$bytes" -le $((LIMIT_MIB * 1048576)) ] || die "bundle is $(mib "$bytes") MiB, over the $LIMIT_MIB MiB limit"
