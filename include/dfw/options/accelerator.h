// The worker_accelerator / accelerator-hint grammar (reference §3, §4):
//   item { ";" item } with item := type:T | count:N | install-nvidia-driver[:ARG] | use_nvidia_mps
//                                 | provisioning_model:FLEX_START
//   (resource hints also allow machine_type:M and other configuration options).
#pragma once

#include <string_view>
#include <vector>

#include "dfw/options/options.h"

namespace dfw {

// Parses `value`, which starts at byte `value_offset` of origin.text (used for carets). Malformed
// input (unknown or duplicate sub-field, missing type/count, count <= 0, bad driver argument)
// appends option-syntax diagnostics; the returned spec holds whatever parsed. Never throws.
AcceleratorSpec ParseAcceleratorSpec(std::string_view value, std::size_t value_offset, AcceleratorForm form,
                                     const Origin& origin, std::vector<Diagnostic>& diagnostics);

// Parses "4GB", "512MiB", "2.5 GB", "1000000" (bytes) for the min_ram hint; nullopt if malformed.
std::optional<uint64_t> ParseByteSize(std::string_view text);

}  // namespace dfw
