#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "dfw/common/file.h"
#include "dfw/common/strings.h"
#include "dfw/common/test_hooks.h"
#include "dfw/job/protocol.h"
#include "dfw/worker/bundle_executor.h"
#include "dfw/worker/pipeline_job.h"

namespace dfw {
namespace {

struct Hooks {
  std::string crash_on;
  std::string hang_on;
  std::string hang_once_file;
  int64_t delay_us = 0;
  int64_t spin_us = 0;

  static Hooks FromEnv() {
    Hooks h;
    h.crash_on = test_hooks::Get("CRASH_ON_RECORD").value_or("");
    h.hang_on = test_hooks::Get("HANG_ON_RECORD").value_or("");
    h.hang_once_file = test_hooks::Get("HANG_ONCE_FILE").value_or("");
    h.delay_us = ParseInt64(test_hooks::Get("RECORD_DELAY_US").value_or("0")).value_or(0);
    h.spin_us = ParseInt64(test_hooks::Get("RECORD_SPIN_US").value_or("0")).value_or(0);
    return h;
  }

  void OnRecord(const std::string& line) const {
    if (!crash_on.empty() && line == crash_on) std::abort();
    if (!hang_on.empty() && line == hang_on) {
      int fd = hang_once_file.empty() ? -1 : ::open(hang_once_file.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (fd >= 0) {
        ::close(fd);
        ::raise(SIGSTOP);  // every thread stops: the process is hung and silent
      }
    }
    if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    if (spin_us > 0) {  // CPU-bound work per record (benchmarks of process scaling)
      auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  }
};

class LineRangeExecutor final : public BundleExecutor {
 public:
  LineRangeExecutor(std::string input, std::string sink) : input_(std::move(input)), sink_(std::move(sink)), hooks_(Hooks::FromEnv()) {}

  Status RunBundle(const std::string& bundle_id, const std::string& staging_dir, MetricsSnapshot* metrics) override {
    auto parts = Split(bundle_id, '-');
    std::optional<int64_t> first = parts.size() == 2 ? ParseInt64(parts[0]) : std::nullopt;
    std::optional<int64_t> end = parts.size() == 2 ? ParseInt64(parts[1]) : std::nullopt;
    if (!first || !end || *first < 0 || *end < *first) {
      return InvalidArgument("bundle id '" + bundle_id + "' is not a line range '<first>-<end>'");
    }
    ASSIGN_OR_RETURN(std::string input, ReadWholeFile(input_));
    std::string dir = staging_dir + "/" + sink_;
    if (::mkdir(staging_dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("create '" + staging_dir + "'", errno);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("create '" + dir + "'", errno);
    std::string out;
    int64_t n = 0;
    std::size_t pos = 0;
    for (int64_t i = 0; i < *end && pos < input.size(); ++i) {
      std::size_t eol = input.find('\n', pos);
      if (eol == std::string::npos) eol = input.size();
      const std::string line = input.substr(pos, eol - pos);
      pos = eol + 1;
      if (i < *first) continue;
      hooks_.OnRecord(line);
      out += line + '\n';
      ++n;
    }
    RETURN_IF_ERROR(WriteFileAtomically(dir + "/bundle-" + bundle_id + ".done", out));
    metrics->counters[{kRecordsNamespace, kRecordsCounter}] += n;
    metrics->counters[{"dfworker", "bundles"}] += 1;
    return Status::OK();
  }

 private:
  std::string input_;
  std::string sink_;
  Hooks hooks_;
};

}  // namespace

std::unique_ptr<BundleExecutor> MakeLineRangeExecutor(const JobInfo& job) {
  auto in = job.params.find("input");
  auto sink = job.params.find("sink");
  return std::make_unique<LineRangeExecutor>(in == job.params.end() ? "" : in->second,
                                             sink == job.params.end() ? "out" : sink->second);
}

std::vector<std::string> LineRangeBundles(int64_t line_count, int64_t lines_per_bundle) {
  std::vector<std::string> ids;
  if (lines_per_bundle <= 0) return ids;
  for (int64_t first = 0; first < line_count; first += lines_per_bundle) {
    ids.push_back(std::to_string(first) + "-" + std::to_string(std::min(line_count, first + lines_per_bundle)));
  }
  return ids;
}

Result<std::unique_ptr<BundleExecutor>> MakeExecutorForJob(const JobInfo& job, const ExecutorContext& context) {
  if (job.executor == "pipeline") return MakePipelineExecutor(job, context);
  if (job.executor == "lines") {
    if (!job.params.count("input")) return InvalidArgument("job.json: executor 'lines' needs param 'input'");
    return MakeLineRangeExecutor(job);
  }
  return Unimplemented("job.json: executor '" + job.executor + "' is unknown; allowed: pipeline, lines");
}

}  // namespace dfw
