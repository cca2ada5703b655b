// The emulated MPS control daemon: one poll() loop, no threads (it may run in a forked child).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <sstream>

#include "dfw/common/strings.h"
#include "dfw/common/unix_socket.h"
#include "dfw/device/mps_controller.h"
#include "control_socket.h"
#include "process_info.h"

namespace dfw::device {
namespace {

struct Client {
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string name;
  double threads = 100;
  std::optional<uint64_t> pinned;
  int priority = 0;  // CUDA_MPS_CLIENT_PRIORITY
};

struct Connection {
  std::string buffer;
  std::optional<Client> client;  // set once the connection registered
  bool watcher = false;          // `watch`: told "fault" when the server faults
};

std::string PinnedText(const std::optional<uint64_t>& p) { return p ? std::to_string(*p) : "-"; }

std::string PercentText(double p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

class Daemon {
 public:
  explicit Daemon(const MpsDaemonOptions& o) : options_(o), pid_(::getpid()) {
    threads_default_ = o.default_active_thread_percentage.value_or(100.0);
    pinned_default_ = o.default_pinned_mem_limit_bytes;
  }
  ~Daemon() {
    for (auto& [fd, c] : conns_) ::close(fd);
    if (signal_fd_ >= 0) ::close(signal_fd_);
    if (log_fd_ >= 0) ::close(log_fd_);
  }

  Status Setup() {
    RETURN_IF_ERROR(PrepareMpsDirs(options_.dirs));
    std::string log_path = options_.dirs.log_dir + "/control.log";
    log_fd_ = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd_ < 0) return ErrnoError("open '" + log_path + "'", errno);
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) return ErrnoError("signalfd", errno);

    socket_path_ = ControlSocketPath(options_.dirs.pipe_dir);
    pid_path_ = options_.dirs.pipe_dir + "/dfw-mps-daemon.pid";
    struct stat st;
    if (::lstat(socket_path_.c_str(), &st) == 0) {
      if (ConnectUnix(socket_path_, kMpsDaemonPeer).ok()) {
        return FailedPrecondition("an MPS daemon already answers on '" + socket_path_ +
                                  "'; stop it (dfworker mps quit) or use another job dir");
      }
      ::unlink(socket_path_.c_str());
      Log("Removed stale control socket left by a killed run");
    }
    ASSIGN_OR_RETURN(listen_fd_, ListenUnix(socket_path_, SocketBlocking::kBlocking, "the MPS control socket"));
    // Private whatever the umask (its folder is 0700 already): only this user's processes talk to it.
    if (::chmod(socket_path_.c_str(), 0600) != 0) return ErrnoError("chmod 0600 '" + socket_path_ + "'", errno);
    std::string pid_text = std::to_string(pid_) + "\n";
    int pf = ::open(pid_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (pf < 0 || ::write(pf, pid_text.data(), pid_text.size()) != static_cast<ssize_t>(pid_text.size())) {
      int err = errno;
      if (pf >= 0) ::close(pf);
      return ErrnoError("write '" + pid_path_ + "'", err);
    }
    ::close(pf);
    Log("Starting emulated MPS control daemon (max " + std::to_string(options_.max_clients_per_device) +
        " clients per device, default thread percentage " + PercentText(threads_default_) +
        ", default pinned limit " + (pinned_default_ ? HumanBytes(*pinned_default_) : std::string("none")) + ")");
    return Status::OK();
  }

  int Run() {
    while (!stop_) {
      std::vector<pollfd> fds = {{listen_fd_.get(), POLLIN, 0}, {signal_fd_, POLLIN, 0}};
      for (auto& [fd, c] : conns_) fds.push_back({fd, POLLIN, 0});
      int r = ::poll(fds.data(), fds.size(), 250);
      if (r < 0 && errno != EINTR) {
        Log(std::string("poll failed: ") + std::strerror(errno));
        break;
      }
      if (r > 0) {
        if (fds[1].revents != 0) OnSignal();
        if (fds[0].revents & POLLIN) Accept();
        for (std::size_t i = 2; i < fds.size(); ++i) {
          if (fds[i].revents != 0) OnReadable(fds[i].fd);
        }
      }
      SweepDeadClients();
    }
    Shutdown();
    return 0;
  }

  void Log(const std::string& msg) {
    if (log_fd_ < 0) return;
    auto now = std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char stamp[64];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
    char head[128];
    std::snprintf(head, sizeof head, "[%s.%03d Control %d] ", stamp, static_cast<int>(ms), static_cast<int>(pid_));
    std::string line = head + msg + "\n";
    if (::write(log_fd_, line.data(), line.size()) < 0) {
      // Nothing sensible to do: the log is best effort.
    }
  }

 private:
  void OnSignal() {
    signalfd_siginfo info;
    while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      Log("Received signal " + std::to_string(info.ssi_signo) + (info.ssi_signo == SIGTERM ? " (parent exited or stop requested)" : "") +
          "; shutting down");
      stop_ = true;
    }
  }

  void Accept() {
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) conns_[fd] = Connection{};
  }

  void Drop(int fd, const char* why) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    if (it->second.client) Log("Client " + std::to_string(it->second.client->pid) + " (" + it->second.client->name + ") " + why);
    ::close(fd);
    conns_.erase(it);
    if (faulted_ && RegisteredCount() == 0) {
      // As on Volta+: once every client of the faulted server has exited, it is usable again.
      faulted_ = false;
      Log("Server recovered from the fatal GPU error: every client has exited; accepting clients again");
    }
  }

  // A fatal GPU fault (injected: there is no GPU): every client is told through the watchers (the
  // launcher drains them, as MPS clients must exit), and no client is accepted until all have gone.
  void Fault() {
    Log("Volta MPS: Server is handling a fatal GPU error.");
    faulted_ = RegisteredCount() > 0;
    std::vector<int> watchers;
    for (auto& [fd, c] : conns_) {
      if (c.watcher) watchers.push_back(fd);
    }
    for (int fd : watchers) {
      if (!SendAll(fd, "fault\n").ok()) Drop(fd, "vanished");
    }
  }

  void OnReadable(int fd) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) {
      Drop(fd, "disconnected");
      return;
    }
    it->second.buffer.append(buf, static_cast<std::size_t>(n));
    if (it->second.buffer.size() > 64 * 1024) {
      Drop(fd, "sent an oversized request");
      return;
    }
    std::size_t nl;
    while (!stop_ && conns_.count(fd) != 0 && (nl = conns_[fd].buffer.find('\n')) != std::string::npos) {
      std::string line = conns_[fd].buffer.substr(0, nl);
      conns_[fd].buffer.erase(0, nl + 1);
      std::string reply = Handle(fd, std::string(Trim(line)));
      if (!SendAll(fd, reply).ok()) Drop(fd, "vanished");
    }
  }

  int RegisteredCount() const {
    int n = 0;
    for (const auto& [fd, c] : conns_) n += c.client ? 1 : 0;
    return n;
  }

  std::string Handle(int fd, const std::string& line) {
    std::vector<std::string> words;
    for (const std::string& w : Split(line, ' ')) {
      if (!w.empty()) words.push_back(w);
    }
    if (words.empty()) return "error empty command\n";
    const std::string& cmd = words[0];
    if (cmd != "ping" && cmd != "ps") Log("User command: " + line);
    if (cmd == "ping") {
      return "ok pid=" + std::to_string(pid_) + " clients=" + std::to_string(RegisteredCount()) +
             " state=" + (faulted_ ? "FAULT" : "ACTIVE") + "\n";
    }
    if (cmd == "watch") {
      conns_[fd].watcher = true;
      return "ok\n";
    }
    if (cmd == "inject_fault") {
      Fault();
      return "ok\n";
    }
    if (cmd == "ps") {
      std::string out;
      for (const auto& [cfd, c] : conns_) {
        if (!c.client) continue;
        out += "client pid=" + std::to_string(c.client->pid) + " name=" + c.client->name +
               " threads=" + PercentText(c.client->threads) + " pinned=" + PinnedText(c.client->pinned) +
               " priority=" + std::to_string(c.client->priority) + "\n";
      }
      return out + "ok clients=" + std::to_string(RegisteredCount()) + "\n";
    }
    if (cmd == "register") return Register(fd, words);
    if (cmd == "unregister") {
      Connection& c = conns_[fd];
      if (c.client) Log("Client " + std::to_string(c.client->pid) + " (" + c.client->name + ") unregistered");
      c.client.reset();
      return "ok\n";
    }
    if (cmd == "set_default_active_thread_percentage" && words.size() == 2) {
      Result<double> p = ParseThreadPercentage(words[1]);
      if (!p.ok()) return "error " + p.status().message() + "\n";
      threads_default_ = *p;
      return "ok\n";
    }
    if (cmd == "get_default_active_thread_percentage") return "ok " + PercentText(threads_default_) + "\n";
    if (cmd == "set_default_device_pinned_mem_limit" && words.size() == 3) {
      if (words[1] != "0") return "error the emulated device is ordinal 0, got '" + words[1] + "'\n";
      Result<uint64_t> size = ParseMpsSize(words[2]);
      if (!size.ok()) return "error " + size.status().message() + "\n";
      pinned_default_ = *size;
      return "ok\n";
    }
    if (cmd == "quit") {
      stop_ = true;
      return "ok\n";
    }
    return "error unknown command '" + cmd +
           "'; known: ping, ps, register, unregister, watch, inject_fault, quit, set_default_active_thread_percentage <p>, "
           "get_default_active_thread_percentage, set_default_device_pinned_mem_limit 0 <size>\n";
  }

  std::string Register(int fd, const std::vector<std::string>& words) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return "error cannot read the client's pid\n";
    Connection& conn = conns_[fd];
    if (conn.client) return "error this connection is already registered as client " + std::to_string(conn.client->pid) + "\n";
    if (faulted_) {
      Log("Refused client " + std::to_string(cred.pid) + ": the server is handling a fatal GPU error");
      return "error mps-server-not-ready: the server is in FAULT until every client has exited; client pid " +
             std::to_string(cred.pid) + " refused\n";
    }
    if (RegisteredCount() >= options_.max_clients_per_device) {
      Log("Refused client " + std::to_string(cred.pid) + ": device 0 already has " +
          std::to_string(options_.max_clients_per_device) + " clients");
      return "error mps-client-limit: device 0 already has " + std::to_string(options_.max_clients_per_device) +
             " MPS clients, the most it takes; client pid " + std::to_string(cred.pid) + " refused\n";
    }
    Client c;
    c.pid = cred.pid;
    c.start_time = ProcessStartTime(cred.pid).value_or(0);
    c.name = "client";
    c.threads = threads_default_;
    c.pinned = pinned_default_;
    for (std::size_t i = 1; i < words.size(); ++i) {
      std::string_view w = words[i];
      std::size_t eq = w.find('=');
      std::string_view key = w.substr(0, eq), value = eq == std::string_view::npos ? "" : w.substr(eq + 1);
      if (key == "name" && !value.empty()) {
        c.name = std::string(value);
      } else if (key == "threads" && value != "-") {
        Result<double> p = ParseThreadPercentage(value);
        if (!p.ok()) return "error " + p.status().message() + "\n";
        c.threads = std::min(c.threads, *p);  // a client may only lower the default
      } else if (key == "pinned" && value != "-") {
        Result<uint64_t> b = ParseMpsSize(value);
        if (!b.ok()) return "error " + b.status().message() + "\n";
        c.pinned = c.pinned ? std::min(*c.pinned, *b) : *b;
      } else if (key == "priority") {
        Result<int> q = ParseClientPriority(value);
        if (!q.ok()) return "error " + q.status().message() + "\n";
        c.priority = *q;
      } else if (key != "threads" && key != "pinned") {
        return "error unknown register field '" + std::string(w) + "'; expected name=, threads=, pinned=, priority=\n";
      }
    }
    conn.client = c;
    Log("NEW CLIENT " + std::to_string(c.pid) + " (" + c.name + "): threads " + PercentText(c.threads) +
        "%, pinned " + (c.pinned ? HumanBytes(*c.pinned) : std::string("unlimited")) + ", priority " +
        std::to_string(c.priority));
    return "ok threads=" + PercentText(c.threads) + " pinned=" + PinnedText(c.pinned) + "\n";
  }

  void SweepDeadClients() {
    std::vector<int> dead;
    for (auto& [fd, c] : conns_) {
      if (c.client && !ProcessAlive(c.client->pid, c.client->start_time)) dead.push_back(fd);
    }
    for (int fd : dead) Drop(fd, "died");
  }

  void Shutdown() {
    for (auto& [fd, c] : conns_) {
      if (c.client) Log("Dropping client " + std::to_string(c.client->pid) + " (" + c.client->name + ") at shutdown");
    }
    ::unlink(socket_path_.c_str());
    ::unlink(pid_path_.c_str());
    Log("Exit");
  }

  MpsDaemonOptions options_;
  pid_t pid_;
  double threads_default_ = 100;
  std::optional<uint64_t> pinned_default_;
  OwnedFd listen_fd_;
  int signal_fd_ = -1, log_fd_ = -1;
  std::string socket_path_, pid_path_;
  std::map<int, Connection> conns_;
  bool stop_ = false;
  bool faulted_ = false;  // FAULT: registrations refused until every client has exited
};

void Tell(int fd, const std::string& text) {
  if (fd >= 0 && ::write(fd, text.data(), text.size()) < 0) {
    // The parent went away; it will see the daemon's exit instead.
  }
}

}  // namespace

int RunEmulatedMpsDaemon(const MpsDaemonOptions& options, int ready_fd) {
  Daemon daemon(options);
  Status s = daemon.Setup();
  if (!s.ok()) {
    daemon.Log("Failed to start: " + s.ToString());
    Tell(ready_fd, "error: " + s.ToString() + "\n");
    return 1;
  }
  Tell(ready_fd, "ready\n");
  if (ready_fd >= 0) ::close(ready_fd);
  return daemon.Run();
}

}  // namespace dfw::device
