// Diagnostic: one finding about the user's options, with a stable code and where it came from.
//
// The options parser emits syntax-level diagnostics (option-syntax, unknown-flag, misspelled-flag);
// the validate module adds rule-level ones and renders them (text like a compiler, or JSON).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dfw {

// Where an option value came from, so a diagnostic can quote it and draw a caret under it.
struct Origin {
  std::string where;             // "command line argument 3" or "pipelines/default.yaml:12:5"
  std::string text;              // the argument (or YAML line) exactly as written
  std::size_t value_offset = 0;  // byte offset of the value inside `text`
};

enum class Severity { kWarning, kError };

const char* SeverityName(Severity severity);  // "warning" / "error"

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string code;     // stable rule code, e.g. "mps-multi-gpu"
  std::string message;  // quotes the offending value
  std::string help;     // how to fix it; may be empty
  std::optional<Origin> origin;  // absent for findings not tied to one flag
  std::size_t caret_offset = 0;  // byte offset inside origin->text of the offending sub-field
  std::size_t caret_length = 0;  // 0 = point at the whole value
};

// Builds a diagnostic pointing at `length` bytes at `offset` of origin.text.
Diagnostic MakeDiagnostic(Severity severity, std::string code, std::string message, std::string help,
                          const Origin& origin, std::size_t offset, std::size_t length);

bool HasErrors(const std::vector<Diagnostic>& diagnostics);

}  // namespace dfw
