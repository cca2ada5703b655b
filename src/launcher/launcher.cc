#include "dfw/launcher/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "dfw/common/logging.h"
#include "dfw/common/strings.h"
#include "dfw/common/test_hooks.h"
#include "dfw/common/unix_socket.h"
#include "dfw/job/line_channel.h"
#include "dfw/job/manifest.h"
#include "dfw/job/protocol.h"
#include "dfw/job/work_range.h"
#include "dfw/metrics/job_metrics.h"
#include "dfw/launcher/metrics_report.h"
#include "dfw/launcher/progress.h"
#include "dfw/launcher/signal_watcher.h"
#include "dfw/common/step_board.h"
#include "dfw/launcher/supervisor.h"
#include "dfw/common/stop_request.h"

namespace dfw {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// When this process began running code (static initialisation, before main): start-up is reported
// from here. Only the exec and dynamic linking of the launcher itself come before it.
const Clock::time_point kProcessStart = Clock::now();

double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Client {
  std::unique_ptr<LineChannel> channel;
  int64_t pid = 0;  // from hello; 0 until then
  int index = -1;
  bool waiting = false;  // a lease request is parked
};

// The coordinator server plus supervision: one single-threaded poll loop owns all state, so the
// coordinator needs no locks and every decision happens in one order.
class JobServer {
 public:
  JobServer(const LauncherOptions& opts, JobDir dir, Manifest manifest, Coordinator coord, ProcessLauncher& pl,
            OwnedFd listen_fd)
      : opts_(opts),
        dir_(std::move(dir)),
        manifest_(std::move(manifest)),
        coord_(std::move(coord)),
        pl_(pl),
        sup_(pl, opts.processes, [this](int i) { return SpecFor(i); }, opts.memory_cgroup),
        listen_fd_(std::move(listen_fd)),
        progress_(stderr, ::isatty(STDERR_FILENO) != 0, opts.progress_interval),
        report_(opts.processes),
        committed_at_start_(coord_.committed_count()) {
    for (const SplitRecord& split : manifest_.splits()) residuals_.insert(split.residual);
    for (const auto& [bundle, json] : manifest_.metrics()) {
      if (json.empty()) continue;
      if (auto m = MetricsSnapshot::FromJson(json); m.ok()) report_.AddEarlierBundle(*m);
    }
    records_at_start_ = report_.total().CounterOr(kRecordsNamespace, kRecordsCounter);
  }

  LaunchResult Run(SignalWatcher& signals);

 private:
  ProcessSpec SpecFor(int index) const;
  void OnSignal(int sig, Clock::time_point now);
  void ReapChildren();
  void AcceptClients();
  void ReadClients(const std::vector<pollfd>& fds, Clock::time_point now);
  void HandleLine(Client& c, const std::string& line, Clock::time_point now);
  void HandleCommit(Client& c, const Message& m);
  void HandleSplit(Client& c, const Message& m);
  void ServeWaiting(Clock::time_point now);
  void RequestSplits(Clock::time_point now);
  void Send(Client& c, const Message& m) { (void)c.channel->WriteLine(EncodeMessage(m)); }
  bool Done(Clock::time_point now) const;
  void StopChildren();
  void StopUnconnected();
  // Growing while it runs (LauncherOptions::processes_control_dir).
  void ReadProcessesWanted(Clock::time_point now);
  void WriteProcessesNow();
  ProgressState Progress(Clock::time_point now) const;
  double Elapsed(Clock::time_point now) const { return std::chrono::duration<double>(now - start_).count(); }

  const LauncherOptions& opts_;
  JobDir dir_;
  Manifest manifest_;
  Coordinator coord_;
  ProcessLauncher& pl_;
  Supervisor sup_;
  OwnedFd listen_fd_;
  std::map<int, Client> clients_;  // by socket fd
  ProgressReporter progress_;
  MetricsReport report_;
  std::size_t committed_at_start_;
  int64_t records_at_start_ = 0;  // records of bundles committed before this run (--resume)
  Clock::time_point start_ = Clock::now();
  Clock::time_point spawned_{};  // when StartAll returned
  Clock::time_point stop_deadline_{};
  int stop_signal_ = 0;  // the first SIGINT/SIGTERM
  bool hard_stop_ = false;
  int deaths_since_commit_ = 0;
  bool first_commit_logged_ = false;
  std::string last_death_;
  std::set<std::string> residuals_;  // bundles made by splits (granting one counts as taking a split)
  int64_t bad_progress_ = 0;         // heartbeat progress reports the coordinator rejected
  int commits_this_run_ = 0;
  std::map<int64_t, Clock::time_point> granted_;  // live leases: when each was granted (timeline)
  std::vector<std::pair<int, double>> added_;     // slots added while running: (index, seconds into the run)
  bool bad_want_said_ = false;
  int growing_to_ = 0;  // the SDK processes after the last grow (0 = never grown)
};

ProcessSpec JobServer::SpecFor(int index) const {
  ProcessSpec spec;
  spec.argv = opts_.sdk_command;
  spec.argv.insert(spec.argv.end(), {"--job_dir", dir_.root(), "--index", std::to_string(index), "--threads",
                                     std::to_string(opts_.threads), "--coordinator_socket", opts_.coordinator_socket});
  // Grown past the planned count (a tenant borrowing slots): processes started from now on size
  // their BLAS threads for the machine as it is shared now, not as job.json planned it.
  if (growing_to_ > opts_.processes) spec.argv.insert(spec.argv.end(), {"--sdk_processes", std::to_string(growing_to_)});
  spec.env = opts_.sdk_env;
  spec.env_defaults = opts_.sdk_env_defaults;
  spec.log_path = dir_.ProcessLogPath(index);
  spec.exec_error = "dfworker: exec of the SDK harness failed\n";
  return spec;
}

void JobServer::OnSignal(int sig, Clock::time_point now) {
  if (sig == SIGCHLD) return;  // children are reaped every iteration
  if (sig == SIGUSR1) {        // a request to grow (processes.want)
    ReadProcessesWanted(now);
    return;
  }
  if (stop_signal_ != 0) {
    hard_stop_ = true;
    return;
  }
  stop_signal_ = sig;
  stop_deadline_ = now + opts_.grace;
  coord_.StopLeasing();
  // Loops that can outlast the grace period (text generation's decode steps) end between two
  // steps on this; everything else finishes its bundle within the grace as before.
  sup_.SignalAll(kStopBetweenStepsSignal);
  // The newline first ends the "^C" the terminal echoed, in the same write as the line.
  WriteStderr("\n" + FormatReportLine("{}: no new bundles; waiting up to {} ms for {} in-flight bundle(s); "
                                      "send it again to stop at once",
                                      sig == SIGINT ? "SIGINT" : "SIGTERM", opts_.grace.count(), coord_.live_leases()));
}

void JobServer::ReapChildren() {
  for (const ProcessExit& e : pl_.ReapExited()) {
    auto index = sup_.OnExit(e);
    if (!index) continue;
    for (auto it = clients_.begin(); it != clients_.end();) {
      it = it->second.pid == e.pid ? clients_.erase(it) : std::next(it);
    }
    std::string who = "SDK process " + std::to_string(*index) + " (pid " + std::to_string(e.pid) + ")";
    bool running = !coord_.finished() && !coord_.failed() && !coord_.stopping();
    // The steps a killed process was in (StepBoard: what it could not say itself; a process that
    // exits by itself says what went wrong in its log).
    const std::string in_steps =
        e.exit.signaled ? StepBoard::DescribeSteps(dir_.LogsDir() + "/sdk-" + std::to_string(*index) + ".steps") : "";
    const std::string ended = e.exit.Describe() + in_steps + (opts_.death_note ? opts_.death_note() : std::string());
    int lost = coord_.ProcessEnded(e.pid, who + " " + ended + "; see " + dir_.ProcessLogPath(*index));
    if (!running) continue;
    last_death_ = who + " " + ended;
    ReportLine("{} {}{}; starting a new one", who, ended, lost ? ", its bundle goes back to the queue" : "");
    if (++deaths_since_commit_ > std::max(8, 4 * sup_.size())) {
      coord_.FailJob("SDK processes keep ending without committing work; last: " + last_death_ + "; see " +
                     dir_.LogsDir());
      continue;
    }
    if (coord_.failed()) continue;
    Status s = sup_.Restart(*index);
    if (!s.ok()) coord_.FailJob("cannot restart " + who + ": " + s.message());
  }
}

void JobServer::AcceptClients() {
  for (;;) {
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    // Only our own SDK processes: same user, and a pid this launcher started. The socket is 0600
    // in a 0700 folder already; this also stops a process of ours that is not one of the job's.
    ucred peer{};
    socklen_t len = sizeof peer;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != ::geteuid() ||
        !sup_.IndexOf(peer.pid).has_value()) {
      ReportLine("refused a coordinator connection from pid {} (uid {}): not an SDK process of this job",
                 static_cast<long long>(peer.pid), static_cast<long long>(peer.uid));
      ::close(fd);
      continue;
    }
    clients_[fd].channel = std::make_unique<LineChannel>(OwnedFd(fd));
  }
}

void JobServer::ReadClients(const std::vector<pollfd>& fds, Clock::time_point now) {
  for (const pollfd& p : fds) {
    if (p.fd == listen_fd_.get() || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    auto it = clients_.find(p.fd);
    if (it == clients_.end()) continue;
    bool open = it->second.channel->ReadAvailable();
    while (auto line = it->second.channel->PopLine()) HandleLine(it->second, *line, now);
    // A closed connection is not a death: the process is reaped (and its leases released) then.
    if (!open) clients_.erase(it);
  }
}

void JobServer::HandleLine(Client& c, const std::string& line, Clock::time_point now) {
  auto msg = DecodeMessage(line);
  if (!msg.ok()) {
    ReportLine("ignoring a bad coordinator message: {}", msg.status().message());
    return;
  }
  const Message& m = *msg;
  if (c.pid != 0) coord_.Heartbeat(c.pid, now);
  switch (m.type) {
    case MessageType::kHello:
      c.pid = m.pid;
      c.index = m.index;
      break;
    case MessageType::kLeaseRequest:
      c.waiting = true;
      break;
    case MessageType::kHeartbeat:
      // A report that does not fit the lease (garbled, another process's lease, past its end) is
      // ignored: the lease keeps its last good position and the job goes on.
      if (m.lease != 0 && !coord_.Progress(c.pid, m.lease, m.done, m.total) && bad_progress_++ == 0) {
        ReportLine("ignoring a progress report of SDK process {} for lease {} ({} of {})", c.index, m.lease, m.done, m.total);
      }
      break;
    case MessageType::kCommit:
      HandleCommit(c, m);
      break;
    case MessageType::kSplit:
      HandleSplit(c, m);
      break;
    case MessageType::kFail: {
      granted_.erase(m.lease);
      coord_.Fail(m.lease, "SDK process " + std::to_string(c.index) + ": " + m.error);
      (void)RemoveTree(dir_.LeaseStagingDir(m.lease));
      Message ack;
      ack.type = MessageType::kAck;
      ack.accepted = true;
      Send(c, ack);
      break;
    }
    default:
      ReportLine("ignoring unexpected '{}' from an SDK process", MessageTypeName(m.type));
  }
}

void JobServer::HandleCommit(Client& c, const Message& m) {
  Message ack;
  ack.type = MessageType::kAck;
  auto lease_it = coord_.leases().find(m.lease);
  int attempt = lease_it == coord_.leases().end() ? 0 : lease_it->second.attempt;
  std::string staging = dir_.LeaseStagingDir(m.lease);
  std::optional<Clock::time_point> granted_at;  // for the timeline
  if (auto g = granted_.find(m.lease); g != granted_.end()) {
    granted_at = g->second;
    granted_.erase(g);
  }
  std::optional<WorkRange> read;
  if (!m.range.empty()) {
    auto decoded = DecodeWorkRange(m.range);
    if (!decoded.ok()) {  // cannot tell what the attempt read: it is a failed attempt
      coord_.Fail(m.lease, "SDK process " + std::to_string(c.index) + " committed an unreadable range: " +
                               decoded.status().message());
      (void)RemoveTree(staging);
      ack.reason = decoded.status().message();
      Send(c, ack);
      return;
    }
    read = std::move(*decoded);
  }
  switch (coord_.Commit(m.lease, read)) {
    case CommitDecision::kAccepted: {
      // Order matters for exactly-once: outputs reach committed/ first, then the manifest line
      // makes the commit real. A crash in between leaves files that a redo overwrites.
      auto moved = PromoteStaged(staging, dir_.CommittedDir());
      Status s = moved.ok() ? manifest_.Append(m.bundle, attempt, m.lease, m.metrics_json) : moved.status();
      if (!s.ok()) {
        coord_.FailJob("commit of bundle '" + m.bundle + "' could not be written: " + s.message());
        ack.reason = s.message();
        break;
      }
      auto metrics = m.metrics_json.empty() ? Result<MetricsSnapshot>(MetricsSnapshot{})
                                            : MetricsSnapshot::FromJson(m.metrics_json);
      if (metrics.ok()) report_.AddBundle(c.index, *metrics);
      if (granted_at) {
        const auto committed_at = Clock::now();
        report_.AddSpan({c.index, m.bundle, std::chrono::duration<double>(*granted_at - start_).count(),
                         std::chrono::duration<double>(committed_at - start_).count(),
                         metrics.ok() ? metrics->CounterOr(kRecordsNamespace, kRecordsCounter) : 0});
      }
      // A crash at an exact commit (tests: "between the two commits" of a split bundle).
      test_hooks::KillPoint("launcher-commit-" + std::to_string(++commits_this_run_));
      if (auto stage = dir_.info().params.find("stage"); stage != dir_.info().params.end()) {  // fused stages
        test_hooks::KillPoint("launcher-stage" + stage->second + "-commit-" + std::to_string(commits_this_run_));
      }
      deaths_since_commit_ = 0;
      if (!first_commit_logged_) {
        first_commit_logged_ = true;
        auto now = Clock::now();
        ReportLine("first bundle committed {:.1f} ms after launch ({:.1f} ms after {} SDK processes were started)",
                   Millis(now - kProcessStart), Millis(now - spawned_), sup_.size());
      }
      ack.accepted = true;
      break;
    }
    case CommitDecision::kDuplicate:
      ack.reason = "duplicate: bundle '" + m.bundle + "' is already committed";
      (void)RemoveTree(staging);
      break;
    case CommitDecision::kStale:
      ack.reason = "lease " + std::to_string(m.lease) + " is not live or read another range than bundle '" + m.bundle +
                   "' now has; the bundle is handed out again";
      (void)RemoveTree(staging);
      break;
  }
  Send(c, ack);
}

void JobServer::HandleSplit(Client& c, const Message& m) {
  if (!m.accepted) {
    coord_.RefuseSplit(m.lease);
    return;
  }
  auto primary = DecodeWorkRange(m.range);
  auto residual = DecodeWorkRange(m.residual_range);
  Result<SplitRecord> split = !primary.ok()    ? Result<SplitRecord>(primary.status())
                              : !residual.ok() ? Result<SplitRecord>(residual.status())
                                               : coord_.PrepareSplit(m.lease, *primary, *residual);
  if (!split.ok()) {
    // The holder stopped at its cut, but the split is not taken: its commit will not match the
    // bundle's range, so the attempt fails and the whole bundle is redone. Nothing is lost.
    ReportLine("split of bundle '{}' by SDK process {} not taken: {}", m.bundle, c.index, split.status().message());
    coord_.RefuseSplit(m.lease);
    return;
  }
  // Durable before the residual can be leased: a resumed job must know both halves.
  Status s = manifest_.AppendSplit(*split);
  if (!s.ok()) {
    coord_.FailJob("split of bundle '" + m.bundle + "' could not be written: " + s.message());
    return;
  }
  test_hooks::KillPoint("launcher-split-recorded");
  coord_.ApplySplit(*split);
  residuals_.insert(split->residual);
  report_.CountSplitGiven(c.index);
}

void JobServer::RequestSplits(Clock::time_point now) {
  int idle = 0;
  for (const auto& [fd, c] : clients_) idle += c.waiting && c.pid != 0 ? 1 : 0;
  if (idle == 0) return;
  for (const SplitRequest& r : coord_.PlanSplits(idle, now)) {
    for (auto& [fd, c] : clients_) {
      if (c.pid != r.process) continue;
      Message m;
      m.type = MessageType::kSplitRequest;
      m.lease = r.lease;
      m.bundle = r.bundle;
      m.fraction = r.fraction;
      Send(c, m);
      break;
    }
  }
}

void JobServer::ServeWaiting(Clock::time_point now) {
  for (auto& [fd, c] : clients_) {
    if (!c.waiting || c.pid == 0) continue;
    Message reply;
    if (auto lease = coord_.Grant(c.pid, now)) {
      reply.type = MessageType::kLease;
      reply.lease = lease->id;
      reply.bundle = lease->bundle;
      reply.attempt = lease->attempt;
      reply.staging = dir_.LeaseStagingDir(lease->id);
      if (lease->range) reply.range = EncodeWorkRange(*lease->range).value_or("");
      granted_[lease->id] = now;
      if (residuals_.count(lease->bundle)) report_.CountSplitTaken(c.index);
    } else if (coord_.ShouldWait()) {
      continue;  // long poll: a bundle may come back from a dead process
    } else {
      reply.type = MessageType::kDone;
    }
    c.waiting = false;
    Send(c, reply);
  }
}

bool JobServer::Done(Clock::time_point now) const {
  if (hard_stop_ || coord_.failed() || coord_.finished()) return true;
  return stop_signal_ != 0 && (coord_.live_leases() == 0 || now >= stop_deadline_);
}

void JobServer::StopChildren() {
  // Finished: idle processes were told "done" and exit by themselves. Otherwise SIGTERM, then
  // SIGKILL for whatever is still there (at once after a second signal).
  auto wait_all = [&](milliseconds limit, bool serve) {
    auto deadline = Clock::now() + limit;
    while (sup_.live() > 0 && Clock::now() < deadline) {
      ReapChildren();
      if (serve) {  // requests still in flight (and processes connecting only now) get their "done"
        AcceptClients();
        std::vector<pollfd> all;
        for (auto& [fd, c] : clients_) all.push_back({fd, POLLIN, POLLIN});
        ReadClients(all, Clock::now());
        ServeWaiting(Clock::now());
      }
      if (sup_.live() > 0) ::usleep(2000);
    }
  };
  if (coord_.finished() && !hard_stop_) {
    StopUnconnected();
    wait_all(milliseconds(3000), true);
  }
  if (!hard_stop_) {
    sup_.SignalAll(SIGTERM);
    wait_all(milliseconds(3000), false);
  }
  sup_.SignalAll(SIGKILL);
  wait_all(milliseconds(10000), false);
}

void JobServer::StopUnconnected() {
  // A process that has not said hello yet is still loading its pipeline; with the job finished it
  // would only connect to be told "done" (or, connecting after the loop ended, wait for the
  // SIGTERM below). Stopping it now saves that work and the wait.
  std::set<int64_t> connected;
  for (const auto& [fd, c] : clients_) connected.insert(c.pid);
  for (int i = 0; i < sup_.size(); ++i) {
    pid_t pid = sup_.PidOf(i);
    if (pid != 0 && connected.count(pid) == 0) sup_.Signal(pid, SIGTERM);
  }
}

void JobServer::ReadProcessesWanted(Clock::time_point now) {
  if (opts_.processes_control_dir.empty() || coord_.finished() || coord_.failed() || coord_.stopping()) return;
  const std::string path = opts_.processes_control_dir + "/processes.want";
  if (::access(path.c_str(), F_OK) != 0) return;  // nothing asked yet
  auto text = ReadWholeFile(path, 64);
  std::optional<int64_t> want = text.ok() ? ParseInt64(Trim(*text)) : std::nullopt;
  constexpr int64_t kMaxProcesses = 1024;
  if (!want || *want < 1 || *want > kMaxProcesses) {
    if (!bad_want_said_) {
      bad_want_said_ = true;
      ReportLine("warning: ignoring '{}': {}", path,
                 text.ok() ? "not a number of SDK processes from 1 to " + std::to_string(kMaxProcesses) : text.status().message());
    }
    return;
  }
  const int more = static_cast<int>(*want) - sup_.size();
  if (more <= 0) return;  // processes are never stopped for a lower number
  const double at_s = Elapsed(now);
  const int first = report_.AddProcesses(more, at_s);
  growing_to_ = sup_.size() + more;
  Status s = sup_.Grow(more);
  for (int i = first; i < sup_.size(); ++i) added_.push_back({i, at_s});
  ReportLine("{} more SDK process{} asked for ({}): starting sdk-{}..sdk-{} at {:.1f} s; now {} ({} guaranteed)", more,
             more == 1 ? "" : "es", path, first, sup_.size() - 1, at_s, sup_.size(), opts_.processes);
  if (!s.ok()) ReportLine("warning: an added SDK process did not start: {}", s.message());
  WriteProcessesNow();
}

void JobServer::WriteProcessesNow() {
  if (opts_.processes_control_dir.empty()) return;
  std::string added;
  for (const auto& [index, at_s] : added_) {
    char item[96];
    std::snprintf(item, sizeof item, "%s{\"index\": %d, \"at_s\": %.3f}", added.empty() ? "" : ", ", index, at_s);
    added += item;
  }
  const std::string text = "{\"processes\": " + std::to_string(sup_.size()) + ", \"guaranteed\": " +
                           std::to_string(opts_.processes) + ", \"added\": [" + added + "]}\n";
  Status s = WriteFileAtomically(opts_.processes_control_dir + "/processes.now", text, /*sync=*/false);
  if (!s.ok()) ReportLine("warning: {}", s.message());
}

ProgressState JobServer::Progress(Clock::time_point now) const {
  ProgressState s;
  s.committed = coord_.committed_count();
  s.total = coord_.total();
  s.committed_this_run = s.committed - committed_at_start_;
  s.records = report_.total().CounterOr(kRecordsNamespace, kRecordsCounter) - records_at_start_;
  s.elapsed_s = Elapsed(now);
  s.live_processes = sup_.live();
  s.retries = coord_.retries();
  s.errors_note = MostlyErrorsNote(report_.total());
  return s;
}

LaunchResult JobServer::Run(SignalWatcher& signals) {
  LaunchResult result;
  result.job_dir = dir_.root();
  Status started = sup_.StartAll();
  spawned_ = Clock::now();
  if (!started.ok()) coord_.FailJob("cannot start SDK processes: " + started.message());
  // job.json must be durable before the first commit reaches the manifest (a resumable job needs
  // it); syncing it now overlaps the disk wait with the SDK processes' start-up.
  if (Status synced = dir_.SyncJobJson(); !synced.ok()) coord_.FailJob("job dir: " + synced.message());
  // Ready to grow: say so (SIGUSR1 is handled from here on), then read what was asked before.
  if (!opts_.processes_control_dir.empty()) {
    WriteProcessesNow();
    ReadProcessesWanted(Clock::now());
  }
  while (true) {
    auto now = Clock::now();
    if (Done(now)) break;
    std::vector<pollfd> fds;
    fds.push_back({signals.fd(), POLLIN, 0});
    fds.push_back({listen_fd_.get(), POLLIN, 0});
    for (auto& [fd, c] : clients_) fds.push_back({fd, POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), 50);
    now = Clock::now();
    if (n > 0 && (fds[0].revents & POLLIN)) {
      for (int sig : signals.Drain()) OnSignal(sig, now);
    }
    ReapChildren();
    if (n > 0 && (fds[1].revents & POLLIN)) AcceptClients();
    if (n > 0) ReadClients(fds, now);
    for (int64_t pid : coord_.ExpireSilent(now)) {
      ReportLine("SDK process pid {} sent no heartbeat for {} ms; killing it", pid, opts_.coordinator.lease_timeout.count());
      sup_.Signal(static_cast<pid_t>(pid), SIGKILL);
    }
    ServeWaiting(now);
    RequestSplits(now);
    progress_.Tick(Progress(now), now);
  }
  StopChildren();
  auto end = Clock::now();
  progress_.Finish(Progress(end));
  const std::string metrics_json = report_.ToJson(dir_.info().job_id, coord_.committed_count(), coord_.retries(), Elapsed(end));
  (void)WriteFileAtomically(dir_.MetricsPath(), metrics_json);
  (void)WriteMetricsProm(dir_.root(), metrics_json);  // metrics.prom beside it (job_metrics.h)
  if (coord_.splits() > 0) {
    ReportLine("work rebalancing: {} split(s) of running bundles", coord_.splits());
  }
  WriteStderr(report_.SummaryTable(opts_.full_report, Elapsed(end)));
  // A job whose rows mostly fail still exits 0 without an error threshold: said at the end too.
  if (const std::string note = MostlyErrorsNote(report_.total()); !note.empty()) ReportLine("warning: {}", note);
  if (coord_.failed()) {
    result.code = ExitCode::kRunFailed;
    result.message = coord_.failure();
  } else if (stop_signal_ != 0 && !coord_.finished()) {
    result.code = stop_signal_ == SIGINT ? ExitCode::kInterrupted : ExitCode::kTerminated;
    result.message = std::string("interrupted by ") + (stop_signal_ == SIGINT ? "SIGINT" : "SIGTERM") + " with " +
                     std::to_string(coord_.committed_count()) + "/" + std::to_string(coord_.total()) +
                     " bundles committed; finish it with --resume '" + dir_.root() + "'";
  } else if (opts_.finalize) {
    Status s = opts_.finalize(dir_, report_.total(), coord_.OrderedBundles());
    if (!s.ok()) {
      result.code = ExitCode::kRunFailed;
      result.message = "finalizing outputs: " + s.message();
    }
  }
  if (result.code == ExitCode::kSuccess) {
    test_hooks::KillPoint("before-finished");
    if (auto stage = dir_.info().params.find("stage"); stage != dir_.info().params.end()) {
      test_hooks::KillPoint("stage" + stage->second + "-before-finished");
    }
    Status s = WriteFileAtomically(dir_.FinishedPath(), dir_.info().job_id + "\n");
    if (!s.ok()) {
      result.code = ExitCode::kRunFailed;
      result.message = s.message();
    }
  }
  return result;
}

Status ProbeWritable(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("write to the job dir ('" + path + "')", errno);
  bool wrote = ::write(fd, "probe\n", 6) == 6;
  int err = errno;
  ::close(fd);
  ::unlink(path.c_str());
  return wrote ? Status::OK() : ErrnoError("write to the job dir ('" + path + "')", err);
}

LaunchResult Fail(std::string job_dir, const Status& s) {
  return LaunchResult{ExitCodeFor(s) == ExitCode::kInvalidInvocation ? ExitCode::kInvalidInvocation : ExitCode::kRunFailed,
                      std::move(job_dir), s.message()};
}

}  // namespace

LaunchResult RunLauncher(const LauncherOptions& opts) {
  if (opts.processes < 1) return Fail("", InvalidArgument("the number of SDK processes must be at least 1"));
  if (opts.threads < 1) return Fail("", InvalidArgument("the number of harness threads must be at least 1"));
  if (opts.sdk_command.empty()) return Fail("", InvalidArgument("no SDK harness command given"));
  Result<JobDir> dir = Status(StatusCode::kInternal, "unset");
  if (!opts.resume_dir.empty()) {
    // The lock first: nothing of a job dir that another launcher is running is read or touched.
    auto lock = JobLock::Acquire(opts.resume_dir);
    if (!lock.ok()) return Fail(opts.resume_dir, lock.status());
    dir = JobDir::Open(opts.resume_dir, std::move(*lock));
    if (dir.ok() && ::access(dir->FinishedPath().c_str(), F_OK) == 0) {
      ReportLine("job {} in '{}' already finished; nothing to do", dir->info().job_id, opts.resume_dir);
      return LaunchResult{ExitCode::kSuccess, opts.resume_dir, ""};
    }
  } else {
    JobInfo info = opts.job;
    if (info.job_id.empty()) info.job_id = NewJobId();
    std::string root = opts.job_dir.empty() ? std::string(kDefaultJobsDir) + "/" + info.job_id : opts.job_dir;
    dir = JobDir::Create(root, info, /*sync=*/false);  // locked; fsync'd while the SDK processes start (Run)
  }
  if (!dir.ok()) return Fail(opts.resume_dir, dir.status());
  std::string root = dir->root();
  if (!opts.resume_dir.empty()) {
    // Output of leases that never committed belongs to nobody: clear it before anything runs.
    // The probe checks that the dir is still writable (a read-only or full disk fails here, before
    // any process starts); it needs no fsync. A new job dir was just written, so it needs neither.
    Status cleared = RemoveTree(dir->StagingDir());
    if (cleared.ok()) cleared = ProbeWritable(dir->StagingDir() + ".probe");
    if (!cleared.ok()) return Fail(root, cleared);
    if (::mkdir(dir->StagingDir().c_str(), 0755) != 0) return Fail(root, ErrnoError("create '" + dir->StagingDir() + "'", errno));
  }
  auto manifest = Manifest::Open(dir->ManifestPath());
  if (!manifest.ok()) return Fail(root, manifest.status());
  LauncherOptions effective = opts;
  if (opts.before_start) {
    auto extra_env = opts.before_start(*dir);
    if (!extra_env.ok()) return Fail(root, extra_env.status());
    effective.sdk_env.insert(effective.sdk_env.end(), extra_env->begin(), extra_env->end());
  }
  std::map<std::string, WorkRange> ranges;
  if (auto table = dir->info().params.find(kBundleTableParam); table != dir->info().params.end()) {
    auto entries = DecodeRangeTable(table->second);
    if (!entries.ok()) return Fail(root, entries.status().WithContext("job.json"));
    for (TableEntry& e : *entries) ranges[e.id] = std::move(e.range);
  }
  auto coord = Coordinator::Make(opts.coordinator, dir->info().bundles, manifest->committed(), ranges, manifest->splits());
  if (!coord.ok()) return Fail(root, coord.status());
  auto target = dir->info().params.find("bundle_target");
  std::string sizing = target == dir->info().params.end() ? "" : "; " + target->second;
  ReportLine("job {}: job dir {} ({} bundles{}, {} already committed, {} SDK processes)", dir->info().job_id, root,
             dir->info().bundles.size(), sizing, manifest->committed().size(), opts.processes);
  auto ipc_dir = dir->MakePrivateIpcDir();
  if (!ipc_dir.ok()) return Fail(root, ipc_dir.status());
  const bool temp_ipc = *ipc_dir != dir->IpcDir();
  std::string socket_path = *ipc_dir + "/coordinator.sock";
  ::unlink(socket_path.c_str());  // a socket left by a killed run of this job (our own private folder)
  // Bound under a temporary name, made 0600, then renamed into place: the socket never appears
  // at its path with the mode the umask gave it.
  const std::string bound_path = *ipc_dir + "/coordinator.sock.new";
  ::unlink(bound_path.c_str());
  Result<OwnedFd> listen_fd = ListenUnix(bound_path, SocketBlocking::kNonBlocking, "the coordinator socket");
  if (listen_fd.ok() && (::chmod(bound_path.c_str(), 0600) != 0 || ::rename(bound_path.c_str(), socket_path.c_str()) != 0)) {
    int err = errno;
    ::unlink(bound_path.c_str());
    listen_fd = ErrnoError("make the coordinator socket '" + socket_path + "' private", err);
  }
  auto cleanup_ipc = [&] {
    ::unlink(socket_path.c_str());
    if (temp_ipc) ::rmdir(ipc_dir->c_str());
  };
  if (!listen_fd.ok()) {
    cleanup_ipc();
    return Fail(root, listen_fd.status());
  }
  effective.coordinator_socket = socket_path;
  // With a processes control file, a SIGUSR1 must never end the process: ignored outside the loop
  // (the watcher puts this back when it goes), handled inside it.
  if (!opts.processes_control_dir.empty()) ::signal(SIGUSR1, SIG_IGN);
  auto signals = SignalWatcher::Install();
  if (!signals.ok()) {
    cleanup_ipc();
    return Fail(root, signals.status());
  }
  std::unique_ptr<ProcessLauncher> posix;
  ProcessLauncher* pl = opts.process_launcher;
  if (!pl) {
    posix = MakePosixProcessLauncher();
    pl = posix.get();
  }
  JobServer server(effective, std::move(*dir), std::move(*manifest), std::move(*coord), *pl, std::move(*listen_fd));
  LaunchResult r = server.Run(**signals);
  cleanup_ipc();
  return r;
}

}  // namespace dfw
