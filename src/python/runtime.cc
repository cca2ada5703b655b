// Finding and starting libdfw_python.so (dfw/python/python.h): tried in order, the library named
// by DFW_PYTHON_LIBRARY (alone, so that a wrong path is not masked, as DFW_CUDA_BACKEND_PATH),
// the folder of the running executable, the build folder, then the loader's search path.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dfw/common/process.h"
#include "dfw/common/test_hooks.h"
#include "dfw/python/python.h"
#include "python/embed_abi.h"
#include "python/runtime_internal.h"

namespace dfw::python {
namespace {

using python_internal::CreateFn;
using python_internal::Embedded;
using python_internal::kEmbedLibrary;
using python_internal::kEmbedSymbol;

struct RuntimeState {
  std::mutex mu;
  RuntimeOptions options;
  bool attempted = false;
  Embedded* embedded = nullptr;  // never freed: the interpreter lives as long as the process
  Status outcome;
  pid_t pid = 0;  // the process that started it: a forked child has no interpreter thread
};

RuntimeState& State() {
  static RuntimeState* state = new RuntimeState();  // outlives every static destructor that may call in
  return *state;
}

std::vector<std::string> CandidatePaths() {
  if (const char* env = std::getenv("DFW_PYTHON_LIBRARY"); env != nullptr && *env != '\0') return {env};
  std::vector<std::string> paths;
  const std::string self = SelfExecutable();
  if (const std::size_t slash = self.rfind('/'); slash != std::string::npos) {
    paths.push_back(self.substr(0, slash + 1) + kEmbedLibrary);
  }
#ifdef DFW_PYTHON_BUILD_DIR
  paths.push_back(std::string(DFW_PYTHON_BUILD_DIR) + "/" + kEmbedLibrary);
#endif
  paths.push_back(kEmbedLibrary);
  return paths;
}

Status Load(const RuntimeOptions& options, Embedded** out) {
  std::string tried;
  void* handle = nullptr;
  bool libpython_missing = false;
  for (const std::string& path : CandidatePaths()) {
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    const char* why = ::dlerror();
    const std::string reason = why != nullptr ? why : "unknown dlopen error";
    libpython_missing = libpython_missing || reason.find("libpython3") != std::string::npos;
    tried += "\n  " + path + ": " + reason;
  }
  if (handle == nullptr) {
    if (libpython_missing) {
      return Unavailable("this pipeline needs Python, and libpython3.11 is not installed: install the Debian packages "
                         "libpython3.11 and python3-jinja2 (apt-get install -y libpython3.11 python3-jinja2); tried:" + tried);
    }
    return Unavailable(std::string("this pipeline needs Python, and ") + kEmbedLibrary +
                       " was not found beside dfworker (it is built when libpython3.11-dev is installed: "
                       "apt-get install -y libpython3.11-dev python3-jinja2, then rebuild; or set DFW_PYTHON_LIBRARY); tried:" + tried);
  }
  auto create = reinterpret_cast<CreateFn>(::dlsym(handle, kEmbedSymbol));
  if (create == nullptr) return Unavailable(std::string(kEmbedLibrary) + " does not export " + kEmbedSymbol);
  python_internal::EmbedConfig config;
  config.memory_limit_bytes = options.memory_limit_bytes;
  // The real-process tests lower the cap so that a runaway construction ends in a second.
  if (std::optional<std::string> mb = test_hooks::Get("PYTHON_MEMORY_MB")) config.memory_limit_bytes = std::atoll(mb->c_str()) << 20;
  config.recursion_limit = options.recursion_limit;
  config.load_time_limit_ms = options.load_time_limit_ms;
  if (std::optional<std::string> s = test_hooks::Get("PYTHON_LOAD_SECONDS")) config.load_time_limit_ms = std::atoll(s->c_str()) * 1000;
  config.row_time_limit_ms = options.row_time_limit_ms;
  config.python_executable = options.python_executable;
  std::string error(1024, '\0');
  Embedded* embedded = create(&config, error.data(), error.size());
  if (embedded == nullptr) {
    error.resize(error.find('\0') == std::string::npos ? error.size() : error.find('\0'));
    return Unavailable("this pipeline needs Python, and CPython did not start: " + error +
                       " (the system's python3.11 comes with the Debian package libpython3.11)");
  }
  *out = embedded;
  return Status::OK();
}

}  // namespace

Status Configure(const RuntimeOptions& options) {
  RuntimeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.attempted) {
    const bool same = s.options.memory_limit_bytes == options.memory_limit_bytes &&
                      s.options.recursion_limit == options.recursion_limit &&
                      s.options.load_time_limit_ms == options.load_time_limit_ms &&
                      s.options.row_time_limit_ms == options.row_time_limit_ms &&
                      s.options.python_executable == options.python_executable;
    if (same) return Status::OK();
    return FailedPrecondition("the Python interpreter has already started with other options");
  }
  s.options = options;
  return Status::OK();
}

RuntimeOptions ConfiguredOptions() {
  RuntimeState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.options;
}

Status EnsureStarted() { return python_internal::Interpreter().status(); }

}  // namespace dfw::python

namespace dfw::python_internal {

Result<Embedded*> Interpreter() {
  python::RuntimeState& s = python::State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.attempted) {
    s.attempted = true;
    s.pid = ::getpid();
    s.outcome = python::Load(s.options, &s.embedded);
  }
  if (!s.outcome.ok()) return s.outcome;
  if (::getpid() != s.pid) {
    return FailedPrecondition("Python was started before this process was forked from its parent; a forked child "
                              "cannot use the parent's interpreter");
  }
  return s.embedded;
}

}  // namespace dfw::python_internal
