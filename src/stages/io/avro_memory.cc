#include "avro_memory.h"

#include <avro.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>

namespace dfw::stages_io {
namespace {

struct AvroBudgetState {
  bool active = false;
  int64_t limit = 0;
  int64_t used = 0;  // bytes allocated minus bytes freed since the scope began
};
thread_local AvroBudgetState t_avro_budget;
thread_local std::unordered_set<void*>* t_avro_live = nullptr;  // set by AvroAllocationScope

void* BudgetedRealloc(void* /*user_data*/, void* ptr, size_t osize, size_t nsize) {
  AvroBudgetState& b = t_avro_budget;
  if (nsize == 0) {
    if (t_avro_live != nullptr) t_avro_live->erase(ptr);
    std::free(ptr);
    if (b.active) b.used -= static_cast<int64_t>(osize);
    return nullptr;
  }
  if (b.active) {
    // Sizes beyond the budget are refused before they reach the system allocator (a file can
    // claim 2^63 bytes; asking malloc for that is itself a failure under sanitizers).
    const int64_t grow = static_cast<int64_t>(nsize > osize ? nsize - osize : 0);
    if (nsize > static_cast<size_t>(b.limit) || b.used + grow > b.limit) return nullptr;
  }
  void* p = std::realloc(ptr, nsize);
  if (p != nullptr && b.active) b.used += static_cast<int64_t>(nsize) - static_cast<int64_t>(osize);
  if (p != nullptr && t_avro_live != nullptr) {
    if (ptr != nullptr) t_avro_live->erase(ptr);
    t_avro_live->insert(p);
  }
  return p;
}

}  // namespace

void InstallAvroAllocator() {
  static std::once_flag once;
  std::call_once(once, [] { avro_set_allocator(BudgetedRealloc, nullptr); });
}

AvroMemoryBudget::AvroMemoryBudget(std::size_t limit_bytes) {
  InstallAvroAllocator();
  t_avro_budget = AvroBudgetState{true, static_cast<int64_t>(limit_bytes), 0};
}

AvroMemoryBudget::~AvroMemoryBudget() { t_avro_budget = AvroBudgetState{}; }

void AvroAllocations::FreeAll() {
  for (void* p : live_) std::free(p);
  live_.clear();
}

AvroAllocationScope::AvroAllocationScope(AvroAllocations& allocations) : previous_(t_avro_live) {
  InstallAvroAllocator();
  t_avro_live = &allocations.live_;
}

AvroAllocationScope::~AvroAllocationScope() { t_avro_live = previous_; }

}  // namespace dfw::stages_io
