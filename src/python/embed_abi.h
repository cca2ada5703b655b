// Private to the python module: the boundary between dfw_python (linked into dfworker) and
// libdfw_python.so (linked against libpython3.11, dlopen'ed on first use). The library exports one
// C symbol that builds an Embedded; everything else is this C++ interface, compiled by the same
// compiler in the same build (as libdfw_backend_cuda.so's InferenceBackend is).
//
// Threading: every method may be called from any thread, concurrently; the library runs all Python
// on one interpreter thread of its own (a large stack, so deep recursion ends as RecursionError and
// never overflows a worker thread's stack), one request at a time: a request is a whole batch, so
// the interpreter is entered once per batch, not per row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw::python_internal {

inline constexpr char kEmbedLibrary[] = "libdfw_python.so";
inline constexpr char kEmbedSymbol[] = "dfw_python_create_v1";

struct EmbedConfig {
  int64_t memory_limit_bytes = 0;  // cap on the interpreter's heap (MemoryError past it); 0 = none
  int recursion_limit = 1000;      // sys.setrecursionlimit
  int64_t load_time_limit_ms = 0;  // MakeFunction and Render end with TimeoutError past it; 0 = none
  std::string python_executable;   // the python3.11 of a venv or prefix ("" = /usr/bin/python3.11)
  int64_t row_time_limit_ms = 0;   // one row of CallRows ends with TimeoutError past it; 0 = none
};

// How a function is named in its source (see dfw/python/python.h for the rules of each).
enum class FunctionForm : int { kCallable = 0, kModule = 1, kExpression = 2 };

// Opaque handle of a compiled function; owned by the Embedded that made it.
using FunctionHandle = std::uintptr_t;

class Embedded {
 public:
  virtual ~Embedded() = default;

  // Compiles and, for kCallable/kModule, executes the module-level code. `text` is the callable
  // source, module source or expression; `name` the function's name for kModule, the file name
  // shown in tracebacks otherwise.
  virtual Result<FunctionHandle> MakeFunction(FunctionForm form, std::string_view text, std::string_view name) = 0;

  // Drops the function (its module's globals go with it).
  virtual void ReleaseFunction(FunctionHandle fn) = 0;

  // fn(row) for each of `rows[0..n)` into out[i]. Python exceptions become the row's Status
  // ("ZeroDivisionError: division by zero", kInvalidArgument; MemoryError kResourceExhausted).
  virtual void CallRows(FunctionHandle fn, const Row* rows, std::size_t n, Result<Value>* out) = 0;

  // fn(*args), once.
  virtual Result<Value> Call(FunctionHandle fn, const Value* args, std::size_t n) = 0;

  // Renders a Jinja2 template. `mode` is "pipeline" (Beam's expand_jinja; `path` is the pipeline
  // file, includes are looked up beside it) or "chat" (transformers' apply_chat_template
  // environment). `variables_json` is a JSON object. Errors are "PATH:LINE: message".
  virtual Result<std::string> Render(std::string_view mode, std::string_view path, std::string_view source,
                                     std::string_view variables_json) = 0;
};

// The exported factory: nullptr with `error` (NUL-terminated, at most error_size bytes) on failure.
using CreateFn = Embedded* (*)(const EmbedConfig* config, char* error, std::size_t error_size);

}  // namespace dfw::python_internal
