// libdfw_python.so: dfworker's CPython, loaded with dlopen by src/python/runtime.cc. One
// interpreter per process, run by one thread of its own (see embed_abi.h for why); the C++ side
// hands it whole requests (a batch of rows, a template) and waits.
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>

#include "convert.h"
#include "memory_cap.h"
#include "python/embed_abi.h"

namespace dfw::python_embed {

extern const char kPreludeSource[];  // dfw_embed.py, made into a string by CMake (prelude.cc)

namespace {

using python_internal::EmbedConfig;
using python_internal::Embedded;
using python_internal::FunctionForm;
using python_internal::FunctionHandle;

// Deep recursion in Python (or in C code it calls, such as repr or json) stops at the recursion
// limit long before a stack this size ends.
constexpr std::size_t kInterpreterStackBytes = std::size_t{64} << 20;

class Interpreter final : public Embedded {
 public:
  explicit Interpreter(EmbedConfig config) : config_(std::move(config)) {}

  // Starts the thread and the interpreter on it; false with `error` when either fails.
  bool Start(std::string& error) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, kInterpreterStackBytes);
    const int rc = pthread_create(&thread_, &attr, &Interpreter::ThreadEntry, this);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      error = std::string("cannot start the Python thread: ") + std::strerror(rc);
      return false;
    }
    pthread_detach(thread_);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return started_; });
    if (!start_error_.empty()) {
      error = start_error_;
      return false;
    }
    return true;
  }

  Result<FunctionHandle> MakeFunction(FunctionForm form, std::string_view text, std::string_view name) override {
    Result<FunctionHandle> out = Internal("not run");
    RunBounded([&] {
      PyObject* maker = form == FunctionForm::kCallable ? callable_from_source_
                        : form == FunctionForm::kModule ? callable_from_module_
                                                        : expression_function_;
      PyObject* a = PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
      PyObject* b = PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
      PyObject* fn = nullptr;
      if (a != nullptr && b != nullptr) {
        fn = form == FunctionForm::kExpression ? PyObject_CallOneArg(maker, a) : PyObject_CallFunctionObjArgs(maker, a, b, nullptr);
      }
      Py_XDECREF(a);
      Py_XDECREF(b);
      if (fn == nullptr) {
        out = FetchError(describe_);
      } else if (!PyCallable_Check(fn)) {
        out = InvalidArgument(std::string("TypeError: '") + Py_TYPE(fn)->tp_name + "' object is not callable");
        Py_DECREF(fn);
      } else {
        out = reinterpret_cast<FunctionHandle>(fn);
      }
    });
    return out;
  }

  void ReleaseFunction(FunctionHandle fn) override {
    Run([&] { Py_XDECREF(reinterpret_cast<PyObject*>(fn)); });
  }

  void CallRows(FunctionHandle fn, const Row* rows, std::size_t n, Result<Value>* out) override {
    const int64_t limit_ms = config_.row_time_limit_ms;
    auto job = [&] {
      PyObject* f = reinterpret_cast<PyObject*>(fn);
      for (std::size_t i = 0; i < n; ++i) {
        if (limit_ms > 0) {  // this row's clock (RunRows watches it)
          row_timed_out_ = false;
          row_started_ns_ = SteadyNowNs();
          ++row_seq_;
        }
        PyObject* arg = RowToPython(rows[i]);
        PyObject* r = arg != nullptr ? PyObject_CallOneArg(f, arg) : nullptr;
        Py_XDECREF(arg);
        if (r == nullptr) {
          out[i] = FetchError(describe_);
          if (row_timed_out_) {
            out[i] = InvalidArgument("TimeoutError: the callable ran past the per-row time limit of " +
                                     std::to_string(limit_ms) + " ms (--python_row_timeout) on this row");
          }
        } else {
          out[i] = FromPython(r);
          Py_DECREF(r);
        }
        // A timeout that landed after the row ended (under the GIL, as RunRows sends it) must not
        // fail the next row.
        if (limit_ms > 0) PyThreadState_SetAsyncExc(py_thread_id_, nullptr);
      }
    };
    if (limit_ms > 0) {
      RunRows(job, limit_ms);
    } else {
      Run(job);
    }
  }

  Result<Value> Call(FunctionHandle fn, const Value* args, std::size_t n) override {
    Result<Value> out = Internal("not run");
    Run([&] {
      PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(n));
      for (std::size_t i = 0; tuple != nullptr && i < n; ++i) {
        PyObject* a = ToPython(args[i]);
        if (a == nullptr) {
          Py_CLEAR(tuple);
          break;
        }
        PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), a);
      }
      PyObject* r = tuple != nullptr ? PyObject_Call(reinterpret_cast<PyObject*>(fn), tuple, nullptr) : nullptr;
      Py_XDECREF(tuple);
      if (r == nullptr) {
        out = FetchError(describe_);
        return;
      }
      out = FromPython(r);
      Py_DECREF(r);
    });
    return out;
  }

  Result<std::string> Render(std::string_view mode, std::string_view path, std::string_view source,
                             std::string_view variables_json) override {
    Result<std::string> out = Internal("not run");
    RunBounded([&] {
      PyObject* fn = mode == "chat" ? render_chat_ : render_pipeline_;
      PyObject* a = PyUnicode_FromStringAndSize(path.data(), static_cast<Py_ssize_t>(path.size()));
      PyObject* b = PyUnicode_FromStringAndSize(source.data(), static_cast<Py_ssize_t>(source.size()));
      PyObject* c = PyUnicode_FromStringAndSize(variables_json.data(), static_cast<Py_ssize_t>(variables_json.size()));
      PyObject* r = a && b && c ? PyObject_CallFunctionObjArgs(fn, a, b, c, nullptr) : nullptr;
      Py_XDECREF(a);
      Py_XDECREF(b);
      Py_XDECREF(c);
      if (r == nullptr) {
        out = FetchError(describe_);
        return;
      }
      Py_ssize_t len = 0;
      const char* p = PyUnicode_Check(r) ? PyUnicode_AsUTF8AndSize(r, &len) : nullptr;
      if (p == nullptr) {
        PyErr_Clear();
        out = Internal("a template rendered to something other than text");
      } else {
        out = std::string(p, static_cast<std::size_t>(len));
      }
      Py_DECREF(r);
    });
    return out;
  }

 private:
  static void* ThreadEntry(void* self) {
    static_cast<Interpreter*>(self)->ThreadMain();
    return nullptr;
  }

  // Runs `job` on the interpreter thread, holding the GIL, and waits for it. One at a time.
  void Run(const std::function<void()>& job, int64_t limit_ms = 0) {
    std::lock_guard<std::mutex> serial(run_mu_);
    std::unique_lock<std::mutex> lock(mu_);
    job_ = &job;
    job_done_ = false;
    cv_.notify_all();
    if (limit_ms <= 0) {
      cv_.wait(lock, [this] { return job_done_; });
      return;
    }
    // Past the deadline, TimeoutError is raised in the interpreter thread at its next check
    // between bytecodes (again every second, should the code catch it). Taking the GIL here waits
    // for that check; mu_ is released first, as the interpreter thread takes it to finish.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
    while (!cv_.wait_until(lock, deadline, [this] { return job_done_; })) {
      lock.unlock();
      PyGILState_STATE gil = PyGILState_Ensure();
      if (job_running_) PyThreadState_SetAsyncExc(py_thread_id_, PyExc_TimeoutError);
      PyGILState_Release(gil);
      lock.lock();
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
  }
  // Module-level code and templates: under the load time limit.
  void RunBounded(const std::function<void()>& job) { Run(job, config_.load_time_limit_ms); }

  static int64_t SteadyNowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  // As Run, with a clock per row: `job` (CallRows) starts each row's clock (row_seq_,
  // row_started_ns_); a row past `limit_ms` gets TimeoutError at its next check between bytecodes
  // (again every second while it is still that row). The row is re-checked under the GIL, which
  // the interpreter thread holds while it moves to the next row, so a late timeout never names
  // the wrong row; CallRows clears one that lands after its row ended.
  void RunRows(const std::function<void()>& job, int64_t limit_ms) {
    std::lock_guard<std::mutex> serial(run_mu_);
    std::unique_lock<std::mutex> lock(mu_);
    row_seq_ = 0;
    row_started_ns_ = SteadyNowNs();
    job_ = &job;
    job_done_ = false;
    cv_.notify_all();
    const int64_t limit_ns = limit_ms * 1'000'000;
    for (;;) {
      const uint64_t seq = row_seq_;
      const std::chrono::steady_clock::time_point deadline{std::chrono::nanoseconds(row_started_ns_ + limit_ns)};
      if (cv_.wait_until(lock, deadline, [this] { return job_done_; })) return;
      if (row_seq_ != seq) continue;  // that row ended in time: watch the one running now
      lock.unlock();
      PyGILState_STATE gil = PyGILState_Ensure();
      if (job_running_ && row_seq_ == seq) {
        row_timed_out_ = true;
        PyThreadState_SetAsyncExc(py_thread_id_, PyExc_TimeoutError);
      }
      PyGILState_Release(gil);
      lock.lock();
      cv_.wait_for(lock, std::chrono::seconds(1), [&] { return job_done_ || row_seq_ != seq; });
      if (job_done_) return;
    }
  }

  void ThreadMain() {
    std::string error = Initialize();
    {
      std::lock_guard<std::mutex> lock(mu_);
      started_ = true;
      start_error_ = error;
    }
    cv_.notify_all();
    if (!error.empty()) return;
    for (;;) {
      PyThreadState* state = PyEval_SaveThread();  // other Python threads run while this one waits
      const std::function<void()>* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return job_ != nullptr; });
        job = job_;
      }
      PyEval_RestoreThread(state);
      job_running_ = true;
      try {
        (*job)();
      } catch (...) {  // a C++ allocation failed while converting: the request's callers see Internal
        PyErr_Clear();
      }
      // Under the GIL, so a timeout cannot land between these two: none is left for the next job.
      PyThreadState_SetAsyncExc(py_thread_id_, nullptr);
      job_running_ = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        job_ = nullptr;
        job_done_ = true;
      }
      cv_.notify_all();
    }
  }

  std::string Initialize() {
    // This library was dlopen'ed RTLD_LOCAL, and libpython with it: C extension modules
    // (lib-dynload, site-packages) expect libpython's symbols in the global scope, as the python3
    // executable gives them. Promote the already loaded libpython to it.
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&Py_InitializeFromConfig), &info) != 0 && info.dli_fname != nullptr) {
      if (::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) == nullptr) {
        return std::string("cannot make libpython's symbols global: ") + ::dlerror();
      }
    }
    PyPreConfig pre;
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.utf8_mode = 1;
    PyStatus st = Py_PreInitialize(&pre);
    if (PyStatus_Exception(st)) return std::string("Python pre-initialisation failed: ") + (st.err_msg ? st.err_msg : "");
    InstallMemoryCap(config_.memory_limit_bytes);
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    config.write_bytecode = 0;
    config.user_site_directory = 0;
    const std::string exe = config_.python_executable.empty() ? "/usr/bin/python3.11" : config_.python_executable;
    st = PyConfig_SetBytesString(&config, &config.program_name, exe.c_str());
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) return std::string("Python initialisation failed: ") + (st.err_msg ? st.err_msg : "");
    Py_SetRecursionLimit(config_.recursion_limit);
    py_thread_id_ = PyThread_get_thread_ident();

    PyObject* module = PyModule_New("dfw_embed");
    PyObject* code = module ? Py_CompileString(kPreludeSource, "dfw_embed.py", Py_file_input) : nullptr;
    PyObject* dict = module ? PyModule_GetDict(module) : nullptr;  // borrowed
    if (dict != nullptr) PyDict_SetItemString(dict, "__builtins__", PyEval_GetBuiltins());
    PyObject* ran = code ? PyEval_EvalCode(code, dict, dict) : nullptr;
    Py_XDECREF(code);
    if (ran == nullptr) {
      Status s = FetchError(nullptr);
      return "the embedded prelude failed: " + s.message();
    }
    Py_DECREF(ran);
    PyObject* limit = PyLong_FromLongLong(config_.load_time_limit_ms / 1000);
    if (limit != nullptr) PyDict_SetItemString(dict, "load_time_limit_s", limit);
    Py_XDECREF(limit);
    module_ = module;  // kept for the life of the process, with everything below
    auto get = [dict](const char* name) { return PyDict_GetItemString(dict, name); };
    describe_ = get("describe");
    callable_from_source_ = get("callable_from_source");
    callable_from_module_ = get("callable_from_module");
    expression_function_ = get("expression_function");
    render_pipeline_ = get("render_pipeline");
    render_chat_ = get("render_chat");
    PyObject* row_type = get("row_type");
    PyObject* timestamp = get("timestamp_from_micros");
    if (!describe_ || !callable_from_source_ || !callable_from_module_ || !expression_function_ || !render_pipeline_ ||
        !render_chat_ || !row_type || !timestamp) {
      return "the embedded prelude lacks one of its entry points";
    }
    SetRowTypeFactory(row_type);
    SetTimestampFactory(timestamp);
    return "";
  }

  const EmbedConfig config_;
  pthread_t thread_{};
  std::mutex run_mu_;  // one request at a time
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  std::string start_error_;
  const std::function<void()>* job_ = nullptr;
  bool job_done_ = false;
  unsigned long py_thread_id_ = 0;      // the interpreter thread, as Python names it
  std::atomic<bool> job_running_{false};  // written by the interpreter thread under the GIL
  // CallRows' per-row clock (RunRows): written by the interpreter thread under the GIL.
  std::atomic<uint64_t> row_seq_{0};
  std::atomic<int64_t> row_started_ns_{0};
  std::atomic<bool> row_timed_out_{false};  // set by RunRows under the GIL
  PyObject* module_ = nullptr;
  PyObject* describe_ = nullptr;
  PyObject* callable_from_source_ = nullptr;
  PyObject* callable_from_module_ = nullptr;
  PyObject* expression_function_ = nullptr;
  PyObject* render_pipeline_ = nullptr;
  PyObject* render_chat_ = nullptr;
};

}  // namespace
}  // namespace dfw::python_embed

extern "C" __attribute__((visibility("default"))) dfw::python_internal::Embedded* dfw_python_create_v1(
    const dfw::python_internal::EmbedConfig* config, char* error, std::size_t error_size) {
  static std::mutex mu;
  static dfw::python_internal::Embedded* instance = nullptr;  // one interpreter per process, never torn down
  std::lock_guard<std::mutex> lock(mu);
  if (instance != nullptr) return instance;
  auto* interp = new dfw::python_embed::Interpreter(*config);
  std::string why;
  if (!interp->Start(why)) {
    // The thread may still be alive (it failed after starting): the object is left to it.
    if (error != nullptr && error_size > 0) {
      std::snprintf(error, error_size, "%s", why.c_str());
    }
    return nullptr;
  }
  instance = interp;
  return instance;
}
