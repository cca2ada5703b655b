// Fault-injection hooks for the real-process tests (a poison bundle, a crash at a finalize step,
// a slow record). They read DFW_TEST_* environment variables, and only in a build configured with
// -DDFW_TEST_HOOKS=ON (scripts/test.sh does; the default is OFF): a production binary ignores
// them, so nobody's environment can make it crash or hang.
#pragma once

#include <optional>
#include <string>

#include "dfw/common/status.h"

namespace dfw::test_hooks {

// True when the hooks are compiled in.
bool Enabled();

// The value of environment variable DFW_TEST_<name> when the hooks are compiled in and it is set;
// nullopt otherwise.
std::optional<std::string> Get(const char* name);

// Waits (polling every 10 ms) until `path` exists, `limit_s` at most: a test opens such a gate once
// it has seen the event it waits for, instead of sleeping and hoping the run is still going.
void WaitForFile(const std::string& path, int limit_s = 60);

// SIGKILLs this process when DFW_TEST_KILL_AT equals `point` (e.g. "finalize-rename-3"): a crash at
// an exact step, where a test would otherwise have to sleep and hope. With DFW_TEST_KILL_ONCE_FILE
// set, only the first process to reach the point dies (it creates that file).
void KillPoint(const std::string& point);

// An I/O error as "no space left on device" (ENOSPC) when DFW_TEST_FAIL_AT equals `point`; OK
// otherwise (a full disk at an exact step).
Status FailPoint(const std::string& point);

}  // namespace dfw::test_hooks
