// The parsed options in the dry-run report: what dfworker read from the command line and the
// options: block, in order, and where each came from — so a user (or scripts/options-vs-beam.sh)
// can compare it with what the SDK reads.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "dfw/validate/report.h"
#include "report_internal.h"

namespace dfw {
namespace {

// The options every report lists, in this order (Python names).
constexpr const char* kReported[] = {
    "experiments",      "dataflow_service_options", "machine_type", "number_of_worker_harness_threads",
    "sdk_worker_parallelism", "resource_hints",     "streaming",    "sdk_container_image",
};

nlohmann::json Values(const std::vector<OptionValue>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const OptionValue& v : list) out.push_back(v.value);
  return out;
}

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

const char* SourceOf(const PipelineOptions& o, const std::string& name) {
  auto it = o.sources.find(name);
  return OptionSourceName(it == o.sources.end() ? OptionSource::kDefault : it->second);
}

std::string QuotedList(const std::vector<OptionValue>& list) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) out += (i ? ", '" : "'") + list[i].value + "'";
  return out + "]";
}

}  // namespace

nlohmann::json validate_internal::OptionsJson(const PipelineOptions& o) {
  nlohmann::json sources = nlohmann::json::object();
  for (const char* name : kReported) sources[name] = SourceOf(o, name);
  return {
      {"experiments", Values(o.experiments)},
      {"dataflow_service_options", Values(o.dataflow_service_options)},
      {"machine_type", o.machine_type ? nlohmann::json(o.machine_type->value) : nlohmann::json(nullptr)},
      {"number_of_worker_harness_threads", OrNull(o.number_of_worker_harness_threads)},
      {"sdk_worker_parallelism", OrNull(o.sdk_worker_parallelism)},
      {"resource_hints", Values(o.resource_hints)},
      {"streaming", o.streaming},
      {"sdk_container_image", OrNull(o.sdk_container_image)},
      {"unknown_flags", o.unknown_flags},
      {"sources", std::move(sources)},
  };
}

std::string RenderOptionsText(const PipelineOptions& o) {
  auto padded = [](std::string label) {
    label += ":";
    label.resize(std::max<std::size_t>(label.size() + 1, 34), ' ');
    return "  " + label;
  };
  auto line = [&](const char* name, const std::string& value) {
    return padded(name) + value + "  (" + SourceOf(o, name) + ")\n";
  };
  std::string out = "options as read\n";
  out += line("experiments", QuotedList(o.experiments));
  out += line("dataflow_service_options", QuotedList(o.dataflow_service_options));
  out += line("machine_type", o.machine_type ? o.machine_type->value : "(none)");
  out += line("number_of_worker_harness_threads",
              o.number_of_worker_harness_threads ? std::to_string(*o.number_of_worker_harness_threads) : "(none)");
  out += line("sdk_worker_parallelism",
              o.sdk_worker_parallelism ? std::to_string(*o.sdk_worker_parallelism) : "(none)");
  out += line("resource_hints", QuotedList(o.resource_hints));
  out += line("streaming", o.streaming ? "true" : "false");
  out += line("sdk_container_image", o.sdk_container_image.value_or("(none)"));
  std::string unknown;
  for (std::size_t i = 0; i < o.unknown_flags.size(); ++i) unknown += (i ? ", --" : "--") + o.unknown_flags[i];
  out += padded("unknown flags") + (unknown.empty() ? std::string("(none)") : unknown) + "\n";
  return out;
}

}  // namespace dfw
