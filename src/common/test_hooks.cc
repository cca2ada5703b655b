#include "dfw/common/test_hooks.h"

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
  if (at && *at == point) ::kill(::getpid(), SIGKILL);
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
