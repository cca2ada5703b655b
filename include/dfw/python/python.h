// dfworker's Python: CPython 3.11 (Debian's libpython3.11), embedded as Beam's Python SDK process
// embeds it, loaded at run time only when something needs Python. The dfworker binary does not
// link libpython: libdfw_python.so (built beside it) does, and is dlopen'ed on first use, as the
// CUDA backend is. Where either is missing, every entry point returns kUnavailable with a sentence
// naming what is missing and the Debian package that provides it.
//
// One interpreter per process, run by a thread of its own: each call below is one request to it
// (a whole batch of rows is one request, so the interpreter is entered once per batch, not per
// row). All entry points may be called from any thread, concurrently; requests run one at a time.
//
// Values cross as Beam's Python SDK hands them to user code: null/bool/int/float/str as None/bool/
// int/float/str, a list as a list, a row as a named tuple of its fields (row.name, row[i],
// row._asdict(); also row['name'], as for the dicts Beam hands over nested, such as a model
// handler's PredictionResult.inference). Results come back the same way; also a tuple becomes a list, a dict or a
// beam.Row (`beam.Row(a=1)`) a row. A Python int outside 64 bits is an OverflowError, any other
// type a TypeError: the call's error, never a crash.
//
// Errors of a call are Python's, "ZeroDivisionError: division by zero" (kInvalidArgument;
// MemoryError is kResourceExhausted), with "(<callable> line N)" when raised in the user's code.
//
// Bounds: the interpreter's heap is capped (RuntimeOptions::memory_limit_bytes; past it Python
// raises MemoryError), recursion stops at the recursion limit (RecursionError), module-level code
// and templates stop at the load time limit (TimeoutError), and results
// nested deeper than 500 levels or holding more than 2^22 values are refused (read big
// tables in batches).
//
// Example (reading Parquet through pyarrow, given pyarrow in the Python environment):
//
//   ASSIGN_OR_RETURN(auto read, python::Function::FromModule(R"(
//   import pyarrow.parquet as pq
//   def read(path):
//       return pq.read_table(path).to_pylist()
//   )", "read"));
//   ASSIGN_OR_RETURN(std::vector<Row> rows, read->CallForRows({Value::String(path)}));
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw::python {

struct RuntimeOptions {
  // Cap on the interpreter's heap, bytes (MemoryError past it). <= 0: no cap of its own.
  int64_t memory_limit_bytes = int64_t{1} << 30;
  // sys.setrecursionlimit.
  int recursion_limit = 1000;
  // Wall time for compiling a function (its module-level code) or rendering a template, ms: past
  // it Python raises TimeoutError (checked between bytecodes; a single long C call is not cut
  // short). <= 0: no limit.
  int64_t load_time_limit_ms = 60'000;
  // Wall time for one row's call, ms: past it that row fails with TimeoutError (checked between
  // bytecodes, like the load limit) and the batch goes on with the next row. <= 0: none, as on Beam
  // (--python_row_timeout sets it in SDK processes).
  int64_t row_time_limit_ms = 0;
  // The interpreter of the user's environment: a venv's bin/python (its site-packages are then
  // importable) or a prefix's python3.11. "" = the system's /usr/bin/python3.11.
  std::string python_executable;
};

// Sets the options the interpreter starts with. kFailedPrecondition once it has started (with
// other options).
Status Configure(const RuntimeOptions& options);

// The options Configure last set (the defaults before any call): a caller changes one and passes
// them back, keeping what others set.
RuntimeOptions ConfiguredOptions();

// The user's Python environment (--python_env, docs/options.md): `path` is a venv (a folder with
// pyvenv.cfg) or an installation prefix (bin/python3.11 and lib/python3.11) of Python 3.11. Returns
// its python executable (RuntimeOptions::python_executable; "" for ""), or kInvalidArgument naming
// the path and what was found there (another Python version, no python, not a folder).
Result<std::string> ResolveEnvironment(const std::string& path);

// The variable that hands the environment to the processes a run starts (SDK processes).
inline constexpr const char* kEnvironmentVariable = "DFW_PYTHON_ENV";

// Resolves `path` and configures the interpreter with it; EnvironmentRoot() then names it, and the
// launcher states it as kEnvironmentVariable in every SDK process's environment so that they use the
// same Python. "" = the path in kEnvironmentVariable when set (an SDK process, or a user's export),
// else nothing to do. kFailedPrecondition when Python has already started with another environment.
Status UseEnvironment(const std::string& path);

// The environment the last successful UseEnvironment chose (its root folder), "" when none.
std::string EnvironmentRoot();

// Beam YAML's `dependencies:` (a transform's config, as Beam's yaml_transform
// extract_extra_dependencies reads it): pip requirements installed into a venv cached per list,
// CACHE/<sha256 of the base python and the sorted list>, made under a lock (concurrent runs wait
// for one install) and visible only once complete. The venv sees the base Python's packages
// (--system-site-packages); pass its folder to UseEnvironment. pip honours its own variables
// (PIP_INDEX_URL, PIP_NO_INDEX, PIP_FIND_LINKS) and `pip_args`.
struct DependencyOptions {
  std::string base_environment;        // --python_env whose python makes the venv ("" = /usr/bin/python3.11)
  std::string cache_dir;               // "" = $DFW_PYTHON_VENV_CACHE, else $XDG_CACHE_HOME or ~/.cache, /dfworker/venvs
  std::vector<std::string> pip_args;   // e.g. {"--no-index", "--find-links", DIR}
  int64_t timeout_ms = 15 * 60 * 1000;  // for the whole install
};
// The venv's folder; kUnavailable naming each package pip found no distribution for (or pip's
// error) and the commands that install them by hand; kInvalidArgument for an entry that is not a
// requirement (empty, or an option such as "--index-url").
Result<std::string> InstallDependencies(const std::vector<std::string>& packages, const DependencyOptions& options = {});

// Loads libdfw_python.so and starts the interpreter, once per process (later calls return the
// first outcome). kUnavailable with what is missing and the package to install.
Status EnsureStarted();

// A Python callable, compiled once and called many times. Not copyable; destroying it releases
// the Python object (and the module globals of its source).
class Function {
 public:
  ~Function();
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  // A Beam YAML `callable:` text, chosen as Beam's PythonCallableWithSource chooses it: a
  // builtin's name (`str`), a dotted name to import (`math.sqrt`), or a script whose module-level
  // code runs now and whose function is the last top-level `def`/`class`, or else the value of
  // its last top-level line (`import re` / `lambda row: ...`). `beam` (with beam.Row) is in scope.
  static Result<std::unique_ptr<Function>> FromCallable(std::string_view source);

  // The function `name` of a module's source (Beam's `path:` + `name:`; also the way to run your
  // own Python from C++). The module-level code runs now.
  static Result<std::unique_ptr<Function>> FromModule(std::string_view module_source, std::string_view name);

  // A Beam `expression:` with language: python: each field of the row that the expression's text
  // mentions is bound to a local of that name; a missing name is Beam's ValueError listing the
  // row's fields. Syntax errors are reported now.
  static Result<std::unique_ptr<Function>> FromExpression(std::string_view expression);

  // fn(row) for each row of rows[0..n), one request. out is resized to n; out[i] is the value or
  // that row's error.
  void CallRows(const Row* rows, std::size_t n, std::vector<Result<Value>>& out) const;
  Result<Value> CallRow(const Row& row) const;

  // fn(*args), once: rows go as named tuples, lists as lists.
  Result<Value> Call(const std::vector<Value>& args) const;

  // fn(*args) whose result is a list (or tuple) of rows (dicts, named tuples or beam.Rows): the
  // rows. Anything else is a TypeError naming what came back.
  Result<std::vector<Row>> CallForRows(const std::vector<Value>& args) const;

 private:
  explicit Function(std::uintptr_t handle) : handle_(handle) {}
  static Result<std::unique_ptr<Function>> Make(int form, std::string_view text, std::string_view name);
  std::uintptr_t handle_;
};

// Jinja2 (Debian's python3-jinja2), as Beam renders a pipeline file (yaml_transform.expand_jinja:
// StrictUndefined, includes/imports/extends loaded by path as given and then beside `path`,
// `datetime` and the variables in scope). `variables_json` must be a JSON object ("" = none), read
// by Python's json module ("--jinja_variables: ..." errors); `string_variables` are set on top of
// it (Beam's --jinja_variable_flags). Errors are "PATH:LINE: message" (kInvalidArgument).
Result<std::string> RenderPipelineTemplate(std::string_view path, std::string_view source, std::string_view variables_json,
                                           const std::vector<std::pair<std::string, std::string>>& string_variables = {});

// A chat template, rendered in the environment transformers' apply_chat_template uses
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, {% generation %},
// raise_exception, strftime_now, tojson). `variables_json`: a JSON object (messages,
// add_generation_prompt, the special tokens, ...). Errors are "NAME:LINE: message".
Result<std::string> RenderChatTemplate(std::string_view name, std::string_view source, std::string_view variables_json);

}  // namespace dfw::python
