// Running the real dfworker binary from CLI tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

namespace dfw::testing {

// A fresh temporary directory laid out like the repository root (its pipelines/, testdata/ and
// configs/ are links to the real ones): the shipped pipelines run from it as committed, and their
// relative outputs (out/...) land in it, never in the source tree nor in another test's way.
class RepoRootView {
 public:
  RepoRootView() {
    for (const char* d : {"pipelines", "testdata", "configs"}) {
      std::filesystem::create_directory_symlink(std::filesystem::path(DFW_SOURCE_DIR) / d, dir_ / d);
    }
  }
  const std::string& path() const { return dir_.path(); }
  std::string operator/(const std::string& name) const { return dir_ / name; }
  void Keep() { dir_.Keep(); }

 private:
  TempDir dir_{"dfw-root"};  // short: an MPS socket path under it must stay under 108 bytes
};

struct CliOutcome {
  int exit_code = -1;  // -1 when the binary did not exit normally
  std::string out;     // stdout + stderr
};

inline std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `dfworker ARGS...` from `cwd` (with `env` assignments prefixed, e.g. "X=1"), stderr merged
// into stdout.
inline CliOutcome RunDfworker(const std::vector<std::string>& args, const std::string& cwd = DFW_SOURCE_DIR,
                              const std::string& env = "") {
  std::string cmd = "cd " + ShellQuote(cwd) + " && " + env + " " +
                    ShellQuote(std::string(DFW_BINARY_DIR) + "/src/cli/dfworker");
  for (const auto& a : args) cmd += " " + ShellQuote(a);
  cmd += " 2>&1";
  CliOutcome o;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return o;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) o.out.append(buf.data(), n);
  int status = ::pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

}  // namespace dfw::testing
