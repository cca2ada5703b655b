// A CPU with fewer instruction sets than this one, for benchmarks: an LD_PRELOAD library that
// answers every `cpuid` of the process with the features of a smaller CPU, so every library in it
// (oneDNN, ONNX Runtime's MLAS, numpy, glibc's later checks, dfworker's own) picks the kernels it
// would pick there. Used by scripts/as-cpu.sh; never part of the product.
//
// How: Linux can make `cpuid` fault for a thread (arch_prctl(ARCH_SET_CPUID, 0), on CPUs with
// "cpuid_fault" in /proc/cpuinfo, a VM's included). The setting is kept across fork and clone and
// reset by execve, so it is set again in every process: scripts/as-cpu.sh names this library both
// as an audit library (LD_AUDIT: the dynamic loader loads it, in a namespace of its own, before it
// maps the program's libraries, and calls la_version, which starts the faulting and a handler, so
// libraries that read cpuid in their constructors (oneDNN, OpenSSL, ISA-L) see the smaller CPU
// too) and as a preloaded one (LD_PRELOAD: its constructor installs the same handler from the
// program's namespace, and its sigaction/signal wrappers keep that handler in front). The fault arrives as SIGSEGV (si_code SI_KERNEL) at a `0f a2`: the handler turns faulting
// off for its thread, runs the real cpuid, turns it on again, clears the bits of the features the
// chosen CPU lacks, writes the four registers and steps over the instruction. Any other SIGSEGV goes
// to the handler the program installed (sigaction/signal are wrapped so the program's own handler is
// kept as the one to call), or kills the process as it would have.
//
// DFW_CPU_MASK picks the CPU: "avx2" (AVX2 and FMA; no AVX-512 of any kind, no AVX-VNNI, no AMX, no
// AVX10: a Haswell-to-Comet-Lake Xeon or a Zen 2/3 EPYC) or "avx512-vnni" (AVX-512 with VNNI; no
// BF16, no AMX: a Cascade Lake / Ice Lake Xeon). DFW_CPU_MASK_REPORT=FILE appends one line per
// process at its exit: pid, mask, how many cpuid were answered.
// (glibc reads cpuid in the dynamic loader, before any constructor; scripts/as-cpu.sh sets
// GLIBC_TUNABLES to take the same features out of glibc's own choices.)
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef ARCH_SET_CPUID
#define ARCH_SET_CPUID 0x1012
#endif

enum Mask { kUnread, kNone, kAvx2, kAvx512Vnni };
static enum Mask mask_kind = kUnread;
static struct sigaction program_action;  // what the program asked for SIGSEGV (default: SIG_DFL)
static volatile long answered;

typedef int (*SigactionFn)(int, const struct sigaction*, struct sigaction*);

static SigactionFn RealSigaction(void) {
  static SigactionFn real;
  if (real == NULL) real = (SigactionFn)dlsym(RTLD_NEXT, "sigaction");
  return real;
}

// Reads DFW_CPU_MASK once: kNone when unset (the library then changes nothing).
static enum Mask Kind(void) {
  if (mask_kind != kUnread) return mask_kind;
  const char* want = getenv("DFW_CPU_MASK");
  if (want == NULL || *want == '\0') {
    mask_kind = kNone;
  } else if (strcmp(want, "avx2") == 0) {
    mask_kind = kAvx2;
  } else if (strcmp(want, "avx512-vnni") == 0) {
    mask_kind = kAvx512Vnni;
  } else {
    fprintf(stderr, "cpuid_mask: DFW_CPU_MASK=%s: expected avx2 or avx512-vnni\n", want);
    _exit(2);
  }
  return mask_kind;
}

static void RealCpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static uint32_t Bits(const int* bits) {
  uint32_t m = 0;
  for (; *bits >= 0; ++bits) m |= 1u << *bits;
  return m;
}

static void Mask(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  if (mask_kind == kNone || mask_kind == kUnread) return;
  if (leaf == 7 && sub == 0) {
    // EBX: avx512f 16, dq 17, ifma 21, pf 26, er 27, cd 28, bw 30, vl 31.
    static const int b_avx512[] = {16, 17, 21, 26, 27, 28, 30, 31, -1};
    // ECX: vbmi 1, vbmi2 6, vnni 11, bitalg 12, vpopcntdq 14.
    static const int c_avx512[] = {1, 6, 11, 12, 14, -1};
    // EDX: 4vnniw 2, 4fmaps 3, vp2intersect 8, amx_bf16 22, avx512_fp16 23, amx_tile 24, amx_int8 25.
    static const int d_avx512[] = {2, 3, 8, 23, -1};
    static const int d_amx[] = {22, 24, 25, -1};
    if (mask_kind == kAvx2) {
      r[1] &= ~Bits(b_avx512);
      r[2] &= ~Bits(c_avx512);
      r[3] &= ~Bits(d_avx512);
    }
    r[3] &= ~Bits(d_amx);
    if (mask_kind == kAvx512Vnni) r[3] &= ~(1u << 23);  // avx512_fp16 came with Sapphire Rapids
  } else if (leaf == 7 && sub == 1) {
    // EAX: avx_vnni 4, avx512_bf16 5, amx_fp16 21, avx_ifma 23. EDX: avx_vnni_int8 4,
    // avx_ne_convert 5, amx_complex 8, avx_vnni_int16 10, avx10 19.
    static const int a_avx2[] = {4, 5, 21, 23, -1};
    static const int d_avx2[] = {4, 5, 8, 10, 19, -1};
    static const int a_vnni[] = {4, 5, 21, 23, -1};
    static const int d_vnni[] = {4, 5, 8, 10, 19, -1};
    r[0] &= ~Bits(mask_kind == kAvx2 ? a_avx2 : a_vnni);
    r[3] &= ~Bits(mask_kind == kAvx2 ? d_avx2 : d_vnni);
  } else if (leaf == 0xd && sub == 0) {
    // The state components the CPU can save: opmask/ZMM (5-7) and AMX tiles (17-18).
    if (mask_kind == kAvx2) r[0] &= ~0xe0u;
    r[0] &= ~0x60000u;
  } else if (leaf == 0x24 || leaf == 0x1d || leaf == 0x1e) {
    r[0] = r[1] = r[2] = r[3] = 0;  // AVX10 and AMX tile descriptions
  }
}

static int SetCpuidFaulting(int on) { return (int)syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void OnSegv(int sig, siginfo_t* si, void* ctx) {
  ucontext_t* uc = (ucontext_t*)ctx;
  greg_t* g = uc->uc_mcontext.gregs;
  // A general-protection fault (SI_KERNEL) has a mapped instruction at RIP; a page fault does not
  // (and is never a cpuid), so the bytes are read only for the first.
  if (si->si_code == SI_KERNEL) {
    const unsigned char* ip = (const unsigned char*)g[REG_RIP];
    if (ip[0] == 0x0f && ip[1] == 0xa2) {
      uint32_t r[4];
      const uint32_t leaf = (uint32_t)g[REG_RAX], sub = (uint32_t)g[REG_RCX];
      SetCpuidFaulting(0);
      RealCpuid(leaf, sub, r);
      SetCpuidFaulting(1);
      Mask(leaf, sub, r);
      g[REG_RAX] = r[0];
      g[REG_RBX] = r[1];
      g[REG_RCX] = r[2];
      g[REG_RDX] = r[3];
      g[REG_RIP] += 2;
      __atomic_add_fetch(&answered, 1, __ATOMIC_RELAXED);
      return;
    }
  }
  if ((program_action.sa_flags & SA_SIGINFO) && program_action.sa_sigaction != NULL) {
    program_action.sa_sigaction(sig, si, ctx);
  } else if (program_action.sa_handler != SIG_DFL && program_action.sa_handler != SIG_IGN) {
    program_action.sa_handler(sig);
  } else {
    // As without this library: the default action when the instruction runs again.
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    RealSigaction()(SIGSEGV, &dfl, NULL);
  }
}

// The program's SIGSEGV handler is kept, not installed: this library's stays in front of it.
int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (sig != SIGSEGV || Kind() == kNone) return RealSigaction()(sig, act, old);
  if (old != NULL) *old = program_action;
  if (act != NULL) program_action = *act;
  return 0;
}

sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

static void Report(void) {
  const char* path = getenv("DFW_CPU_MASK_REPORT");
  if (path == NULL || *path == '\0') return;
  FILE* f = fopen(path, "a");
  if (f == NULL) return;
  fprintf(f, "pid %d: %s, %ld cpuid answered\n", (int)getpid(), getenv("DFW_CPU_MASK"), answered);
  fclose(f);
}

static void Start(void) {
  if (Kind() == kNone) return;
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_sigaction = OnSegv;
  act.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&act.sa_mask);
  if (RealSigaction()(SIGSEGV, &act, NULL) != 0 || SetCpuidFaulting(1) != 0) {
    fprintf(stderr, "cpuid_mask: cannot make cpuid fault here (needs cpuid_fault in /proc/cpuinfo)\n");
    _exit(2);
  }
}

// As an audit library: called as the loader loads it, before the program's libraries.
unsigned int la_version(unsigned int version) {
  Start();
  return version;
}

// As a preloaded library: the handler of the program's namespace replaces the audit one's.
__attribute__((constructor(101))) static void StartPreloaded(void) {
  Start();
  if (Kind() != kNone) atexit(Report);
}
