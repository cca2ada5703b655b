#include "dfw/options/diagnostic.h"
#include "dfw/options/options.h"

#include <algorithm>

namespace dfw {

const char* SeverityName(Severity severity) { return severity == Severity::kError ? "error" : "warning"; }

Diagnostic MakeDiagnostic(Severity severity, std::string code, std::string message, std::string help,
                          const Origin& origin, std::size_t offset, std::size_t length) {
  Diagnostic d;
  d.severity = severity;
  d.code = std::move(code);
  d.message = std::move(message);
  d.help = std::move(help);
  d.origin = origin;
  d.caret_offset = std::min(offset, origin.text.size());
  d.caret_length = std::min(length, origin.text.size() - d.caret_offset);
  return d;
}

bool HasErrors(const std::vector<Diagnostic>& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

const char* OptionSourceName(OptionSource source) {
  switch (source) {
    case OptionSource::kDefault: return "default";
    case OptionSource::kPipelineYaml: return "pipeline_yaml";
    case OptionSource::kCommandLine: return "command_line";
    case OptionSource::kBoth: return "pipeline_yaml+command_line";
  }
  return "?";
}

const char* AcceleratorFormName(AcceleratorForm form) {
  switch (form) {
    case AcceleratorForm::kServiceOption: return "service option";
    case AcceleratorForm::kExperiment: return "experiment";
    case AcceleratorForm::kResourceHint: return "resource hint";
  }
  return "?";
}

}  // namespace dfw
