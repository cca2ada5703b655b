// Backend registry: "cpu" is linked in; "cuda" is dlopen'ed from libdfw_backend_cuda.so so the
// core binary runs (and reports a clear reason) on machines without CUDA.
#include "dfw/backend/registry.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace dfw {
namespace {

using CreateFn = InferenceBackend* (*)(char*, std::size_t);

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> CandidatePaths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("DFW_CUDA_BACKEND_PATH"); env != nullptr && *env != '\0') {
    std::string p = env;
    paths.push_back(IsDirectory(p) ? p + "/" + kCudaBackendLibrary : p);
    return paths;  // an explicit path is the only one tried: a wrong path must not be masked
  }
#ifdef DFW_CUDA_BACKEND_BUILD_DIR
  paths.push_back(std::string(DFW_CUDA_BACKEND_BUILD_DIR) + "/" + kCudaBackendLibrary);
#endif
  paths.push_back(kCudaBackendLibrary);
  return paths;
}

struct CudaLibrary {
  CreateFn create = nullptr;
  std::string error;  // why create is null
};

CudaLibrary TryLoad() {
  CudaLibrary out;
  std::string tried;
  for (const std::string& path : CandidatePaths()) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      tried += "\n  " + path + ": " + (why != nullptr ? why : "unknown dlopen error");
      continue;
    }
    void* sym = ::dlsym(handle, kCudaBackendSymbol);
    if (sym == nullptr) {
      ::dlclose(handle);
      out.error = "'" + path + "' does not export '" + kCudaBackendSymbol + "'";
      return out;
    }
    out.create = reinterpret_cast<CreateFn>(sym);
    return out;
  }
  out.error = std::string("cannot load the CUDA backend library ") + kCudaBackendLibrary +
              " (build with -DDFW_WITH_CUDA=ON or set DFW_CUDA_BACKEND_PATH); tried:" + tried;
  return out;
}

// A successful load is kept for the life of the process and never closed (backends keep
// pointers into the library's code); a failed one is retried on the next call, so a changed
// DFW_CUDA_BACKEND_PATH takes effect.
CudaLibrary LoadCudaLibrary() {
  static std::mutex mu;
  static CreateFn loaded = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded != nullptr) return CudaLibrary{loaded, ""};
  CudaLibrary lib = TryLoad();
  loaded = lib.create;
  return lib;
}

}  // namespace

Result<std::unique_ptr<InferenceBackend>> CreateBackend(std::string_view name) {
  if (name == "cpu") return MakeCpuBackend();
  if (name != "cuda") {
    return InvalidArgument("unknown inference backend '" + std::string(name) + "'; allowed: cpu, cuda");
  }
  if (const char* why = std::getenv(kCudaUnavailableEnv); why != nullptr && *why != '\0') {
    return Unavailable(std::string("CUDA backend not used: ") + why);
  }
  const CudaLibrary lib = LoadCudaLibrary();
  if (lib.create == nullptr) return Unavailable(lib.error);
  std::string err(512, '\0');
  InferenceBackend* backend = lib.create(err.data(), err.size());
  err.back() = '\0';  // the library promises termination; do not rely on it
  if (backend == nullptr) {
    err.resize(err.find('\0') == std::string::npos ? err.size() : err.find('\0'));
    return Unavailable("CUDA backend unavailable: " + (err.empty() ? std::string("no reason given") : err));
  }
  return std::unique_ptr<InferenceBackend>(backend);
}

}  // namespace dfw
