// The client side of the emulated MPS daemon: SDK processes and model hosts register on start and
// stay registered while their session object (and its connection) lives. If the process dies,
// the kernel closes the connection and the daemon drops the client, so no cleanup is needed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "dfw/common/status.h"
#include "dfw/device/mps_env.h"

namespace dfw::device {

class MpsClientSession {
 public:
  // Registers the calling process as `name` with the daemon whose pipe dir is `pipe_dir`.
  // kResourceExhausted ("mps-client-limit: ...") when the device has no client slot left,
  // kUnavailable when no daemon answers.
  static Result<MpsClientSession> Register(const std::string& pipe_dir, std::string_view name,
                                           const MpsClientLimits& limits, int timeout_ms = 5000);

  // For an SDK process or model host after exec: registers as `name` with the emulated daemon named
  // by CUDA_MPS_PIPE_DIRECTORY, using the limits in its environment (MpsClientLimitsFromEnv).
  // nullopt when the variable is unset or the pipe dir holds no emulated daemon (no MPS, or the real
  // NVIDIA one, which registers CUDA clients itself).
  static Result<std::optional<MpsClientSession>> RegisterFromEnv(std::string_view name);

  MpsClientSession(MpsClientSession&& other) noexcept;
  MpsClientSession& operator=(MpsClientSession&& other) noexcept;
  MpsClientSession(const MpsClientSession&) = delete;
  MpsClientSession& operator=(const MpsClientSession&) = delete;
  ~MpsClientSession();  // unregisters (best effort)

  // Effective limits granted by the daemon.
  double active_thread_percentage() const { return threads_; }
  std::optional<uint64_t> pinned_mem_limit_bytes() const { return pinned_; }

  // Unregisters now; later calls are no-ops.
  Status Unregister();

 private:
  MpsClientSession(int fd, double threads, std::optional<uint64_t> pinned)
      : fd_(fd), threads_(threads), pinned_(pinned) {}
  int fd_ = -1;
  double threads_ = 100;
  std::optional<uint64_t> pinned_;
};

// Opens a watch on the emulated daemon whose pipe dir is `pipe_dir`: the returned socket (owned by
// the caller, close-on-exec) becomes readable with a "fault\n" line when the server handles a fatal
// GPU error (the daemon's `inject_fault` control command), and at EOF when the daemon exits.
// After a fault the daemon refuses new clients ("mps-server-not-ready", CUDA error 807) until
// every registered client has exited; `ping` reports state=FAULT until then.
Result<int> MpsWatch(const std::string& pipe_dir, int timeout_ms = 5000);

// Sends one control command ("ping", "ps", "quit", "set_default_active_thread_percentage 50",
// "set_default_device_pinned_mem_limit 0 2G") to the emulated daemon and returns its reply lines
// before the final "ok ..." line, followed by that line. An "error ..." reply is a Status.
Result<std::string> MpsControlCommand(const std::string& pipe_dir, const std::string& command, int timeout_ms = 5000);

}  // namespace dfw::device
