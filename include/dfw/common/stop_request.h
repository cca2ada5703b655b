// A process-wide request to stop soon: set from a signal handler (the launcher sends SIGUSR2 to its
// SDK processes when the job is asked to stop), read by loops that can run for a long time between
// bundle boundaries (text generation's decode steps) so that they end between two steps instead of
// at the end of the launcher's grace period.
//
// Threading: RequestStop is async-signal-safe; StopRequested may be called from any thread.
#pragma once

#include "dfw/common/status.h"

namespace dfw {

// The signal sent to a process to ask it to stop between steps.
inline constexpr int kStopBetweenStepsSignal = 12;  // SIGUSR2 on Linux (static_assert in the .cc)

// Records the request (async-signal-safe).
void RequestStop(int signal);

// 0, or the signal that asked this process to stop.
int StopRequested();

// The status a loop returns when it ends for a stop request: kAborted naming the signal and `what`
// was stopped, e.g. "text generation stopped between decode steps: the job is stopping (SIGUSR2)".
// It also records that work was cut short (WorkWasCut): a caller up the stack may have turned the
// status into per-row errors (RunInference's error output), and the bundle must still not commit.
Status StoppedStatus(const std::string& what);

// True once a loop returned StoppedStatus in this process: whatever the bundle then returned, it
// is incomplete, and is neither committed nor failed (it runs again on --resume).
bool WorkWasCut();

// Installs a handler that calls RequestStop for `signal` (SA_RESTART, so system calls in flight are
// resumed, not failed). kIoError when sigaction fails.
Status InstallStopRequestHandler(int signal = kStopBetweenStepsSignal);

}  // namespace dfw
