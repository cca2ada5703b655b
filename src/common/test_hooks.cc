#include "dfw/common/test_hooks.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <cstdlib>

namespace dfw::test_hooks {

void WaitForFile(const std::string& path, int limit_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (::access(path.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

#ifdef DFW_TEST_HOOKS
bool Enabled() { return true; }

std::optional<std::string> Get(const char* name) {
  const char* v = std::getenv((std::string("DFW_TEST_") + name).c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

void KillPoint(const std::string& point) {
  static const std::optional<std::string> at = Get("KILL_AT");
  if (!at || *at != point) return;
  // With DFW_TEST_KILL_ONCE_FILE, only the first process of the job to get here dies (it creates
  // the file): a point that every SDK process reaches kills one of them, not each restart too.
  static const std::optional<std::string> once = Get("KILL_ONCE_FILE");
  if (once) {
    int fd = ::open(once->c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ::close(fd);
  }
  ::kill(::getpid(), SIGKILL);
}

Status FailPoint(const std::string& point) {
  static const std::optional<std::string> at = Get("FAIL_AT");
  if (at && *at == point) return ErrnoError("(test hook " + point + ")", ENOSPC);
  return Status::OK();
}
#else
bool Enabled() { return false; }
std::optional<std::string> Get(const char*) { return std::nullopt; }
void KillPoint(const std::string&) {}
Status FailPoint(const std::string&) { return Status::OK(); }
#endif

}  // namespace dfw::test_hooks
