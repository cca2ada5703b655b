// Internal: what the raw service options, experiments and resource hints mean.
#pragma once

#include "dfw/options/options.h"

namespace dfw::options_internal {

// Fills worker_accelerator, accelerator_hint, min_ram_bytes, enable_prime,
// no_use_multiple_sdk_containers and standalone_mps; appends diagnostics for malformed values.
void DeriveOptions(PipelineOptions& options);

// resource_hints.cc: the resource hints of the flags, the options: block and the pipeline file
// (YamlResourceHint) → accelerator_hint, min_ram_bytes, cpu_count, transform_hints (+ origins).
void DeriveResourceHints(PipelineOptions& options);

}  // namespace dfw::options_internal
