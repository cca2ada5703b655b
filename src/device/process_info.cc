#include "process_info.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace dfw::device {
namespace {

struct StatFields {
  char state = '?';
  uint64_t start_time = 0;
};

std::optional<StatFields> ReadStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  // The command name (field 2) may contain spaces and ')'; fields after the last ')' are fixed.
  std::string s(buf, static_cast<std::size_t>(n));
  std::size_t close = s.rfind(')');
  if (close == std::string::npos || close + 2 >= s.size()) return std::nullopt;
  StatFields f;
  f.state = s[close + 2];
  // Field 3 is the state; field 22 is the start time: 19 more separators after the state.
  std::size_t pos = close + 2;
  for (int field = 3; field < 22 && pos != std::string::npos; ++field) {
    pos = s.find(' ', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos == std::string::npos) return std::nullopt;
  f.start_time = std::strtoull(s.c_str() + pos, nullptr, 10);
  return f;
}

}  // namespace

std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  std::optional<StatFields> f = ReadStat(pid);
  if (!f) return std::nullopt;
  return f->start_time;
}

bool ProcessAlive(pid_t pid, uint64_t start_time) {
  std::optional<StatFields> f = ReadStat(pid);
  if (!f || f->state == 'Z' || f->state == 'X') return false;
  return start_time == 0 || f->start_time == start_time;
}

}  // namespace dfw::device
