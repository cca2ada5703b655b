// Placeholder until the launcher exists: the lead replaces this file with the real launcher call.
#include "run_job.h"

#include <iostream>

#include "dfw/common/exit_code.h"

namespace dfw::cli {

int RunJob(const RunContext& context) {
  std::cerr << "dfworker: error: running pipelines is not implemented yet; '" << context.pipeline_path
            << "' passed validation. Use --dry_run to print the worker plan.\n"
            << "run stopped: not implemented\n";
  return static_cast<int>(ExitCode::kInvalidInvocation);
}

}  // namespace dfw::cli
