// The job's bundle table as the launcher planned it, kept in job.json (JobInfo param
// kBundleTableParam) so SDK processes run bundles without planning them again. Planning a file
// source reads every input file (to cut ranges at record boundaries and number lines), so N SDK
// processes re-planning at start-up would read the whole input N more times.
//
// The text form is the job module's range table (dfw/job/work_range.h) with numeric bundle ids;
// these functions convert between it and the pipeline module's Bundle.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/job/work_range.h"
#include "dfw/pipeline/runner.h"

namespace dfw {

WorkRange ToWorkRange(const Bundle& b);
Bundle FromWorkRange(int64_t id, const WorkRange& r);

// nullopt when a path contains a newline (the table cannot hold it; SDK processes then re-plan).
std::optional<std::string> EncodeBundleTable(const std::vector<Bundle>& bundles);

// kDataLoss naming the line and what is wrong (missing field, not a number, begin > end, ...).
Result<std::vector<Bundle>> DecodeBundleTable(std::string_view text);

}  // namespace dfw
