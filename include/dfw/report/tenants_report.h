// `dfworker report <tenants job dir>`: one page about a tenants run (docs/tenants.md) from its
// tenants_report.json — how each tenant ended, its processes (guaranteed and borrowed), the
// borrowing events, and each tenant's GPU memory over time against its budget (chart ids
// chart-tenant-memory-<name>). Each tenant's own job dir keeps its own report page.
#pragma once

#include <string>

#include "dfw/common/status.h"

namespace dfw::report {

// Whether `dir` is the job dir of a tenants run (it has tenants_report.json).
bool IsTenantsJobDir(const std::string& dir);
// The page; kDataLoss naming the file when tenants_report.json is not what a tenants run writes.
Result<std::string> RenderTenantsReportHtml(const std::string& dir);

}  // namespace dfw::report
