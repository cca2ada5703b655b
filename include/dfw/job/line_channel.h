// A connected stream socket carrying newline-delimited messages (the coordinator protocol).
//
// Threading: one reader and one writer may use a channel at the same time (the SDK process reads
// replies on its main thread while its heartbeat thread writes); WriteLine is serialised inside.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "dfw/common/status.h"

namespace dfw {

class LineChannel {
 public:
  // Takes ownership of a connected socket fd.
  explicit LineChannel(int fd) : fd_(fd) {}
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;
  ~LineChannel();

  int fd() const { return fd_; }

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
  int fd_;
  std::mutex write_mu_;
  std::string buf_;
  bool overflowed_ = false;
};

// Server side: a listening, non-blocking UNIX socket at `path` (an old socket file there is replaced).
Result<int> ListenUnix(const std::string& path);
// Client side: connects to `path` (kUnavailable naming the path when nobody listens).
Result<int> ConnectUnix(const std::string& path);

}  // namespace dfw
