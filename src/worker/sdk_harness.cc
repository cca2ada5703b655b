#include "dfw/worker/sdk_harness.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "dfw/backend/registry.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/logging.h"
#include "dfw/common/stop_request.h"
#include "dfw/common/test_hooks.h"
#include "dfw/common/unix_socket.h"
#include "dfw/job/line_channel.h"
#include "dfw/job/protocol.h"

namespace dfw {
namespace {

// The process's side of the coordinator connection. Three threads use it:
// - the main thread leases, runs and commits bundles (Call: write a request, wait for the reply);
// - the reader thread reads every incoming line: split requests are answered at once (they arrive
//   while the main thread is inside a bundle), everything else is a reply for Call;
// - the heartbeat thread reports liveness and the running bundle's position.
class Connection {
 public:
  Connection(OwnedFd fd, BundleExecutor& executor, pid_t launcher_pid)
      : ch_(std::move(fd)), executor_(executor), launcher_pid_(launcher_pid) {}
  ~Connection() { Stop(); }

  Status Start(const Message& hello, std::chrono::milliseconds heartbeat) {
    RETURN_IF_ERROR(ch_.WriteLine(EncodeMessage(hello)));
    reader_ = std::thread([this] { ReadLoop(); });
    heartbeat_ = std::thread([this, heartbeat] { HeartbeatLoop(heartbeat); });
    return Status::OK();
  }

  // Sends `request` and waits for the next reply that is not a split request.
  Result<Message> Call(const Message& request) {
    RETURN_IF_ERROR(ch_.WriteLine(EncodeMessage(request)));
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !replies_.empty() || closed_; });
    if (replies_.empty()) return read_error_;
    Message m = std::move(replies_.front());
    replies_.pop_front();
    return m;
  }

  // The lease being run (0 = none): split requests for other leases are refused.
  void SetRunning(int64_t lease) {
    std::lock_guard<std::mutex> lock(split_mu_);
    running_.store(lease);
  }

  // Ends the running lease. Taking split_mu_ orders an accepted split's answer before the commit
  // on the wire: the coordinator must learn of the split before it sees the primary's range.
  void EndRunning() { SetRunning(0); }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    ::shutdown(ch_.fd(), SHUT_RDWR);  // wakes the reader's blocking read
    if (heartbeat_.joinable()) heartbeat_.join();
    if (reader_.joinable()) reader_.join();
  }

 private:
  void ReadLoop() {
    for (;;) {
      Result<std::string> line = ch_.ReadLine();
      if (!line.ok() && launcher_pid_ > 0 && ::getppid() != launcher_pid_ && !Stopping()) {
        // The launcher died (its end of the socket closed with it): nothing this process does can
        // be committed any more, so it ends now rather than at the end of its bundle. (Not when
        // the connection closed because this process is ending it: Stop()'s shutdown.)
        ::_exit(static_cast<int>(ExitCode::kRunFailed));
      }
      if (!line.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        closed_ = true;
        read_error_ = line.status();
        cv_.notify_all();
        return;
      }
      Result<Message> m = DecodeMessage(*line);
      if (m.ok() && m->type == MessageType::kSplitRequest) {
        AnswerSplit(*m);
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (!m.ok()) {  // the coordinator is ours: a line we cannot read ends the conversation
        closed_ = true;
        read_error_ = m.status();
        cv_.notify_all();
        return;
      }
      replies_.push_back(std::move(*m));
      cv_.notify_all();
    }
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  }

  void AnswerSplit(const Message& request) {
    std::lock_guard<std::mutex> lock(split_mu_);
    Message reply;
    reply.type = MessageType::kSplit;
    reply.lease = request.lease;
    reply.bundle = request.bundle;
    std::optional<std::pair<WorkRange, WorkRange>> halves;
    if (running_.load() != request.lease) {
      reply.reason = "not running lease " + std::to_string(request.lease);
    } else if (!(halves = executor_.TrySplit(request.fraction))) {
      reply.reason = "too little input left to split";
    }
    std::optional<std::string> primary, residual;
    if (halves) {
      primary = EncodeWorkRange(halves->first);
      residual = EncodeWorkRange(halves->second);
    }
    if (primary && residual) {
      reply.accepted = true;
      reply.range = *primary;
      reply.residual_range = *residual;
    } else if (halves) {
      // The reader already stopped at the cut but the halves cannot be sent: the commit's range
      // then disagrees with the coordinator's, which fails the attempt (nothing is lost).
      reply.reason = "the split's path cannot be sent";
    }
    (void)ch_.WriteLine(EncodeMessage(reply));
    if (reply.accepted) test_hooks::KillPoint("sdk-split-answered");
  }

  void HeartbeatLoop(std::chrono::milliseconds interval) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
      lock.unlock();
      bool ok;
      {
        // Under split_mu_: a position measured after a split is sent after that split's answer.
        std::lock_guard<std::mutex> split_lock(split_mu_);
        Message hb;
        hb.type = MessageType::kHeartbeat;
        int64_t lease = running_.load();
        if (lease != 0) {
          if (auto p = executor_.Progress()) {
            hb.lease = lease;
            hb.done = p->done;
            hb.total = p->total;
          }
        }
        ok = ch_.WriteLine(EncodeMessage(hb)).ok();
      }
      lock.lock();
      if (!ok) return;
    }
  }

  LineChannel ch_;
  BundleExecutor& executor_;
  const pid_t launcher_pid_;
  std::thread reader_;
  std::thread heartbeat_;
  std::mutex mu_;  // replies_, closed_, read_error_, stop_
  std::condition_variable cv_;
  std::deque<Message> replies_;
  bool closed_ = false;
  bool stop_ = false;
  Status read_error_;
  std::mutex split_mu_;  // a split answer against the end of the lease it cuts
  std::atomic<int64_t> running_{0};
};

std::optional<WorkRange> LeaseRange(const Message& lease) {
  if (lease.range.empty()) return std::nullopt;
  auto r = DecodeWorkRange(lease.range);
  if (!r.ok()) return std::nullopt;
  return *r;
}

}  // namespace

Status RunSdkHarness(const SdkHarnessOptions& options, const JobDir& dir, BundleExecutor& executor) {
  ASSIGN_OR_RETURN(OwnedFd fd, ConnectUnix(options.coordinator_socket.empty() ? dir.SocketPath() : options.coordinator_socket,
                                           "the coordinator"));
  Connection conn(std::move(fd), executor, options.launcher_pid);
  Message hello;
  hello.type = MessageType::kHello;
  hello.index = options.index;
  hello.pid = ::getpid();
  RETURN_IF_ERROR(conn.Start(hello, std::chrono::milliseconds(dir.info().heartbeat_ms)));
  Message lease_request;
  lease_request.type = MessageType::kLeaseRequest;
  for (;;) {
    // The bundle gate: a process whose launcher is gone (reparented) takes no more work.
    if (options.launcher_pid > 0 && ::getppid() != options.launcher_pid) {
      return Aborted("the launcher (pid " + std::to_string(options.launcher_pid) + ") is gone");
    }
    ASSIGN_OR_RETURN(Message lease, conn.Call(lease_request));
    if (lease.type == MessageType::kDone) return Status::OK();
    if (lease.type != MessageType::kLease) {
      return Internal("coordinator answered a lease request with '" + std::string(MessageTypeName(lease.type)) + "'");
    }
    MetricsSnapshot metrics;
    Result<std::optional<WorkRange>> run = std::optional<WorkRange>();
    const auto began = std::chrono::steady_clock::now();
    if (!lease.range.empty() && !LeaseRange(lease)) {
      run = DataLoss("lease " + std::to_string(lease.lease) + " names an unreadable range '" + lease.range + "'");
    } else {
      conn.SetRunning(lease.lease);
      try {
        run = executor.RunWork(lease.bundle, LeaseRange(lease), lease.staging, &metrics);
      } catch (...) {
        run = FromCurrentException("bundle '" + lease.bundle + "'");
      }
      conn.EndRunning();
    }
    // A bundle cut short by the job's stop request (a generation ended between decode steps; its
    // rows may even have gone to an error output) is neither committed nor failed: the process
    // ends as if the launcher's stop had killed it, and the bundle runs again on --resume.
    if (WorkWasCut()) {
      ReportLineAs(fmt::format("sdk-{}", options.index), "bundle '{}' not committed: {}", lease.bundle,
                   run.ok() ? StoppedStatus("work in it was stopped").message() : run.status().message());
      return Status::OK();
    }
    // Busy time travels with the commit: the launcher reports per-process busy and idle time.
    metrics.counters[{kRecordsNamespace, kBusyMsCounter}] +=
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began).count();
    Message outcome;
    outcome.lease = lease.lease;
    outcome.bundle = lease.bundle;
    if (run.ok()) {
      outcome.type = MessageType::kCommit;
      outcome.metrics_json = metrics.ToJson();
      if (run->has_value()) outcome.range = EncodeWorkRange(**run).value_or("");
    } else {
      outcome.type = MessageType::kFail;
      outcome.error = run.status().ToString();
      ReportLineAs(fmt::format("sdk-{}", options.index), "bundle '{}' attempt {} failed: {}", lease.bundle, lease.attempt,
                   outcome.error);
    }
    ASSIGN_OR_RETURN(Message ack, conn.Call(outcome));
    if (ack.type == MessageType::kAck && !ack.accepted && !ack.reason.empty()) {
      ReportLineAs(fmt::format("sdk-{}", options.index), "bundle '{}' not committed: {}", lease.bundle, ack.reason);
    }
  }
}

Status RunSdkHarnessMain(const SdkHarnessOptions& options) {
  if (options.index < 0) return InvalidArgument("--index must be >= 0, got " + std::to_string(options.index));
  if (options.threads < 1) return InvalidArgument("--threads must be >= 1, got " + std::to_string(options.threads));
  ASSIGN_OR_RETURN(JobDir dir, JobDir::Open(options.job_dir));
  // The job's SDK processes share one GEMM calibration (measured once, not once per process).
  SetCpuGemmPlanCache(dir.root() + "/gemm_plan");
  ASSIGN_OR_RETURN(auto executor, MakeExecutorForJob(dir.info(), ExecutorContext{options.threads, options.model_process, options.sdk_processes}));
  return RunSdkHarness(options, dir, *executor);
}

}  // namespace dfw
