// Parsing Beam/Dataflow pipeline flags (Python and Java spellings) and the pipeline file's
// top-level `options:` block into one PipelineOptions value.
//
// Parsing never fails: every problem (malformed value, unknown or misspelled flag, bad YAML)
// becomes a Diagnostic in PipelineOptions::diagnostics, so all of them are reported at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dfw/options/options.h"

namespace dfw {

// How a flag consumes the argument after it when written `--flag value`.
enum class FlagArity {
  kUnknown,  // not a pipeline flag this parser knows
  kBool,     // never takes the next argument (--streaming)
  kValue,    // takes the next argument when it does not start with "--"
};

// Arity of `--name` (name without dashes); a near miss of a known flag takes that flag's arity.
FlagArity LookupFlagArity(std::string_view name);

// Whether `--name` (without dashes) is exactly a pipeline flag this parser knows (no near misses).
bool IsKnownPipelineFlag(std::string_view name);

class OptionsParser {
 public:
  // Adds the top-level `options:` mapping of a pipeline file, and the `resource_hints:` of its
  // `pipeline:` and of each transform there (transforms, source, sink, extra_transforms). Other keys
  // are ignored: the pipeline module loads `pipeline:` and refuses a malformed resource_hints (not a
  // mapping, an unknown key, a value that is not a scalar), so such entries are skipped here. Call
  // before AddCommandLine: the command line overrides scalars and appends to lists. `file_name` is
  // used in diagnostics ("file:line:col").
  void AddYamlFile(std::string_view yaml_text, std::string_view file_name);

  // Adds command-line pipeline flags in argv order (both `--flag=value` and `--flag value`).
  void AddCommandLine(const std::vector<std::string>& args);

  // Applies everything added, derives the accelerator/experiment fields and returns the result.
  PipelineOptions Finish() &&;

 private:
  struct Raw {
    std::string name;            // flag name as written, without dashes
    std::string value;           // value text
    bool has_value = false;      // `--flag` alone has none
    bool from_yaml = false;      // from the pipeline file's options: block (read like keyword arguments)
    bool from_yaml_list = false; // an element of a YAML sequence (never comma-split)
    Origin origin;
  };
  std::vector<Raw> raw_;
  std::vector<YamlResourceHint> yaml_hints_;  // from `pipeline:` resource_hints, in file order
  std::vector<Diagnostic> diagnostics_;
};

// Convenience: YAML block (optional) then command line.
PipelineOptions ParsePipelineOptions(const std::vector<std::string>& args, std::string_view yaml_text = {},
                                     std::string_view yaml_file_name = {});

}  // namespace dfw
