#include "dfw/common/test_hooks.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace dfw::test_hooks {

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
