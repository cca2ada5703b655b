// OpenBLAS, loaded the first time the CPU backend needs it (dlopen + dlsym), not when dfworker
// starts: a process that runs no model (the launcher, every SDK process of a pipeline without
// RunInference) neither maps the library nor pays for its start-up — about 14,000 symbol
// relocations of its per-core dispatch tables, and a pool of threads sized to the CPUs, created
// when the library loads, that spin (sched_yield) for a while before they sleep.
//
// Only the functions the backend calls are resolved; their types are cblas.h's, so a change of
// signature fails the build. The library file is the one the build found (pkg-config's libdir,
// soname libopenblas.so.0), else whatever the loader finds by soname (Debian's alternatives).
//
// Threading: every function here is safe to call from any thread.
#pragma once

#include <cblas.h>

#include "dfw/common/status.h"

namespace dfw::cpu_blas {

struct OpenBlasApi {
  decltype(&::cblas_sgemm) sgemm = nullptr;
  decltype(&::openblas_set_num_threads) set_num_threads = nullptr;
  decltype(&::openblas_get_num_threads) get_num_threads = nullptr;
  decltype(&::openblas_get_config) get_config = nullptr;
  decltype(&::openblas_get_corename) get_corename = nullptr;
};

// Loads the library on the first call (later calls return the same answer): the API, or
// kUnavailable naming each file tried and the loader's reason.
Result<const OpenBlasApi*> OpenBlas();

// The pool size: applied now when the library is loaded, else remembered and applied when it
// loads (a process that never runs a product never loads it). threads >= 1 (the caller checks).
void SetThreads(int threads);
// The pool size: the library's (loaded on this call if need be), or when it cannot load the last
// SetThreads value (1 if none).
int Threads();

// Whether this process has loaded it (for the log and tests; loads nothing).
bool Loaded();

}  // namespace dfw::cpu_blas
