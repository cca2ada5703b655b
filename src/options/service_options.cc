#include "service_options.h"

#include <algorithm>
#include <cctype>

#include "dfw/common/strings.h"
#include "list_notes.h"

namespace dfw::options_internal {
namespace {

constexpr std::string_view kAccel = "worker_accelerator";

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Where "worker_accelerator" (any case, '-' for '_', or camelCase) followed by '=' or ':' starts in
// `value`, or npos (an experiment that merely mentions the name is left alone).
std::size_t FindAcceleratorName(std::string_view value) {
  std::string lower = Lower(value);
  for (std::string_view spelling : {"worker_accelerator", "worker-accelerator", "workeraccelerator"}) {
    for (std::size_t at = lower.find(spelling); at != std::string::npos; at = lower.find(spelling, at + 1)) {
      std::size_t next = at + spelling.size();
      if (next < lower.size() && (lower[next] == '=' || lower[next] == ':')) return at;
    }
  }
  return std::string::npos;
}

// The worker_accelerator value someone probably meant: from the name to the first quote, bracket or
// space, with "=" after the name.
std::string IntendedAccelerator(std::string_view value, std::size_t at) {
  std::size_t end = value.find_first_of("'\"[] ", at);
  std::string_view inner = value.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
  std::size_t sep = inner.find_first_of("=:");
  std::string rest = sep == std::string_view::npos ? "" : std::string(inner.substr(sep + 1));
  return std::string(kAccel) + "=" + (rest.empty() ? "type:<gpu>;count:1;install-nvidia-driver" : rest);
}

}  // namespace

const std::vector<std::string>& KnownServiceOptionNames() {
  // From the service-options page (reference SO); the page is the source, the list may lag it.
  static const std::vector<std::string> names = {
      "automatically_use_created_reservation",
      "block_project_ssh_keys",
      "enable_confidential_compute",
      "enable_dynamic_thread_scaling",
      "enable_google_cloud_heap_sampling",
      "enable_google_cloud_profiler",
      "enable_hot_key_logging",
      "enable_preflight_validation",
      "enable_prime",
      "enable_streaming_engine_resource_based_billing",
      "max_workflow_runtime_walltime_seconds",
      "streaming_mode_at_least_once",
      "streaming_mode_exactly_once",
      "worker_accelerator",
      "worker_utilization_hint",
  };
  return names;
}

std::optional<std::string> ServiceOptionWrittenAsFlag(std::string_view flag) {
  struct Spelling { const char* flag; const char* option; };
  static constexpr Spelling kSpellings[] = {
      {"worker_accelerator", "worker_accelerator"}, {"workerAccelerator", "worker_accelerator"},
      {"worker-accelerator", "worker_accelerator"}, {"use_nvidia_mps", "use_nvidia_mps"},
      {"useNvidiaMps", "use_nvidia_mps"},           {"enable_prime", "enable_prime"},
      {"enablePrime", "enable_prime"},
  };
  for (const Spelling& s : kSpellings) {
    if (flag == s.flag) return std::string(s.option);
  }
  return std::nullopt;
}

void ReportServiceOptionAsFlag(const std::string& name, const std::string& service_option, const std::string& value,
                               bool has_value, const Origin& origin, std::size_t at, std::size_t length, bool java,
                               std::vector<Diagnostic>& out) {
  const std::string list_flag = java ? "--dataflowServiceOptions" : "--dataflow_service_options";
  std::string message, fix;
  if (service_option == "use_nvidia_mps") {
    message = "'--" + name + "' is not a flag: use_nvidia_mps is a sub-field of the worker_accelerator service "
              "option, so Dataflow ignores it and starts no MPS daemon";
    fix = "append it to the accelerator: " + list_flag +
          "=\"worker_accelerator=type:<gpu>;count:1;install-nvidia-driver;use_nvidia_mps\"";
  } else if (service_option == "enable_prime") {
    message = "'--" + name + "' is not a flag: enable_prime is a Dataflow service option, so Dataflow ignores it "
              "and the job runs without Prime";
    fix = "write " + list_flag + "=enable_prime";
  } else {
    std::string shown = has_value && !value.empty() ? value : "type:<gpu>;count:1;install-nvidia-driver";
    message = "'--" + name + (has_value ? "=" + value.substr(0, 200) : "") +
              "' is a Dataflow service option written as a flag of its own: Dataflow ignores the flag and starts "
              "the job with no GPU at all";
    fix = "write " + list_flag + "=\"worker_accelerator=" + shown.substr(0, 200) + "\"";
  }
  out.push_back(MakeDiagnostic(Severity::kError, "service-option-as-flag", std::move(message), std::move(fix), origin,
                               at, length));
}

bool CheckOtherListItem(const OptionValue& v, bool service_option, std::vector<Diagnostic>& out) {
  const std::string& value = v.value;
  const std::string key = value.substr(0, value.find('='));
  const std::size_t at = FindAcceleratorName(value);
  const bool bare_value = value.rfind("type:", 0) == 0 && value.find("count:") != std::string::npos;
  const auto& known = KnownServiceOptionNames();
  const bool is_known = std::find(known.begin(), known.end(), key) != known.end();
  const bool near_miss = at == std::string::npos && !bare_value && !is_known && key.size() <= 64 &&
                         key.find(':') == std::string::npos && ClosestMatch(key, {std::string(kAccel)}).has_value();
  if (at != std::string::npos || bare_value || near_miss) {
    std::string intended = bare_value ? std::string(kAccel) + "=" + value
                           : near_miss ? std::string(kAccel) + value.substr(key.size())
                                       : IntendedAccelerator(value, at);
    std::string what = value.find('[') != std::string::npos ? "a Python list formatted into a string?"
                       : bare_value                          ? "the value without 'worker_accelerator=' in front"
                       : near_miss                           ? "a misspelled name"
                                                             : "quotes or ':' where '=' belongs";
    out.push_back(MakeDiagnostic(
        Severity::kError, "accelerator-mangled",
        std::string(service_option ? "service option " : "experiment ") + QuoteShort(value) +
            " looks like a mangled worker_accelerator (" + what +
            "): Dataflow does not read it as one and starts the job without a GPU",
        "pass the bare value: " + std::string(service_option ? "--dataflow_service_options" : "--experiments") +
            "=\"" + intended.substr(0, 300) + "\"",
        v.origin, v.origin.value_offset, value.size()));
    return true;
  }
  if (!service_option || is_known) return false;
  out.push_back(MakeDiagnostic(Severity::kWarning, "service-option-unknown",
                               "unknown service option " + QuoteShort(value) +
                                   ": Dataflow receives it unchecked; dfworker ignores it" +
                                   (key.size() <= 64 ? DidYouMeanSuffix(key, known) : std::string()),
                               "service options: https://cloud.google.com/dataflow/docs/reference/service-options",
                               v.origin, v.origin.value_offset, key.size()));
  return true;
}

}  // namespace dfw::options_internal
