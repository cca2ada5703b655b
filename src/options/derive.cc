#include "derive.h"

#include <algorithm>

#include "dfw/common/strings.h"
#include "dfw/options/accelerator.h"
#include "service_options.h"

namespace dfw::options_internal {
namespace {

constexpr std::string_view kWorkerAccelerator = "worker_accelerator=";

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

void Add(PipelineOptions& o, Severity severity, std::string code, const OptionValue& v, std::size_t offset,
         std::size_t length, std::string message, std::string help) {
  o.diagnostics.push_back(
      MakeDiagnostic(severity, std::move(code), std::move(message), std::move(help), v.origin, offset, length));
}

void SetWorkerAccelerator(PipelineOptions& o, const OptionValue& v, AcceleratorForm form) {
  std::size_t offset = v.origin.value_offset + kWorkerAccelerator.size();
  AcceleratorSpec spec = ParseAcceleratorSpec(std::string_view(v.value).substr(kWorkerAccelerator.size()), offset,
                                              form, v.origin, o.diagnostics);
  if (o.worker_accelerator) {
    Add(o, Severity::kError, "accelerator-duplicate", v, v.origin.value_offset, v.value.size(),
        "worker_accelerator given twice: '" + v.value + "' after '" + o.worker_accelerator->origin.text + "' (" +
            o.worker_accelerator->origin.where + ")",
        "keep one worker_accelerator; lists from the pipeline file and the command line are appended, not replaced");
    return;
  }
  o.worker_accelerator = std::move(spec);
}

// A service option that still holds a comma after splitting (Beam keeps commas once an item has
// two '=', and the options: block is never split): warn when a piece looks like an option of its own.
bool CheckKeptComma(PipelineOptions& o, const OptionValue& v) {
  if (v.value.find(',') == std::string::npos) return false;
  std::vector<std::string> pieces = Split(v.value, ',');
  for (std::size_t i = 1; i < pieces.size(); ++i) {
    std::string_view piece = Trim(pieces[i]);
    if (piece == "enable_prime" || piece == "use_nvidia_mps" || StartsWith(piece, kWorkerAccelerator)) {
      const bool command_line = v.origin.where == "command line";
      Add(o, Severity::kWarning, "service-option-comma", v, v.origin.value_offset, v.value.size(),
          "'" + v.value + "' is ONE service option: " +
              (command_line ? "it holds more than one '=' before the comma, so Beam keeps the comma inside it"
                            : "the options: block is read like keyword arguments, so commas do not split it"),
          command_line ? "repeat --dataflow_service_options once per option"
                       : "write one list element per service option");
      return true;
    }
  }
  return false;
}

void DeriveServiceOptions(PipelineOptions& o) {
  for (const OptionValue& v : o.dataflow_service_options) {
    if (StartsWith(v.value, kWorkerAccelerator)) {
      CheckKeptComma(o, v);
      SetWorkerAccelerator(o, v, AcceleratorForm::kServiceOption);
    } else if (v.value == "worker_accelerator") {
      Add(o, Severity::kError, "option-syntax", v, v.origin.value_offset, v.value.size(),
          "service option 'worker_accelerator' needs a value",
          "e.g. worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver");
    } else if (v.value == "enable_prime") {
      o.enable_prime = v;
    } else if (v.value == "use_nvidia_mps") {
      o.standalone_mps.push_back(v);
    } else if (!CheckKeptComma(o, v)) {
      CheckOtherListItem(v, /*service_option=*/true, o.diagnostics);
    }
  }
}

void DeriveExperiments(PipelineOptions& o) {
  for (const OptionValue& v : o.experiments) {
    if (StartsWith(v.value, kWorkerAccelerator)) {
      SetWorkerAccelerator(o, v, AcceleratorForm::kExperiment);
    } else if (v.value == "no_use_multiple_sdk_containers") {
      o.no_use_multiple_sdk_containers = v;
    } else if (v.value == "use_nvidia_mps") {
      o.standalone_mps.push_back(v);
    } else if (v.value == "enable_prime") {
      o.enable_prime = v;
    } else {
      CheckOtherListItem(v, /*service_option=*/false, o.diagnostics);
    }
  }
}

}  // namespace

void DeriveOptions(PipelineOptions& options) {
  DeriveServiceOptions(options);
  DeriveExperiments(options);
  DeriveResourceHints(options);
}

}  // namespace dfw::options_internal
