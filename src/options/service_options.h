// Internal: Dataflow service options by name, and the ways people get them wrong: a service
// option written as a flag of its own, a mangled worker_accelerator, an unknown name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/options/options.h"

namespace dfw::options_internal {

// Names on https://cloud.google.com/dataflow/docs/reference/service-options (the key before '=').
const std::vector<std::string>& KnownServiceOptionNames();

// The service option meant by a flag such as --worker_accelerator, --workerAccelerator,
// --use_nvidia_mps or --enable_prime (name without dashes), or nullopt.
std::optional<std::string> ServiceOptionWrittenAsFlag(std::string_view flag);

// Appends the service-option-as-flag error for `--name[=value]` (`java`: a Java spelling is in use,
// so the fix is written --dataflowServiceOptions).
void ReportServiceOptionAsFlag(const std::string& name, const std::string& service_option, const std::string& value,
                               bool has_value, const Origin& origin, std::size_t at, std::size_t length, bool java,
                               std::vector<Diagnostic>& out);

// For a service option (or experiment) item that is none of the forms dfworker reads: an error when
// it looks like a mangled worker_accelerator (a Python list formatted into a string, quotes kept,
// ':' for '=', a near miss of the name, a bare type:...;count:... value), else for a service option
// a warning that quotes it. Returns true when it reported something.
bool CheckOtherListItem(const OptionValue& v, bool service_option, std::vector<Diagnostic>& out);

}  // namespace dfw::options_internal
