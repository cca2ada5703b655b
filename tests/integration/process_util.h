// Helpers for real-process tests: start the fake-job binary, wait for it, look at /proc.
// Waits are bounded by generous limits that only guard against hangs; no test asserts a duration.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "dfw/common/test_hooks.h"
#include "test_util.h"  // ReadFile, Eventually (a bounded wait for an event)

namespace dfw::testing {

struct Started {
  pid_t pid = 0;
  std::string stderr_path;
};

// Starts `argv` (argv[0] a path) in a new process group with `env` added ("K=V"), stdout and
// stderr to `stderr_path`.
Started StartProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     const std::string& stderr_path);
// Waits for `pid` (up to `limit_s`; then SIGKILLs its group and returns -1). Returns the exit code,
// or 128+signal when killed.
int WaitExit(pid_t pid, int limit_s = 120);
// PIDs whose parent is `parent`.
std::vector<pid_t> ChildrenOf(pid_t parent);
// PIDs (not zombies) whose command line contains `needle`.
std::vector<pid_t> ProcessesMentioning(const std::string& needle);
int CountLines(const std::string& path);

// Every line of every file in `folder` (none when it does not exist); `*files` gets the number of
// files (an output's shards).
std::vector<std::string> LinesOfFilesIn(const std::filesystem::path& folder, int* files = nullptr);

// The exactly-once check of a run's output: every line matches `row`, whose first group is a
// record id, each id is there once, and there are `expected` ids in all. `check` sees every match
// (a value computed from the id); `context` (a log) is printed with a failure. Failures are
// gtest EXPECTs, so every bad line and repeat is reported.
void ExpectExactlyOnce(const std::vector<std::string>& lines, const std::regex& row, std::size_t expected,
                       const std::string& context, const std::function<void(const std::smatch&)>& check = {});

}  // namespace dfw::testing

// Tests that plant faults through DFW_TEST_* variables need a build with the hooks compiled in.
#define DFW_SKIP_WITHOUT_TEST_HOOKS() \
  if (!::dfw::test_hooks::Enabled()) GTEST_SKIP() << "needs a build configured with -DDFW_TEST_HOOKS=ON"
