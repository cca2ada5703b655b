#include "dfw/tenants/borrowing.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dfw {

int MemoryCapExtra(const BorrowTenant& t) {
  constexpr int kUnbounded = std::numeric_limits<int>::max();
  if (t.per_process_bytes == 0) return kUnbounded;
  if (t.need_bytes >= t.budget_bytes) return 0;
  const uint64_t room = (t.budget_bytes - t.need_bytes) / t.per_process_bytes;
  return room >= static_cast<uint64_t>(kUnbounded) ? kUnbounded : static_cast<int>(room);
}

int LendableSlots(int freed_slots, int running_guaranteed, int cpus) {
  return std::max(0, std::min(freed_slots, cpus - running_guaranteed));
}

std::vector<int> ShareFreedSlots(const std::vector<BorrowTenant>& tenants, int free_slots) {
  std::vector<int> extra(tenants.size(), 0);
  std::vector<int> cap(tenants.size(), 0);
  std::vector<std::size_t> open;  // tenants still taking slots
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    if (!tenants[i].running || !(tenants[i].weight > 0)) continue;
    cap[i] = MemoryCapExtra(tenants[i]);
    if (cap[i] > 0) open.push_back(i);
  }
  int left = std::max(0, free_slots);
  // Each round either gives out every slot left or holds at least one tenant at its cap.
  while (left > 0 && !open.empty()) {
    double weights = 0;
    for (std::size_t i : open) weights += tenants[i].weight;
    std::vector<int> share(tenants.size(), 0);
    std::vector<std::pair<double, std::size_t>> fractions;  // (fractional part, index)
    int given = 0;
    for (std::size_t i : open) {
      const double quota = static_cast<double>(left) * tenants[i].weight / weights;
      share[i] = static_cast<int>(std::floor(quota));
      given += share[i];
      fractions.push_back({quota - std::floor(quota), i});
    }
    // Largest remainders first; equal ones in file order (stable sort over file-ordered `open`).
    std::stable_sort(fractions.begin(), fractions.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t k = 0; given < left && k < fractions.size(); ++k, ++given) ++share[fractions[k].second];
    std::vector<std::size_t> capped;
    for (std::size_t i : open) {
      if (share[i] > cap[i]) capped.push_back(i);
    }
    if (capped.empty()) {
      for (std::size_t i : open) extra[i] += share[i];
      break;
    }
    // Hold the capped tenants at their caps and share what is left again among the others.
    for (std::size_t i : capped) {
      extra[i] += cap[i];
      left -= cap[i];
      cap[i] = 0;
      open.erase(std::find(open.begin(), open.end(), i));
    }
  }
  return extra;
}

}  // namespace dfw
