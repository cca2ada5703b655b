// The one rule for a child process's environment (SDK processes, model hosts, MPS daemons, probes):
// this process's environment, plus `defaults` for keys it does not have, with `overrides` replacing
// inherited keys. So the job's own settings (its private CUDA_MPS_PIPE_DIRECTORY, its ledger) reach
// every child the same way even when the user exported the same variable, while a default such as
// OPENBLAS_NUM_THREADS=1 leaves a value the user exported alone.
#pragma once

#include <string>
#include <vector>

namespace dfw {

// Entries are "KEY=VALUE"; within `overrides` a later entry of one key wins over an earlier one.
// Allocates: call it before fork, never in the child.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& overrides,
                                          const std::vector<std::string>& defaults = {});

}  // namespace dfw
