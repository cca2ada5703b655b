#include "subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "dfw/common/strings.h"


namespace dfw::device {
namespace {

// An unlinked read/write temporary file.
int AnonymousFile() {
  int fd = ::open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  char tmpl[] = "/tmp/dfw_cmd_XXXXXX";
  fd = ::mkostemp(tmpl, O_CLOEXEC);
  if (fd >= 0) ::unlink(tmpl);
  return fd;
}

}  // namespace

std::string FindExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  for (const std::string& dir : Split(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Result<CommandResult> RunCommand(ProcessLauncher& launcher, const std::vector<std::string>& argv,
                                 const EnvOverrides& env, const std::string& stdin_text, int timeout_ms) {
  if (argv.empty()) return InvalidArgument("RunCommand: empty command");
  std::string program = FindExecutable(argv[0]);
  if (program.empty()) return NotFound(fmt::format("program '{}' not found on PATH", argv[0]));
  int in = AnonymousFile();
  int out = AnonymousFile();
  if (in < 0 || out < 0) {
    int err = errno;
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    return ErrnoError(fmt::format("create temporary file for '{}'", argv[0]), err);
  }
  if (::write(in, stdin_text.data(), stdin_text.size()) != static_cast<ssize_t>(stdin_text.size()) ||
      ::lseek(in, 0, SEEK_SET) != 0) {
    int err = errno;
    ::close(in);
    ::close(out);
    return ErrnoError(fmt::format("write stdin of '{}'", argv[0]), err);
  }
  ProcessSpec child;
  child.argv = argv;
  child.argv[0] = program;
  for (const auto& [k, v] : env) child.env.push_back(k + "=" + v);
  child.fds = {{in, STDIN_FILENO}, {out, STDOUT_FILENO}, {out, STDERR_FILENO}};
  // A short command, not a member of the job: it keeps the default dispositions, and `-d`'s
  // daemon must outlive this process.
  child.death_signal = 0;
  child.ignore_sigint = false;
  Result<pid_t> pid = launcher.Start(child);
  ::close(in);
  if (!pid.ok()) {
    ::close(out);
    return pid.status();
  }
  Reaped reaped = launcher.WaitExit(*pid, std::chrono::milliseconds(timeout_ms));
  if (reaped.running) {
    launcher.Signal(*pid, SIGKILL);
    (void)launcher.WaitExit(*pid, std::chrono::milliseconds(10000));
    ::close(out);
    return Unavailable(fmt::format("'{}' did not finish within {} ms (killed)", Join(argv, " "), timeout_ms));
  }
  CommandResult result;
  result.exit_code = reaped.exit.exited ? reaped.exit.exit_code : 128 + reaped.exit.signal;
  char buf[4096];
  ssize_t n;
  off_t off = 0;
  while ((n = ::pread(out, buf, sizeof buf, off)) > 0 && result.output.size() < (1 << 20)) {
    result.output.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
  ::close(out);
  return result;
}

}  // namespace dfw::device
