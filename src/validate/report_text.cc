#include "dfw/validate/report.h"
#include "dfw/validate/validate.h"

namespace dfw {

std::string RenderDiagnosticText(const Diagnostic& d) {
  std::string out = std::string(SeverityName(d.severity)) + "[" + d.code + "]: " + d.message + "\n";
  if (d.origin) {
    const Origin& o = *d.origin;
    out += "  --> " + o.where + "\n   |\n   | " + o.text + "\n   | ";
    // Tabs keep their width so the caret lines up under the sub-field.
    for (std::size_t i = 0; i < d.caret_offset && i < o.text.size(); ++i) out += o.text[i] == '\t' ? '\t' : ' ';
    out += std::string(d.caret_length == 0 ? 1 : d.caret_length, '^') + "\n";
  }
  if (!d.help.empty()) out += "   = help: " + d.help + "\n";
  std::string url = DocUrl(d.code);
  if (!url.empty()) out += "   = see: " + url + "\n";
  return out;
}

std::string RenderTextReport(const std::vector<Diagnostic>& diagnostics, const WorkerPlan* plan) {
  std::string out;
  int errors = 0, warnings = 0;
  for (const Diagnostic& d : diagnostics) {
    out += RenderDiagnosticText(d) + "\n";
    (d.severity == Severity::kError ? errors : warnings)++;
  }
  if (plan) out += RenderPlanText(*plan) + "\n";
  out += "dry run: " + std::to_string(errors) + (errors == 1 ? " error, " : " errors, ") + std::to_string(warnings) +
         (warnings == 1 ? " warning" : " warnings") + (errors ? " — the job would be refused\n" : " — ok\n");
  return out;
}

}  // namespace dfw
