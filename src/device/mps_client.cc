#include "dfw/device/mps_client.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "dfw/common/strings.h"
#include "dfw/common/unix_socket.h"
#include "control_socket.h"

namespace dfw::device {
namespace {

// Reads reply lines up to the final "ok ..." / "error ..." line.
Result<std::string> ReadReply(int fd, int timeout_ms, const std::string& command) {
  std::string buffer, line, out;
  for (;;) {
    RETURN_IF_ERROR(ReadLine(fd, buffer, line, timeout_ms));
    if (line.rfind("error ", 0) == 0) {
      std::string why = line.substr(6);
      StatusCode code = why.rfind("mps-client-limit", 0) == 0 ? StatusCode::kResourceExhausted
                                                               : StatusCode::kFailedPrecondition;
      return Status(code, "MPS daemon refused '" + command + "': " + why);
    }
    out += line + "\n";
    if (line == "ok" || line.rfind("ok ", 0) == 0) return out;
  }
}

std::string Field(const std::string& reply, const std::string& key) {
  for (const std::string& w : Split(Trim(reply), ' ')) {
    if (w.rfind(key + "=", 0) == 0) return w.substr(key.size() + 1);
  }
  return "";
}

}  // namespace

Result<MpsClientSession> MpsClientSession::Register(const std::string& pipe_dir, std::string_view name,
                                                    const MpsClientLimits& limits, int timeout_ms) {
  std::string clean(name.empty() ? "client" : name);
  for (char& ch : clean) {
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '=') ch = '_';
  }
  std::ostringstream cmd;
  cmd << "register name=" << clean << " threads=";
  if (limits.active_thread_percentage) cmd << *limits.active_thread_percentage;
  else cmd << "-";
  cmd << " pinned=" << (limits.pinned_mem_limit_bytes ? std::to_string(*limits.pinned_mem_limit_bytes) : "-");
  if (limits.client_priority) cmd << " priority=" << *limits.client_priority;
  ASSIGN_OR_RETURN(OwnedFd connected, ConnectUnix(ControlSocketPath(pipe_dir), kMpsDaemonPeer));
  const int fd = connected.get();
  MpsClientSession session(connected.release(), 100, std::nullopt);  // owns fd from here on
  RETURN_IF_ERROR(SendAll(fd, cmd.str() + "\n"));
  ASSIGN_OR_RETURN(std::string reply, ReadReply(fd, timeout_ms, "register"));
  session.threads_ = ParseDouble(Field(reply, "threads")).value_or(100);
  if (std::optional<int64_t> p = ParseInt64(Field(reply, "pinned")); p) session.pinned_ = static_cast<uint64_t>(*p);
  return session;
}

Result<int> MpsWatch(const std::string& pipe_dir, int timeout_ms) {
  ASSIGN_OR_RETURN(OwnedFd fd, ConnectUnix(ControlSocketPath(pipe_dir), kMpsDaemonPeer));
  Status sent = SendAll(fd.get(), "watch\n");
  Result<std::string> reply = sent.ok() ? ReadReply(fd.get(), timeout_ms, "watch") : Result<std::string>(sent);
  if (!reply.ok()) return reply.status();
  return fd.release();
}

Result<std::optional<MpsClientSession>> MpsClientSession::RegisterFromEnv(std::string_view name) {
  const char* pipe_dir = std::getenv(std::string(kPipeDirEnv).c_str());
  if (pipe_dir == nullptr || *pipe_dir == '\0') return std::optional<MpsClientSession>();
  if (::access(ControlSocketPath(pipe_dir).c_str(), F_OK) != 0) return std::optional<MpsClientSession>();
  ASSIGN_OR_RETURN(MpsClientLimits limits, MpsClientLimitsFromEnv());
  const char* tenant = std::getenv(std::string(kTenantEnv).c_str());
  const std::string full = tenant != nullptr && *tenant != '\0' ? std::string(tenant) + "/" + std::string(name) : std::string(name);
  ASSIGN_OR_RETURN(MpsClientSession session, Register(pipe_dir, full, limits));
  return std::optional<MpsClientSession>(std::move(session));
}

MpsClientSession::MpsClientSession(MpsClientSession&& other) noexcept
    : fd_(other.fd_), threads_(other.threads_), pinned_(other.pinned_) {
  other.fd_ = -1;
}

MpsClientSession& MpsClientSession::operator=(MpsClientSession&& other) noexcept {
  if (this != &other) {
    (void)Unregister();
    fd_ = other.fd_;
    threads_ = other.threads_;
    pinned_ = other.pinned_;
    other.fd_ = -1;
  }
  return *this;
}

MpsClientSession::~MpsClientSession() { (void)Unregister(); }

Status MpsClientSession::Unregister() {
  if (fd_ < 0) return Status::OK();
  int fd = fd_;
  fd_ = -1;
  Status s = SendAll(fd, "unregister\n");
  if (s.ok()) s = ReadReply(fd, 2000, "unregister").status();
  ::close(fd);
  return s;
}

Result<std::string> MpsControlCommand(const std::string& pipe_dir, const std::string& command, int timeout_ms) {
  ASSIGN_OR_RETURN(OwnedFd fd, ConnectUnix(ControlSocketPath(pipe_dir), kMpsDaemonPeer));
  Status sent = SendAll(fd.get(), command + "\n");
  return sent.ok() ? ReadReply(fd.get(), timeout_ms, command) : Result<std::string>(sent);
}

}  // namespace dfw::device
