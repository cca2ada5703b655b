// The process-wide stop request (dfw/common/stop_request.h).
#include "dfw/common/stop_request.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include <atomic>
#include <string>

namespace dfw {
namespace {

static_assert(kStopBetweenStepsSignal == SIGUSR2, "the stop signal is SIGUSR2");
static_assert(std::atomic<int>::is_always_lock_free, "RequestStop runs in a signal handler");

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_work_cut{false};

void OnStopSignal(int signal) { RequestStop(signal); }

}  // namespace

void RequestStop(int signal) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signal, std::memory_order_relaxed);
}

int StopRequested() { return g_stop_signal.load(std::memory_order_relaxed); }

bool WorkWasCut() { return g_work_cut.load(); }

Status StoppedStatus(const std::string& what) {
  g_work_cut.store(true);
  const int sig = StopRequested();
  const char* name = sig == 0 ? nullptr : sigabbrev_np(sig);
  return Aborted(what + ": the job is stopping" + (name != nullptr ? std::string(" (SIG") + name + ")" : std::string()));
}

Status InstallStopRequestHandler(int signal) {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (::sigaction(signal, &sa, nullptr) != 0) return ErrnoError("install the stop-request handler", errno);
  return Status::OK();
}

}  // namespace dfw
