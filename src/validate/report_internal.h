// Internal: the parsed options as the dry-run report shows them (report_options.cc).
#pragma once

#include <nlohmann/json.hpp>

#include "dfw/options/options.h"

namespace dfw::validate_internal {

// {"experiments": [...], "dataflow_service_options": [...], "machine_type", ..., "unknown_flags": [...],
//  "sources": {"experiments": "command_line", ...}} — see docs/options.md#the-parsed-options-in-json.
nlohmann::json OptionsJson(const PipelineOptions& options);

}  // namespace dfw::validate_internal
