// Naming one process across pid reuse: a pid plus its start time (from /proc). Used by the ledger,
// the MPS daemon and by SDK processes that check that the model host holding their copy still runs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace dfw::device {

// The process's start time in clock ticks since boot (/proc/<pid>/stat field 22), or nullopt if
// the process does not exist. Together with the pid it names one process even after pid reuse.
std::optional<uint64_t> ProcessStartTime(pid_t pid);

// True if `pid` runs and is not a zombie, and (when start_time != 0) started at `start_time`.
bool ProcessAlive(pid_t pid, uint64_t start_time);

}  // namespace dfw::device
