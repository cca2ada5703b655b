#include "process_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace dfw::testing {

Started StartProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     const std::string& stderr_path) {
  std::vector<std::string> env_all;
  for (char** e = environ; *e; ++e) env_all.emplace_back(*e);
  env_all.insert(env_all.end(), env.begin(), env.end());
  std::vector<char*> a, e;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  for (auto& s : env_all) e.push_back(s.data());
  e.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execve(a[0], a.data(), e.data());
    ::_exit(127);
  }
  return Started{pid, stderr_path};
}

int WaitExit(pid_t pid, int limit_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

namespace {

template <typename Fn>
void ForEachProcess(Fn fn) {
  DIR* d = ::opendir("/proc");
  if (!d) return;
  while (dirent* ent = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(ent->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    fn(static_cast<pid_t>(pid), std::string("/proc/") + ent->d_name);
  }
  ::closedir(d);
}

// (state, ppid) from /proc/PID/stat; the command name may contain spaces, so parse after ')'.
bool StatOf(const std::string& dir, char* state, pid_t* ppid) {
  std::string stat = ReadFile(dir + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream in(stat.substr(close + 1));
  in >> *state >> *ppid;
  return static_cast<bool>(in);
}

}  // namespace

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  ForEachProcess([&](pid_t pid, const std::string& dir) {
    char state = 0;
    pid_t ppid = 0;
    if (StatOf(dir, &state, &ppid) && ppid == parent && state != 'Z') out.push_back(pid);
  });
  return out;
}

std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> out;
  ForEachProcess([&](pid_t pid, const std::string& dir) {
    std::string cmd = ReadFile(dir + "/cmdline");
    for (char& c : cmd) {
      if (c == '\0') c = ' ';
    }
    char state = 0;
    pid_t ppid = 0;
    if (cmd.find(needle) != std::string::npos && StatOf(dir, &state, &ppid) && state != 'Z') out.push_back(pid);
  });
  return out;
}

int CountLines(const std::string& path) {
  std::string text = ReadFile(path);
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

std::vector<std::string> LinesOfFilesIn(const std::filesystem::path& folder, int* files) {
  std::vector<std::string> lines;
  int n = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    ++n;
    std::ifstream in(it->path());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  if (files != nullptr) *files = n;
  return lines;
}

void ExpectExactlyOnce(const std::vector<std::string>& lines, const std::regex& row, std::size_t expected,
                       const std::string& context, const std::function<void(const std::smatch&)>& check) {
  std::map<long, int> seen;
  for (const std::string& line : lines) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) {
      ADD_FAILURE() << "unexpected output line: " << line;
      continue;
    }
    if (check) check(m);
    ++seen[std::stol(m[1])];
  }
  EXPECT_EQ(seen.size(), expected) << context;
  for (const auto& [id, count] : seen) EXPECT_EQ(count, 1) << "record " << id << " written " << count << " times";
}

}  // namespace dfw::testing
