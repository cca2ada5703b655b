// Which steps this process is running, kept where another process can read them after this one
// died: a small file of fixed slots, mapped shared, one slot per thread. The SDK harness opens it
// (its job dir's logs/sdk-I.steps); the runner writes a step's name into the calling thread's slot
// for each batch and clears it after; when the process is killed (the kernel's OOM killer, a
// signal) the launcher reads the names still there and says which step the process was in.
//
// Thread safety: Enter/Leave from any thread (each writes only its own slot); Open once, first.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

class StepBoard {
 public:
  static constexpr int kSlots = 64;
  static constexpr int kSlotBytes = 128;  // a name longer than 127 bytes is cut

  // Creates (or empties) `path` and maps it for this process. Until then Enter/Leave do nothing.
  static Status Open(const std::string& path);

  // Writes `name` into this thread's slot / clears it. No allocation, no system call.
  static void Enter(std::string_view name);
  static void Leave();

  // The names in `path`'s slots, in slot order (a missing or short file: none).
  static std::vector<std::string> Read(const std::string& path);
  // " while in step 'A'" (", 'B'" for each further one) for a report of the process's death; "" when
  // the board names no step.
  static std::string DescribeSteps(const std::string& path);

  // Enter on construction, Leave on destruction.
  class Scope {
   public:
    explicit Scope(std::string_view name) { Enter(name); }
    ~Scope() { Leave(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  };
};

}  // namespace dfw
