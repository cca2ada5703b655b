// The user's Python environment (python.h ResolveEnvironment / UseEnvironment): a venv (its
// pyvenv.cfg names the Python it was made from) or an installation prefix (bin/python3.11 beside
// lib/python3.11), checked to be Python 3.11 — the only Python whose C extension modules load
// into the embedded libpython3.11.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "dfw/python/python.h"

namespace dfw::python {
namespace {

bool IsDir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The entries of `dir` whose names start with `prefix`, sorted ("" when none or unreadable).
std::string ListNamed(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) == 0 && names.size() < 8) names.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "version" (3.11+) or "version_info" (older venv modules) of a pyvenv.cfg; "" when absent.
std::string VenvVersion(const std::string& cfg_path, std::string* home) {
  std::ifstream in(cfg_path);
  std::string line, version;
  for (int n = 0; n < 64 && std::getline(in, line); ++n) {
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto trim = [](std::string s) {
      const std::size_t b = s.find_first_not_of(" \t\r");
      const std::size_t e = s.find_last_not_of(" \t\r");
      return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    const std::string key = trim(line.substr(0, eq));
    const std::string value = trim(line.substr(eq + 1));
    if (key == "version" || key == "version_info") version = value;
    if (key == "home") *home = value;
  }
  return version;
}

}  // namespace

Result<std::string> ResolveEnvironment(const std::string& path) {
  if (path.empty()) return std::string();
  const std::string what = "--python_env '" + path + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return InvalidArgument(what + " does not exist (expected a venv or a Python 3.11 prefix)");
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument(what + " is a file, not a folder: name the venv (the folder holding pyvenv.cfg) or the prefix "
                                  "(the folder holding bin/python3.11)");
  }
  // Absolute: CPython finds its prefix from the executable's path, and SDK processes get it too.
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return InvalidArgument(what + " cannot be resolved to an absolute path");
  const std::string root = real;
  std::free(real);
  const std::string cfg = root + "/pyvenv.cfg";
  if (::stat(cfg.c_str(), &st) == 0) {
    std::string home;
    const std::string version = VenvVersion(cfg, &home);
    if (version.rfind("3.11.", 0) != 0 && version != "3.11") {
      return InvalidArgument(what + " is a venv of Python " + (version.empty() ? std::string("(no version in pyvenv.cfg)") : version) +
                             (home.empty() ? "" : " (home = " + home + ")") +
                             "; dfworker embeds Python 3.11: make the venv with /usr/bin/python3.11 -m venv");
    }
    for (const char* name : {"python3.11", "python3", "python"}) {
      const std::string exe = root + "/bin/" + name;
      if (IsExecutableFile(exe)) return exe;
    }
    return InvalidArgument(what + " has a pyvenv.cfg (Python " + version + ") but no bin/python3.11, bin/python3 or "
                           "bin/python; found in bin/: " + (ListNamed(root + "/bin", "").empty() ? "nothing" : ListNamed(root + "/bin", "")));
  }
  const std::string exe = root + "/bin/python3.11";
  if (IsExecutableFile(exe) && IsDir(root + "/lib/python3.11")) return exe;
  const std::string bins = ListNamed(root + "/bin", "python");
  const std::string libs = ListNamed(root + "/lib", "python");
  return InvalidArgument(what + " is neither a venv (no pyvenv.cfg) nor a Python 3.11 prefix (bin/python3.11 and "
                         "lib/python3.11); found " + (bins.empty() ? std::string("no bin/python*") : "bin/: " + bins) +
                         ", " + (libs.empty() ? std::string("no lib/python*") : "lib/: " + libs));
}

namespace {

// The environment UseEnvironment configured in this process ("" none), for the children it starts.
std::string& ChosenRoot() {
  static std::string root;
  return root;
}
std::mutex& ChosenRootMutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

Status UseEnvironment(const std::string& path) {
  if (path.empty()) {
    const char* inherited = std::getenv(kEnvironmentVariable);
    if (inherited == nullptr || *inherited == '\0') return Status::OK();
    return UseEnvironment(inherited);
  }
  ASSIGN_OR_RETURN(std::string exe, ResolveEnvironment(path));
  RuntimeOptions options = ConfiguredOptions();  // the limits the caller set stay
  options.python_executable = exe;
  if (Status s = Configure(options); !s.ok()) {
    return FailedPrecondition(s.message() + " (--python_env '" + path + "' came after Python had started: give it on the "
                              "command line when the pipeline file is a Jinja template)");
  }
  // The launcher states it in each SDK process's environment (EnvironmentRoot): they use the same Python.
  std::lock_guard<std::mutex> lock(ChosenRootMutex());
  ChosenRoot() = exe.substr(0, exe.rfind("/bin/"));
  return Status::OK();
}

std::string EnvironmentRoot() {
  std::lock_guard<std::mutex> lock(ChosenRootMutex());
  return ChosenRoot();
}

}  // namespace dfw::python
