// Beam YAML's `dependencies:` (python.h InstallDependencies): a venv per requirements list, made by
// the base python3.11 running the installer below. Python's stdlib does the hashing (hashlib), the
// lock (fcntl.flock on DIR.lock: concurrent runs wait for one install) and the venv (venv + pip);
// the venv becomes visible atomically: it counts only once its requirements file has been renamed
// into place, the last step, and a failed install is removed.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "dfw/common/child_env.h"
#include "dfw/common/file.h"
#include "dfw/common/process.h"
#include "dfw/python/python.h"

namespace dfw::python {
namespace {

// argv: cache_dir, base_python, n, n packages, then pip's extra arguments. Exit 0 printing the
// venv's folder; 3 when pip failed (its ERROR lines and the packages it found no distribution for
// on stderr, as "missing: NAME" lines); 4 for anything else.
constexpr const char* kInstaller = R"PY(
import fcntl, hashlib, json, os, re, shutil, subprocess, sys
cache, base, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
packages, pip_args = sys.argv[4:4 + n], sys.argv[4 + n:]
key = json.dumps({"python": base, "packages": sorted(packages)}, sort_keys=True)
venv = os.path.join(cache, hashlib.sha256(key.encode()).hexdigest())
done = os.path.join(venv, "dfw-requirements.txt")
os.makedirs(cache, mode=0o755, exist_ok=True)
with open(venv + ".lock", "a") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not os.path.isfile(done):
        shutil.rmtree(venv, ignore_errors=True)  # an install that was cut short
        try:
            subprocess.run([base, "-m", "venv", "--system-site-packages", venv], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            pip = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--disable-pip-version-check",
                                  "--no-input", *pip_args, *packages], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if pip.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                for line in pip.stdout.splitlines():
                    m = re.search(r"No matching distribution found for (\S+)", line)
                    if m:
                        print("missing: " + m.group(1), file=sys.stderr)
                errors = [l for l in pip.stdout.splitlines() if l.startswith("ERROR")] or pip.stdout.splitlines()[-3:]
                print("pip: " + " / ".join(errors[-4:]), file=sys.stderr)
                sys.exit(3)
            with open(done + ".tmp", "w") as f:
                f.write("\n".join(packages) + "\n")
            os.rename(done + ".tmp", done)
        except subprocess.CalledProcessError as e:
            shutil.rmtree(venv, ignore_errors=True)
            lines = (e.stderr or "").strip().splitlines()
            print("venv: " + (lines[-1] if lines else "failed"), file=sys.stderr)
            sys.exit(4)
print(venv)
)PY";

std::string DefaultCacheDir() {
  if (const char* dir = std::getenv("DFW_PYTHON_VENV_CACHE"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/dfworker/venvs";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : "/tmp") + "/.cache/dfworker/venvs";
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<std::string> InstallDependencies(const std::vector<std::string>& packages, const DependencyOptions& options) {
  if (packages.empty()) return InvalidArgument("dependencies: an empty list");
  for (const std::string& p : packages) {
    if (p.empty() || p[0] == '-' || p.find_first_of("\n\r") != std::string::npos) {
      return InvalidArgument("dependencies: '" + p + "' is not a package requirement (such as 'pyyaml==6.0')");
    }
  }
  ASSIGN_OR_RETURN(std::string base, ResolveEnvironment(options.base_environment));
  if (base.empty()) base = "/usr/bin/python3.11";
  const std::string cache = options.cache_dir.empty() ? DefaultCacheDir() : options.cache_dir;

  char pattern[] = "/tmp/dfw-pip-XXXXXX";
  const int out_fd = ::mkstemp(pattern);
  if (out_fd < 0) return Internal("dependencies: cannot create a temporary file in /tmp");
  const std::string out_path = pattern;
  std::string err_path = out_path + ".err";
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  SpawnSpec spec;
  spec.argv = {base, "-I", "-c", kInstaller, cache, base, std::to_string(packages.size())};
  spec.argv.insert(spec.argv.end(), packages.begin(), packages.end());
  spec.argv.insert(spec.argv.end(), options.pip_args.begin(), options.pip_args.end());
  spec.env = ChildEnvironment({});
  spec.fds = {{-1, STDIN_FILENO}, {out_fd, STDOUT_FILENO}, {err_fd, STDERR_FILENO}};
  spec.exec_error = "exec failed\n";
  Result<pid_t> pid = Spawn(spec);
  ::close(out_fd);
  if (err_fd >= 0) ::close(err_fd);
  ChildExit exit;
  if (pid.ok()) {
    Reaped reaped = ReapWithin(*pid, std::chrono::milliseconds(options.timeout_ms));
    exit = reaped.running ? StopChild(*pid, std::chrono::seconds(5)) : reaped.exit;
  }
  Result<std::string> out = ReadWholeFile(out_path, 1 << 20);
  Result<std::string> err = ReadWholeFile(err_path, 1 << 20);
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  if (!pid.ok()) return pid.status();

  std::string list;
  for (const std::string& p : packages) list += (list.empty() ? "" : " ") + p;
  const std::string how = "install them yourself: " + base + " -m venv --system-site-packages DIR && DIR/bin/pip install " +
                          list + ", then run with --python_env=DIR";
  if (exit.success() && out.ok() && !Trim(*out).empty()) {
    std::string venv = Trim(*out);
    if (const std::size_t nl = venv.rfind('\n'); nl != std::string::npos) venv = venv.substr(nl + 1);
    return venv;
  }
  std::string missing, detail;
  if (err.ok()) {
    std::size_t at = 0;
    while (at < err->size()) {
      std::size_t end = err->find('\n', at);
      if (end == std::string::npos) end = err->size();
      const std::string line = err->substr(at, end - at);
      if (line.rfind("missing: ", 0) == 0) {
        missing += (missing.empty() ? "" : ", ") + line.substr(9);
      } else if (!line.empty()) {
        detail = line;
      }
      at = end + 1;
    }
  }
  if (!exit.exited) detail = "the installer " + exit.Describe() + " (time limit " + std::to_string(options.timeout_ms / 1000) + " s)";
  return Unavailable("dependencies: could not install " + (missing.empty() ? list : "these packages: " + missing) +
                     " into a venv under " + cache + (detail.empty() ? "" : " (" + detail + ")") + "; " + how);
}

}  // namespace dfw::python
