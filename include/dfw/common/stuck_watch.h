// Long-running work reported while it runs, as Dataflow's worker reports it: an activity (a step
// processing a batch) still running after `first_report` is reported by a background thread, and
// again each time its running time doubles (5, 10, 20 minutes, ...), until it ends. Dataflow's line:
// "Processing stuck in step <step> for at least 05m00s without outputting or completing in state
// process" (StuckReportLine).
//
// Thread safety: Watch and the Scope's end may be called from any thread, concurrently.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace dfw {

// "05m00s", "01h02m03s": Dataflow's form of a running time (whole seconds).
std::string StuckDuration(std::chrono::milliseconds elapsed);

// Dataflow's line for a step still processing after `elapsed`.
std::string StuckReportLine(const std::string& step, std::chrono::milliseconds elapsed);

class StuckWatch {
 public:
  using Reporter = std::function<void(const std::string& name, std::chrono::milliseconds elapsed)>;

  // Reports through `reporter`, on the watch's own thread (started on the first Watch).
  StuckWatch(std::chrono::milliseconds first_report, Reporter reporter);
  ~StuckWatch();  // stops the thread; activities still open are no longer reported
  StuckWatch(const StuckWatch&) = delete;
  StuckWatch& operator=(const StuckWatch&) = delete;

  // Ends its activity when destroyed.
  class Scope {
   public:
    Scope(StuckWatch* watch, uint64_t id) : watch_(watch), id_(id) {}
    Scope(Scope&& o) noexcept : watch_(o.watch_), id_(o.id_) { o.watch_ = nullptr; }
    Scope& operator=(Scope&&) = delete;
    ~Scope() {
      if (watch_ != nullptr) watch_->End(id_);
    }

   private:
    StuckWatch* watch_;
    uint64_t id_;
  };

  // Starts watching an activity named `name` (a step's name).
  Scope Watch(std::string name);

 private:
  struct Activity {
    std::string name;
    std::chrono::steady_clock::time_point started;
    std::chrono::milliseconds next_report;  // running time at which it is reported next
  };
  void End(uint64_t id);
  void Loop();

  const std::chrono::milliseconds first_report_;
  const Reporter reporter_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Activity> open_;  // by id: the oldest first
  uint64_t next_id_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dfw
