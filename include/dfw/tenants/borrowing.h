// Borrowing (design.md "Tenants"): each tenant keeps its guaranteed SDK processes; the process slots
// of tenants that have finished go to the tenants still running, in proportion to their
// over_quota_weight, as long as each borrower's GPU-memory budget holds the extra processes.
//
// The share is apportioned by largest remainders (Hamilton): each running tenant's exact quota is
// free_slots * weight / (sum of the weights); every tenant gets the floor, and the slots left go one
// each to the largest fractional parts (ties: file order). A tenant whose memory cap is below its
// share is held at the cap, and the slots it cannot take are shared again among the others.
//
// Pure functions; no I/O. Threading: none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dfw {

struct BorrowTenant {
  std::string name;
  bool running = false;            // only running tenants borrow
  double weight = 1;               // over_quota_weight (> 0)
  // Memory: the tenant's plan (need_bytes) plus `per_process_bytes` for every extra SDK process must
  // stay within budget_bytes. per_process_bytes 0 = an extra process adds no GPU memory (no cap).
  uint64_t budget_bytes = 0;
  uint64_t need_bytes = 0;
  uint64_t per_process_bytes = 0;
};

// How many slots can be lent at all: the guaranteed slots of the tenants not running
// (`freed_slots`), but never so many that the running tenants' SDK processes (`running_guaranteed`
// of them before lending) pass `cpus` — the CPUs they really run on (the worker's vCPUs, or fewer
// where this host has fewer cores: an emulated worker), since a process past them only competes.
int LendableSlots(int freed_slots, int running_guaranteed, int cpus);

// The most extra SDK processes the tenant's budget holds (INT32_MAX-ish when unbounded).
int MemoryCapExtra(const BorrowTenant& t);

// Extra processes per tenant (same order and size as `tenants`; 0 for those not running) when
// `free_slots` slots are shared. The sum is at most free_slots, less only where memory caps stop it.
std::vector<int> ShareFreedSlots(const std::vector<BorrowTenant>& tenants, int free_slots);

}  // namespace dfw
