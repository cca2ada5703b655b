// A connected stream socket carrying newline-delimited messages (the coordinator protocol).
//
// Threading: one reader and one writer may use a channel at the same time (the SDK process reads
// replies on its main thread while its heartbeat thread writes); WriteLine is serialised inside.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "dfw/common/file.h"
#include "dfw/common/status.h"

namespace dfw {

class LineChannel {
 public:
  // A connected socket (dfw/common/unix_socket.h makes them).
  explicit LineChannel(OwnedFd fd) : fd_(std::move(fd)) {}
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;

  int fd() const { return fd_.get(); }

  // Writes `line` plus '\n' completely (blocking; SIGPIPE suppressed). kUnavailable when the peer
  // is gone.
  Status WriteLine(const std::string& line);

  // Blocking: the next line (without '\n'); kUnavailable at end of stream.
  Result<std::string> ReadLine();

  // Non-blocking use from a poll loop: reads what is available once. Returns false at end of
  // stream or on error (the peer is gone). Then PopLine() yields the complete lines buffered.
  bool ReadAvailable();
  std::optional<std::string> PopLine();
  // A line longer than this is a protocol error (the peer is not a dfworker process).
  static constexpr std::size_t kMaxLine = 64 << 20;
  bool overflowed() const { return overflowed_; }

 private:
  OwnedFd fd_;
  std::mutex write_mu_;
  std::string buf_;
  bool overflowed_ = false;
};

}  // namespace dfw
