#include "flag_table.h"

#include <algorithm>
#include <iterator>

#include "dfw/common/strings.h"

namespace dfw::options_internal {
namespace {

using D = FlagDest;
using K = FlagKind;

// Python spellings from apache_beam/options/pipeline_options.py; Java spellings from the Beam Java
// option interfaces (reference §1). Java list options accept `--x=a,b` (PipelineOptionsFactory).
constexpr FlagSpec kFlags[] = {
    {"dataflow_service_options", D::kServiceOptions, K::kList},
    {"dataflow_service_option", D::kServiceOptions, K::kList},
    {"dataflowServiceOptions", D::kServiceOptions, K::kList, true},
    {"experiments", D::kExperiments, K::kList},
    {"experiment", D::kExperiments, K::kList},
    {"resource_hints", D::kResourceHints, K::kList},
    {"resource_hint", D::kResourceHints, K::kList},
    {"resourceHints", D::kResourceHints, K::kList, true},
    {"machine_type", D::kMachineType, K::kString},
    {"worker_machine_type", D::kMachineType, K::kString},
    {"workerMachineType", D::kMachineType, K::kString, true},
    {"number_of_worker_harness_threads", D::kHarnessThreads, K::kInt},
    {"numberOfWorkerHarnessThreads", D::kHarnessThreads, K::kInt, true},
    {"sdk_worker_parallelism", D::kSdkWorkerParallelism, K::kInt},
    {"sdk_container_image", D::kSdkContainerImage, K::kString},
    {"worker_harness_container_image", D::kSdkContainerImage, K::kString},
    {"sdkContainerImage", D::kSdkContainerImage, K::kString, true},
    {"workerHarnessContainerImage", D::kSdkContainerImage, K::kString, true},
    {"runner", D::kRunner, K::kString},
    {"project", D::kProject, K::kString},
    {"region", D::kRegion, K::kString},
    {"temp_location", D::kTempLocation, K::kString},
    {"tempLocation", D::kTempLocation, K::kString, true},
    {"gcpTempLocation", D::kTempLocation, K::kString, true},
    {"streaming", D::kStreaming, K::kBool},
    // Accepted so real launch lines do not warn, but they do not change a single worker.
    {"job_name", D::kOther, K::kIgnored},
    {"jobName", D::kOther, K::kIgnored, true},
    {"staging_location", D::kOther, K::kIgnored},
    {"stagingLocation", D::kOther, K::kIgnored, true},
    {"num_workers", D::kOther, K::kIgnored},
    {"numWorkers", D::kOther, K::kIgnored, true},
    {"max_num_workers", D::kOther, K::kIgnored},
    {"maxNumWorkers", D::kOther, K::kIgnored, true},
    {"autoscaling_algorithm", D::kOther, K::kIgnored},
    {"disk_size_gb", D::kOther, K::kIgnored},
    {"diskSizeGb", D::kOther, K::kIgnored, true},
    {"service_account_email", D::kOther, K::kIgnored},
    {"serviceAccount", D::kOther, K::kIgnored, true},
    {"network", D::kOther, K::kIgnored},
    {"subnetwork", D::kOther, K::kIgnored},
    {"zone", D::kOther, K::kIgnored},
    {"worker_zone", D::kOther, K::kIgnored},
    {"workerZone", D::kOther, K::kIgnored, true},
    {"setup_file", D::kOther, K::kIgnored},
    {"requirements_file", D::kOther, K::kIgnored},
    {"flexrs_goal", D::kFlexrsGoal, K::kString},
    {"flexRSGoal", D::kFlexrsGoal, K::kString, true},
    // dfworker's own: the user's Python environment (a venv or prefix of Python 3.11) for callables,
    // Jinja templates and the Python-backed IOs, in the launcher and every SDK process.
    {"python_env", D::kPythonEnv, K::kString},
    // dfworker's own: seconds a Python callable may spend on one row before that row fails with
    // TimeoutError (0 or absent: no limit, as on Dataflow).
    {"python_row_timeout", D::kPythonRowTimeout, K::kInt},
    {"labels", D::kOther, K::kIgnored},
    {"environment_type", D::kOther, K::kIgnored},
    {"environment_config", D::kOther, K::kIgnored},
    {"save_main_session", D::kOther, K::kIgnoredBool},
    {"use_public_ips", D::kOther, K::kIgnoredBool},
    {"no_use_public_ips", D::kOther, K::kIgnoredBool},
};

}  // namespace

const FlagSpec* FindFlag(std::string_view spelling) {
  for (const FlagSpec& f : kFlags) {
    if (spelling == f.spelling) return &f;
  }
  return FindBeamFlag(spelling);
}

const std::vector<std::string>& AllSpellings() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v;
    for (const FlagSpec& f : kFlags) v.emplace_back(f.spelling);
    AppendBeamSpellings(v);
    return v;
  }();
  return all;
}

std::optional<std::string> NearestSpelling(std::string_view name) {
  constexpr std::size_t kLongest = 100;  // twice the longest spelling
  if (name.size() > kLongest) return std::nullopt;
  // ClosestMatch accepts a distance up to max(1, size/3); a spelling whose length differs by more
  // cannot be that close, so only the others are compared (a 10,000-flag line stays fast).
  const std::size_t limit = std::max<std::size_t>(1, name.size() / 3);
  std::vector<std::string> near_in_length;
  for (const std::string& s : AllSpellings()) {
    std::size_t diff = s.size() > name.size() ? s.size() - name.size() : name.size() - s.size();
    if (diff <= limit) near_in_length.push_back(s);
  }
  return ClosestMatch(name, near_in_length);
}

bool IsWorkerShaping(FlagDest dest) {
  switch (dest) {
    case D::kServiceOptions: case D::kExperiments: case D::kResourceHints: case D::kMachineType:
    case D::kHarnessThreads: case D::kSdkWorkerParallelism: case D::kSdkContainerImage:
      return true;
    default:
      return false;
  }
}

const char* CanonicalName(FlagDest dest) {
  for (const FlagSpec& f : kFlags) {
    if (f.dest == dest && dest != D::kOther) return f.spelling;
  }
  return "option";
}

}  // namespace dfw::options_internal
