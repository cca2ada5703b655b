// `dfworker mps status --job_dir D`: what a running job's MPS daemon and GPU-memory ledger hold.
#pragma once

#include <string>
#include <string_view>

#include "dfw/common/status.h"

namespace dfw::device {

// A text report: the daemon (emulated or nvidia, its pid, or "not running"), one line per client
// (pid, name, thread percentage, pinned limit, allocated memory from the ledger) and the device
// memory totals when the job has a ledger. kNotFound when the job dir has neither MPS dirs nor a
// ledger. `control_program` is the nvidia control binary used for a real daemon.
Result<std::string> DescribeMpsStatus(std::string_view job_dir,
                                      const std::string& control_program = "nvidia-cuda-mps-control");

}  // namespace dfw::device
