#include "dfw/common/process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <thread>

#include "dfw/common/strings.h"

namespace dfw {
namespace {

// Child fds are first moved above every number the mapping uses, so that no dup2 onto a target
// clobbers a source still to be copied.
constexpr int kScratchFdBase = 256;

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void WriteAll(int fd, const std::string& text) {
  std::size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

// In the child, between fork and exec: async-signal-safe calls only.
// `scratch` has room for one fd per mapping (allocated before fork).
[[noreturn]] void RunChild(const SpawnSpec& spec, pid_t parent, const std::vector<char*>& argv,
                           const std::vector<char*>& envp, int devnull, int* scratch) {
  // The death signal first thing after fork: the window in which the parent's death goes unseen
  // ends here. (It follows the parent *thread* that forked; process.h says which thread may.)
  if (spec.death_signal != 0) {
    ::prctl(PR_SET_PDEATHSIG, spec.death_signal);  // kept across exec
    if (::getppid() != parent) ::_exit(127);       // the parent died before prctl took effect
  }
  if (spec.new_session) ::setsid();
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &sa, nullptr);  // fails harmlessly for RT gaps
  }
  if (spec.ignore_sigint) {
    sa.sa_handler = SIG_IGN;
    ::sigaction(SIGINT, &sa, nullptr);
  }
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : spec.blocked_signals) sigaddset(&mask, sig);
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  // Sources to scratch numbers (close-on-exec), then each onto its target (dup2 clears it).
  for (std::size_t i = 0; i < spec.fds.size(); ++i) {
    int src = spec.fds[i].first >= 0 ? spec.fds[i].first : devnull;
    scratch[i] = src < 0 ? -1 : ::fcntl(src, F_DUPFD_CLOEXEC, kScratchFdBase);
    if (scratch[i] < 0) ::_exit(127);
  }
  for (std::size_t i = 0; i < spec.fds.size(); ++i) {
    if (::dup2(scratch[i], spec.fds[i].second) != spec.fds[i].second) ::_exit(127);
  }
  if (spec.child_main) ::_exit(spec.child_main());
  ::execve(argv[0], argv.data(), envp.data());
  if (!spec.exec_error.empty() && spec.exec_error_fd >= 0) WriteAll(spec.exec_error_fd, spec.exec_error);
  ::_exit(127);
}

}  // namespace

Result<pid_t> Spawn(const SpawnSpec& spec) {
  if (spec.argv.empty() && !spec.child_main) return InvalidArgument("spawn: empty argv");
  const std::string what = spec.argv.empty() ? std::string("a child process") : "'" + spec.argv[0] + "'";
  for (const auto& [from, to] : spec.fds) {
    if (to < 0 || to >= kScratchFdBase) return InvalidArgument("spawn " + what + ": child fd " + std::to_string(to) + " is out of range");
  }
  // Everything the child needs, built before fork.
  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env);
  int devnull = -1;
  for (const auto& [from, to] : spec.fds) {
    if (from < 0 && devnull < 0) {
      devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      if (devnull < 0) return ErrnoError("spawn " + what + ": open /dev/null", errno);
    }
  }
  std::vector<int> scratch(spec.fds.size());
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    if (devnull >= 0) ::close(devnull);
    return ErrnoError("fork for " + what, err);
  }
  if (pid == 0) RunChild(spec, parent, argv, envp, devnull, scratch.data());
  if (devnull >= 0) ::close(devnull);
  return pid;
}

namespace {

// The child's first line on `fd`, up to the deadline ("" when it closes the fd first).
std::string ReadFirstLine(int fd, std::chrono::milliseconds timeout) {
  std::string answer;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[1024];
  while (answer.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child exited (or closed the fd) without a line
    answer.append(buf, static_cast<std::size_t>(n));
  }
  return std::string(Trim(answer.substr(0, answer.find('\n'))));
}

}  // namespace

Result<ReadyChild> SpawnAndAwaitReady(SpawnSpec spec, int ready_fd, std::chrono::milliseconds timeout) {
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
  spec.fds.push_back({ready[1], ready_fd});
  spec.exec_error_fd = ready_fd;
  Result<pid_t> pid = Spawn(spec);
  // Only the child holds the write end from here on: its exit is an end of file.
  ::close(ready[1]);
  if (!pid.ok()) {
    ::close(ready[0]);
    return pid.status();
  }
  ReadyChild child;
  child.pid = *pid;
  child.line = ReadFirstLine(ready[0], timeout);
  ::close(ready[0]);
  return child;
}

Reaped TryReap(pid_t pid) {
  Reaped r;
  int status = 0;
  struct rusage usage {};
  pid_t got;
  do {
    got = ::wait4(pid, &status, WNOHANG, &usage);
  } while (got < 0 && errno == EINTR);
  if (got == 0) {
    r.running = true;
  } else if (got == pid) {
    r.exit = DecodeWaitStatus(status);
    r.max_rss_kib = static_cast<int64_t>(usage.ru_maxrss);
  } else {
    r.unknown = true;
  }
  return r;
}

Reaped ReapWithin(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    Reaped r = TryReap(pid);
    if (!r.running || std::chrono::steady_clock::now() >= deadline) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

ChildExit StopChild(pid_t pid, std::chrono::milliseconds grace) {
  Reaped r = TryReap(pid);
  if (r.running) {
    ::kill(pid, SIGTERM);
    r = ReapWithin(pid, grace);
  }
  if (r.running) {
    ::kill(pid, SIGKILL);
    r = ReapWithin(pid, std::chrono::milliseconds(10000));
  }
  return r.exit;
}

std::string SelfExecutable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  // Unreadable link (no /proc): the magic path still execs this very binary.
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "/proc/self/exe";
}

}  // namespace dfw
