// What this machine offers, for the plan: cores, and the accelerator the device module selects.
#pragma once

#include <string>

#include "dfw/catalog/catalog.h"
#include "dfw/device/accelerator.h"
#include "dfw/options/options.h"
#include "dfw/plan/plan.h"

namespace dfw {

struct HostView {
  HostInfo host;                  // cores, visible CUDA GPUs, the selected backend (for MakePlan)
  device::Accelerator accelerator;  // the device module's selection (kind none when it failed)
  Status selection;               // why --accelerator_backend could not be honoured (OK otherwise)
};

// Cores from std::thread::hardware_concurrency(); the accelerator from device::SelectAccelerator
// over the system GPU probe (dlopen'd driver) and, only when a GPU is visible, an attempt to load
// the CUDA backend library. The declared accelerator is the options' worker_accelerator (else the
// accelerator resource hint) when the catalog knows its type.
// `quiet` silences the device module's one log line about the choice (the dry run reports it in the
// plan instead, so that its report is the only output).
HostView DetectHost(const PipelineOptions& options, const Catalog& catalog, device::AcceleratorBackend backend,
                    bool quiet);

}  // namespace dfw
