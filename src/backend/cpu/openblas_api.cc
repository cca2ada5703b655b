// OpenBLAS loaded on first use (openblas_api.h).
#include "openblas_api.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

namespace dfw::cpu_blas {
namespace {

// The build's OpenBLAS (its pkg-config libdir), then the soname through the loader's search.
#ifndef DFW_OPENBLAS_LIBDIR
#define DFW_OPENBLAS_LIBDIR ""
#endif
constexpr const char* kSoname = "libopenblas.so.0";

struct Loader {
  std::mutex mu;                // SetThreads against the load applying the remembered count
  std::once_flag once;
  std::atomic<bool> loaded{false};
  OpenBlasApi api;
  Status error = Status::OK();  // set once, under `once`
  int pending_threads = 0;      // SetThreads before the load (0: none)
};

Loader& TheLoader() {
  static Loader* loader = new Loader;  // never destroyed: GEMMs may run while statics go
  return *loader;
}

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

void Load(Loader& l) {
  std::string tried;
  void* handle = nullptr;
  const std::string build_dir = DFW_OPENBLAS_LIBDIR;
  for (const std::string& file : {build_dir.empty() ? std::string() : build_dir + "/" + kSoname, std::string(kSoname)}) {
    if (file.empty()) continue;
    // RTLD_LOCAL: its symbols serve our calls only; RTLD_NOW: a broken file fails here, not mid-GEMM.
    handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + file + ": " + (why != nullptr ? why : "not loadable");
  }
  if (handle == nullptr) {
    l.error = Unavailable("cannot load OpenBLAS, which the CPU backend's products need (" + tried +
                          "); install libopenblas0 (scripts/setup.sh)");
    return;
  }
  OpenBlasApi api;
  std::string missing;
  Resolve(handle, "cblas_sgemm", api.sgemm, missing);
  Resolve(handle, "openblas_set_num_threads", api.set_num_threads, missing);
  Resolve(handle, "openblas_get_num_threads", api.get_num_threads, missing);
  Resolve(handle, "openblas_get_config", api.get_config, missing);
  Resolve(handle, "openblas_get_corename", api.get_corename, missing);
  if (!missing.empty()) {
    l.error = Unavailable("the OpenBLAS library loaded has no " + missing + " (not OpenBLAS, or too old)");
    return;  // the handle stays open: harmless, and nothing of it is called
  }
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.pending_threads > 0) api.set_num_threads(l.pending_threads);
  l.api = api;
  l.loaded.store(true, std::memory_order_release);
}

}  // namespace

Result<const OpenBlasApi*> OpenBlas() {
  Loader& l = TheLoader();
  std::call_once(l.once, [&l] { Load(l); });
  if (!l.error.ok()) return l.error;
  return &l.api;
}

void SetThreads(int threads) {
  Loader& l = TheLoader();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.loaded.load(std::memory_order_acquire)) {
    l.api.set_num_threads(threads);
  } else {
    l.pending_threads = threads;
  }
}

int Threads() {
  Result<const OpenBlasApi*> api = OpenBlas();
  if (api.ok()) return (*api)->get_num_threads();
  Loader& l = TheLoader();
  std::lock_guard<std::mutex> lock(l.mu);
  return l.pending_threads > 0 ? l.pending_threads : 1;
}

bool Loaded() { return TheLoader().loaded.load(std::memory_order_acquire); }

}  // namespace dfw::cpu_blas
