// What this machine offers, for the plan (cores; whether a CUDA GPU is visible).
#pragma once

#include "dfw/plan/plan.h"

namespace dfw::cli {

// Cheap probe: std::thread::hardware_concurrency() and /dev/nvidia0. The device module's
// Accelerator view replaces the GPU probe once it exists.
HostInfo DetectHost();

}  // namespace dfw::cli
