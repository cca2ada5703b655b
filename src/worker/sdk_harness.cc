#include "dfw/worker/sdk_harness.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "dfw/job/line_channel.h"
#include "dfw/job/protocol.h"

namespace dfw {
namespace {

// Sends a heartbeat every `interval` until stopped.
class Heartbeat {
 public:
  Heartbeat(LineChannel& channel, std::chrono::milliseconds interval)
      : thread_([this, &channel, interval] {
          Message hb;
          hb.type = MessageType::kHeartbeat;
          std::string line = EncodeMessage(hb);
          std::unique_lock<std::mutex> lock(mu_);
          while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
            if (!channel.WriteLine(line).ok()) return;
          }
        }) {}
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

Result<Message> Call(LineChannel& ch, const Message& request) {
  RETURN_IF_ERROR(ch.WriteLine(EncodeMessage(request)));
  ASSIGN_OR_RETURN(std::string line, ch.ReadLine());
  return DecodeMessage(line);
}

}  // namespace

Status RunSdkHarness(const SdkHarnessOptions& options, const JobDir& dir, BundleExecutor& executor) {
  ASSIGN_OR_RETURN(int fd, ConnectUnix(options.coordinator_socket.empty() ? dir.SocketPath() : options.coordinator_socket));
  LineChannel ch(fd);
  Message hello;
  hello.type = MessageType::kHello;
  hello.index = options.index;
  hello.pid = ::getpid();
  RETURN_IF_ERROR(ch.WriteLine(EncodeMessage(hello)));
  Heartbeat heartbeat(ch, std::chrono::milliseconds(dir.info().heartbeat_ms));
  Message lease_request;
  lease_request.type = MessageType::kLeaseRequest;
  for (;;) {
    ASSIGN_OR_RETURN(Message lease, Call(ch, lease_request));
    if (lease.type == MessageType::kDone) return Status::OK();
    if (lease.type != MessageType::kLease) {
      return Internal("coordinator answered a lease request with '" + std::string(MessageTypeName(lease.type)) + "'");
    }
    MetricsSnapshot metrics;
    Status run;
    const auto began = std::chrono::steady_clock::now();
    try {
      run = executor.RunBundle(lease.bundle, lease.staging, &metrics);
    } catch (...) {
      run = FromCurrentException("bundle '" + lease.bundle + "'");
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
    } else {
      outcome.type = MessageType::kFail;
      outcome.error = run.ToString();
      std::fprintf(stderr, "[dfworker sdk-%d] bundle '%s' attempt %d failed: %s\n", options.index,
                   lease.bundle.c_str(), lease.attempt, outcome.error.c_str());
    }
    ASSIGN_OR_RETURN(Message ack, Call(ch, outcome));
    if (ack.type == MessageType::kAck && !ack.accepted && !ack.reason.empty()) {
      std::fprintf(stderr, "[dfworker sdk-%d] bundle '%s' not committed: %s\n", options.index, lease.bundle.c_str(),
                   ack.reason.c_str());
    }
  }
}

Status RunSdkHarnessMain(const SdkHarnessOptions& options) {
  if (options.index < 0) return InvalidArgument("--index must be >= 0, got " + std::to_string(options.index));
  if (options.threads < 1) return InvalidArgument("--threads must be >= 1, got " + std::to_string(options.threads));
  ASSIGN_OR_RETURN(JobDir dir, JobDir::Open(options.job_dir));
  ASSIGN_OR_RETURN(auto executor, MakeExecutorForJob(dir.info(), options.threads));
  return RunSdkHarness(options, dir, *executor);
}

}  // namespace dfw
