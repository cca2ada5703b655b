// "Measure once, keep it in a file": the processes of a job start together, and each needs a
// decision that takes seconds of measuring on this machine (a GEMM plan, a model's precision).
// Under this lock the first one measures and writes the file; the others wait, then read it.
//
//   FileLock lock = FileLock::TryFor(cache_path + ".lock", kWait);
//   if (lock.held()) { read the file; if usable, done }
//   measure; if (lock.held()) write the file (WriteFileAtomically)
//
// The lock is an exclusive flock on a lock file (created 0644 when missing, never removed) and is
// released when the FileLock is destroyed. It is advisory: only FileLock users are kept out.
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include "dfw/common/file.h"

namespace dfw {

class FileLock {
 public:
  // The poll step of TryFor.
  static constexpr std::chrono::milliseconds kPollInterval{5};

  // Tries for the lock every kPollInterval, wait / kPollInterval times (the wait stretches on a
  // loaded machine, where a holder's measuring does too). A holder that has not let go by then
  // (stopped, or measuring longer than the caller allows) is not waited for: the result is not
  // held(), and the caller measures alone, neither reading nor writing the shared file. A lock
  // file that cannot be opened is the same as a lock not got. Never fails, never throws.
  static FileLock TryFor(const std::string& lock_path, std::chrono::milliseconds wait);

  FileLock(FileLock&& o) noexcept : fd_(std::move(o.fd_)), held_(std::exchange(o.held_, false)) {}
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock() = default;  // closing the descriptor releases the flock

  bool held() const { return held_; }

 private:
  FileLock(OwnedFd fd, bool held) : fd_(std::move(fd)), held_(held) {}
  OwnedFd fd_;
  bool held_ = false;
};

}  // namespace dfw
