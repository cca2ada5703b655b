#include "launcher/model_hosts.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "dfw/common/child_env.h"
#include "dfw/common/logging.h"
#include "dfw/common/process.h"
#include "dfw/common/strings.h"


namespace dfw {
namespace {

constexpr int kReadyFd = 3;

}  // namespace

ModelHostGroup::ModelHostGroup(ModelHostGroupOptions options)
    : options_(std::move(options)),
      owned_launcher_(options_.process_launcher ? nullptr : MakePosixProcessLauncher()),
      launcher_(options_.process_launcher ? *options_.process_launcher : *owned_launcher_) {}

Result<std::unique_ptr<ModelHostGroup>> ModelHostGroup::Start(const ModelHostGroupOptions& options,
                                                              const std::vector<ModelHostSpec>& hosts) {
  std::unique_ptr<ModelHostGroup> group(new ModelHostGroup(options));
  for (const ModelHostSpec& spec : hosts) {
    Result<pid_t> pid = group->Spawn(spec);
    if (!pid.ok()) {
      (void)group->Stop();
      return pid.status();
    }
    std::lock_guard<std::mutex> lock(group->mu_);
    group->hosts_.push_back(Host{spec, *pid, 0});
  }
  if (options.max_restarts > 0) group->watchdog_ = std::thread([g = group.get()] { g->Watch(); });
  return group;
}

void ModelHostGroup::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(options_.watch_interval_ms), [this] { return stopping_; });
    if (stopping_) break;
    CollectExits();
    for (std::size_t i = 0; i < hosts_.size() && !stopping_; ++i) {
      Host& h = hosts_[i];
      if (h.pid != 0) {
        std::optional<ChildExit> exit = TakeExit(h.pid);
        if (!exit) continue;
        const std::string death = "model host '" + h.spec.name + "' (pid " + std::to_string(h.pid) + ") " +
                                  exit->Describe() + " during the run";
        h.pid = 0;
        if (h.restarts >= options_.max_restarts) {
          deaths_.push_back(death + " (not restarted: " + std::to_string(h.restarts) + " restarts already)");
          ReportLine("{}; not restarting it again ({} restarts already): SDK processes use the other copies", death,
                     h.restarts);
          continue;
        }
        deaths_.push_back(death);
        ReportLine("{}; restarting it (restart {} of at most {})", death, h.restarts + 1, options_.max_restarts);
      } else if (h.restarts >= options_.max_restarts) {
        continue;  // given up (pid 0 below the limit: the last restart failed, try again)
      }
      ++h.restarts;
      const ModelHostSpec spec = h.spec;
      lock.unlock();  // publishing takes a while; Stop() waits for this round
      Result<pid_t> pid = Spawn(spec);
      lock.lock();
      Host& again = hosts_[i];
      if (pid.ok()) {
        again.pid = *pid;
        ReportLine("model host '{}' restarted (pid {})", spec.name, static_cast<int>(*pid));
      } else {
        ReportLine("model host '{}' could not be restarted: {}", spec.name, pid.status().message());
      }
    }
  }
}

void ModelHostGroup::CollectExits() {
  // Every child of the launcher is a host of this group: an exit is kept until its host is looked
  // at (a round cut short by Stop() leaves some for Stop() to report).
  for (const ProcessExit& e : launcher_.ReapExited()) exits_.push_back(e);
}

std::optional<ChildExit> ModelHostGroup::TakeExit(pid_t pid) {
  auto e = std::find_if(exits_.begin(), exits_.end(), [&](const ProcessExit& x) { return x.pid == pid; });
  if (e == exits_.end()) return std::nullopt;
  const ChildExit exit = e->exit;
  exits_.erase(e);
  return exit;
}

Result<pid_t> ModelHostGroup::Spawn(const ModelHostSpec& spec) {
  const ModelHostGroupOptions& o = options_;
  ProcessSpec child;
  child.argv = {o.self_exe,  "model_host", "--weights", spec.weights_path,
                "--models_dir", o.models_dir, "--copy", std::to_string(spec.copy),
                "--name",     spec.name,    "--ready_fd", std::to_string(kReadyFd),
                "--device",   spec.device};
  child.env = o.extra_env;
  child.env_defaults = o.default_env;
  child.log_path = o.log_dir + "/" + spec.name + ".log";
  child.log_stdout = false;
  // The stop signals are blocked at exec so that every thread of the host has them blocked —
  // threads started while the binary loads (OpenBLAS's pool) included — and the host's sigwait
  // sees them; blocked only in its main thread, a SIGTERM would kill it before it cleans up.
  // SIGINT (a terminal's Ctrl-C reaches the whole group) is ignored: the launcher stops the hosts.
  child.blocked_signals = {SIGTERM, SIGHUP};
  child.ignore_sigint = true;
  child.death_signal = SIGTERM;  // the host stops (and cleans up) if the launcher dies
  child.exec_error = "error: cannot exec '" + o.self_exe + " model_host'\n";
  Result<ReadyChild> started = launcher_.StartAndAwaitReady(child, kReadyFd, std::chrono::milliseconds(o.timeout_ms));
  if (!started.ok()) return started.status().WithContext("start a model host");
  const pid_t pid = started->pid;
  const std::string& line = started->line;
  if (line.rfind("ready", 0) == 0) return pid;
  launcher_.Signal(pid, SIGKILL);
  (void)launcher_.WaitExit(pid, std::chrono::milliseconds(5000));
  const std::string where = "; see " + child.log_path;
  if (line.rfind("error: ", 0) == 0) {
    // The host's own Status message, e.g. the ledger's out-of-GPU-memory refusal.
    const std::string why = "model host '" + spec.name + "' did not start: " + line.substr(7) + where;
    return line.find("out of GPU memory") != std::string::npos ? ResourceExhausted(why) : Unavailable(why);
  }
  return Unavailable("model host '" + spec.name + "' did not become ready within " + std::to_string(o.timeout_ms) +
                     " ms" + where);
}

Status ModelHostGroup::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  // Only this thread touches the hosts from here on.
  std::vector<std::string> lost;
  lost.swap(deaths_);
  CollectExits();
  for (Host& h : hosts_) {
    if (h.pid == 0) continue;
    // A host stopped by us exits 0; any other end means it died on its own (its copy was lost).
    const std::optional<ChildExit> ended = TakeExit(h.pid);
    const bool died = ended.has_value();
    const ChildExit exit = died ? *ended : StopProcess(launcher_, h.pid, std::chrono::milliseconds(5000));
    if (!exit.success()) {
      lost.push_back("model host '" + h.spec.name + "' (pid " + std::to_string(h.pid) + ") " + exit.Describe() +
                     (died ? " during the run" : " when stopped"));
    }
    h.pid = 0;
  }
  if (!lost.empty()) return Unavailable(Join(lost, "; "));
  return Status::OK();
}

std::vector<pid_t> ModelHostGroup::pids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> out;
  for (const Host& h : hosts_) out.push_back(h.pid);
  return out;
}

int ModelHostGroup::restarts() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const Host& h : hosts_) n += h.restarts;
  return n;
}

ModelHostGroup::~ModelHostGroup() { (void)Stop(); }

}  // namespace dfw
