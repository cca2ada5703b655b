#!/usr/bin/env bash
# Runs a command as it would run on a CPU with fewer instruction sets than this one, for benchmarks
# across CPU kinds on one machine: every `cpuid` of the command's processes (children included) is
# answered with the smaller CPU's features (scripts/cpuid_mask.c, preloaded), so oneDNN, ONNX
# Runtime, numpy, tokenizers and dfworker each pick the kernels they would pick there. Needs
# "cpuid_fault" in /proc/cpuinfo. Clock, caches and memory stay this machine's: a figure taken
# so is this core running another CPU's code paths, and is to be named so.
#   avx2         AVX2 + FMA, no AVX-512, AVX-VNNI, AMX or AVX10 (Haswell..Comet Lake, Zen 2/3)
#   avx512-vnni  AVX-512 with VNNI, no BF16, FP16 or AMX (Cascade Lake, Ice Lake)
# glibc reads cpuid before any preloaded code runs; GLIBC_TUNABLES takes the same features out of
# its string-function choices.
#
# Usage: scripts/as-cpu.sh avx2|avx512-vnni COMMAND [ARG...]     (exit 77 where cpuid cannot fault)
#        scripts/as-cpu.sh --check avx2|avx512-vnni   (prints what a process sees, and exits)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check=0
if [[ ${1:-} == --check ]]; then check=1; shift; fi
kind=${1:?usage: scripts/as-cpu.sh avx2|avx512-vnni COMMAND [ARG...]}
shift
case $kind in
  avx2) tun=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-AVX_VNNI,-AMX_BF16,-AMX_INT8,-AMX_TILE ;;
  avx512-vnni) tun=-AMX_BF16,-AMX_INT8,-AMX_TILE ;;
  *) echo "as-cpu: unknown CPU kind '$kind' (avx2 or avx512-vnni)" >&2; exit 2 ;;
esac
# 77: what test runners read as "skipped".
grep -qw cpuid_fault /proc/cpuinfo || { echo "as-cpu: this CPU/kernel cannot make cpuid fault (no cpuid_fault in /proc/cpuinfo)" >&2; exit 77; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dfworker
mkdir -p "$cache"
so=$cache/cpuid_mask.so
if [[ ! -s $so || $here/cpuid_mask.c -nt $so ]]; then
  cc -O2 -shared -fPIC -Wall -Wextra -Werror -o "$so.tmp" "$here/cpuid_mask.c" -ldl && mv "$so.tmp" "$so"
fi
export DFW_CPU_MASK=$kind
export LD_PRELOAD=$so${LD_PRELOAD:+:$LD_PRELOAD}
export LD_AUDIT=$so${LD_AUDIT:+:$LD_AUDIT}
export GLIBC_TUNABLES=glibc.cpu.hwcaps=$tun${GLIBC_TUNABLES:+:$GLIBC_TUNABLES}
if (( check )); then
  probe=$cache/cpuid_probe
  if [[ ! -x $probe || $here/as-cpu.sh -nt $probe ]]; then
    printf '%s\n' '#include <stdio.h>' \
      'int main(void) { __builtin_cpu_init();' \
      '  const char* f[] = {"avx2", "fma", "avx512f", "avx512bw", "avx512vnni", "avxvnni", "avx512bf16", "amx-bf16", "amx-int8"};' \
      '  int on[] = {__builtin_cpu_supports("avx2"), __builtin_cpu_supports("fma"), __builtin_cpu_supports("avx512f"),' \
      '    __builtin_cpu_supports("avx512bw"), __builtin_cpu_supports("avx512vnni"), __builtin_cpu_supports("avxvnni"),' \
      '    __builtin_cpu_supports("avx512bf16"), __builtin_cpu_supports("amx-bf16"), __builtin_cpu_supports("amx-int8")};' \
      '  for (int i = 0; i < 9; ++i) if (on[i]) printf("%s ", f[i]);' \
      '  printf("\n"); return 0; }' >"$probe.c"
    cc -O1 -o "$probe" "$probe.c"
  fi
  printf 'this CPU:      '; env -u LD_PRELOAD -u LD_AUDIT -u DFW_CPU_MASK "$probe"
  printf 'as %-11s ' "$kind:"; "$probe"
  exit 0
fi
exec "$@"
