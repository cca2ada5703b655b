#include "dfw/common/step_board.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace dfw {
namespace {

constexpr std::size_t kBoardBytes = std::size_t{StepBoard::kSlots} * StepBoard::kSlotBytes;

std::atomic<char*> g_board{nullptr};
std::atomic<int> g_next_slot{0};

char* ThisThreadsSlot() {
  char* board = g_board.load(std::memory_order_acquire);
  if (board == nullptr) return nullptr;
  thread_local const int slot = g_next_slot.fetch_add(1, std::memory_order_relaxed) % StepBoard::kSlots;
  return board + static_cast<std::size_t>(slot) * StepBoard::kSlotBytes;
}

}  // namespace

Status StepBoard::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable("cannot open " + path + ": " + std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(kBoardBytes)) != 0) {
    const int err = errno;
    ::close(fd);
    return Unavailable("cannot size " + path + ": " + std::strerror(err));
  }
  void* p = ::mmap(nullptr, kBoardBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping stays
  if (p == MAP_FAILED) return Unavailable("cannot map " + path + ": " + std::strerror(err));
  char* expected = nullptr;
  if (!g_board.compare_exchange_strong(expected, static_cast<char*>(p), std::memory_order_acq_rel)) {
    ::munmap(p, kBoardBytes);  // opened already: the first board stays
  }
  return Status::OK();
}

void StepBoard::Enter(std::string_view name) {
  char* slot = ThisThreadsSlot();
  if (slot == nullptr) return;
  const std::size_t n = std::min<std::size_t>(name.size(), kSlotBytes - 1);
  std::memcpy(slot, name.data(), n);
  slot[n] = '\0';
}

void StepBoard::Leave() {
  if (char* slot = ThisThreadsSlot()) slot[0] = '\0';
}

std::vector<std::string> StepBoard::Read(const std::string& path) {
  std::vector<std::string> names;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return names;
  std::string bytes(kBoardBytes, '\0');
  const ssize_t got = ::pread(fd, bytes.data(), bytes.size(), 0);
  ::close(fd);
  for (ssize_t at = 0; at + kSlotBytes <= got; at += kSlotBytes) {
    const char* slot = bytes.data() + at;
    const std::size_t len = ::strnlen(slot, kSlotBytes - 1);
    if (len > 0) names.emplace_back(slot, len);
  }
  return names;
}

std::string StepBoard::DescribeSteps(const std::string& path) {
  std::string out;
  for (const std::string& step : Read(path)) out += (out.empty() ? " while in step '" : ", '") + step + "'";
  return out;
}

}  // namespace dfw
