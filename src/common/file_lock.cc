#include "dfw/common/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <thread>

namespace dfw {

FileLock FileLock::TryFor(const std::string& lock_path, std::chrono::milliseconds wait) {
  OwnedFd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return FileLock(std::move(fd), false);
  const auto tries = std::max<std::chrono::milliseconds::rep>(1, wait / kPollInterval);
  for (std::chrono::milliseconds::rep i = 0; i < tries; ++i) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return FileLock(std::move(fd), true);
    std::this_thread::sleep_for(kPollInterval);
  }
  return FileLock(std::move(fd), false);
}

}  // namespace dfw
