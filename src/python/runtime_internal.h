// Private to the python module: the started interpreter, for function.cc and template.cc.
#pragma once

#include "dfw/common/status.h"
#include "python/embed_abi.h"

namespace dfw::python_internal {

// The interpreter, started on first call (dfw::python::EnsureStarted's outcome when it failed).
Result<Embedded*> Interpreter();

}  // namespace dfw::python_internal
