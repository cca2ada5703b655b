// Kept for the device module's own includes; the declarations are public (other modules check
// model hosts' liveness with them).
#pragma once

#include "dfw/device/process_info.h"
