// Applying raw flags to PipelineOptions and deriving what the service options, experiments and
// resource hints mean (reference §1–§4).
#include <algorithm>
#include <cctype>

#include "dfw/common/strings.h"
#include "dfw/options/accelerator.h"
#include "dfw/options/list_split.h"
#include "dfw/options/parse.h"
#include "derive.h"
#include "flag_table.h"
#include "list_notes.h"
#include "service_options.h"

namespace dfw {
namespace oi = options_internal;
namespace {

class Applier {
 public:
  explicit Applier(PipelineOptions& o) : o_(o) {}

  template <typename Raw>
  void Apply(const Raw& raw) {
    const oi::FlagSpec* spec = oi::FindFlag(raw.name);
    if (!spec) return UnknownFlag(raw);
    const Origin& origin = raw.origin;
    if (!raw.has_value && spec->kind != oi::FlagKind::kBool && spec->kind != oi::FlagKind::kIgnoredBool) {
      return Syntax(origin, origin.value_offset, 0, "--" + raw.name + " needs a value",
                    "write --" + raw.name + "=VALUE");
    }
    switch (spec->kind) {
      case oi::FlagKind::kList: return ApplyList(*spec, raw);
      case oi::FlagKind::kString: return ApplyString(*spec, raw);
      case oi::FlagKind::kInt: return ApplyInt(*spec, raw);
      case oi::FlagKind::kBool: return ApplyBool(*spec, raw);
      case oi::FlagKind::kIgnored: o_.other[raw.name] = raw.value; return;
      case oi::FlagKind::kIgnoredBool: o_.other[raw.name] = raw.has_value ? raw.value : "true"; return;
    }
  }

 private:
  template <typename Raw>
  void UnknownFlag(const Raw& raw) {
    const std::string& name = raw.name;
    const Origin& origin = raw.origin;
    // Caret under the flag name: "--name" on the command line, "name:" in a YAML line.
    std::size_t at = origin.text.find(name);
    if (at == std::string::npos) at = 0;
    std::size_t length = name.size();
    if (at >= 2 && origin.text.compare(at - 2, 2, "--") == 0) {
      at -= 2;
      length += 2;
    }
    o_.unknown_flags.push_back(name);
    if (auto service_option = oi::ServiceOptionWrittenAsFlag(name)) {
      return oi::ReportServiceOptionAsFlag(name, *service_option, raw.value, raw.has_value, origin, at, length,
                                           o_.java_list_style, o_.diagnostics);
    }
    auto near = oi::NearestSpelling(name);
    const oi::FlagSpec* near_spec = near ? oi::FindFlag(*near) : nullptr;
    // Beam accepts no abbreviation (allow_abbrev=False) and hands unknown arguments to the pipeline's
    // own parser, so a near miss only deserves an error when it would silently change the worker.
    std::optional<std::string> shaping;
    bool abbreviation = false;
    for (const std::string& spelling : oi::AllSpellings()) {
      if (name.size() >= 5 && spelling.size() > name.size() && spelling.compare(0, name.size(), name) == 0 &&
          oi::IsWorkerShaping(oi::FindFlag(spelling)->dest)) {
        shaping = spelling;
        abbreviation = true;
        break;
      }
    }
    if (!shaping && near_spec && oi::IsWorkerShaping(near_spec->dest) && EditDistance(name, *near) <= 2) shaping = near;
    if (shaping) {
      o_.diagnostics.push_back(MakeDiagnostic(
          Severity::kError, "misspelled-flag", "unknown flag '--" + name + "' (did you mean '--" + *shaping + "'?)",
          "--" + *shaping + " decides the worker's shape, so a near miss is refused rather than silently dropped" +
              std::string(abbreviation ? " (Beam accepts no abbreviation of a flag)" : "") + "; write --" + *shaping,
          origin, at, length));
      return;
    }
    o_.diagnostics.push_back(MakeDiagnostic(
        Severity::kWarning, "unknown-flag",
        "unknown flag " + oi::QuoteShort("--" + name) + " is not a Beam pipeline option" +
            (near ? " (did you mean '--" + *near + "'?)" : std::string()),
        "Beam passes arguments it does not know to the pipeline's own argument parser, or drops them with a "
        "warning; dfworker ignores it",
        origin, at, length));
  }

  template <typename Raw>
  void ApplyList(const oi::FlagSpec& spec, const Raw& raw) {
    std::vector<OptionValue>* list = spec.dest == oi::FlagDest::kServiceOptions ? &o_.dataflow_service_options
                                     : spec.dest == oi::FlagDest::kExperiments  ? &o_.experiments
                                                                                 : &o_.resource_hints;
    const ListSplit how = oi::ListSplitFor(spec, raw.name, raw.from_yaml, raw.from_yaml_list, o_.java_list_style);
    const ListSplitResult split = SplitListValue(raw.value, how);
    const std::size_t base = raw.origin.value_offset;
    std::size_t added = 0;
    for (const ListItem& item : split.items) {
      OptionValue v{raw.value.substr(item.offset, item.length), raw.origin};
      v.origin.value_offset = base + item.offset;
      if (v.value.empty()) {  // kNone or kJava: Java refuses an empty element, so do we
        Syntax(raw.origin, v.origin.value_offset, 0, "empty value in --" + raw.name, "remove the empty entry");
        continue;
      }
      list->push_back(std::move(v));
      ++added;
    }
    if (added > 0) MarkSource(spec, raw.from_yaml, /*list=*/true);
    if (how == ListSplit::kBeamPython) {
      oi::NoteBeamPythonSplit(raw.name, raw.value, raw.origin, split, added, o_.diagnostics);
    }
  }

  template <typename Raw>
  void ApplyString(const oi::FlagSpec& spec, const Raw& raw) {
    if (raw.value.empty()) {
      return Syntax(raw.origin, raw.origin.value_offset, 0, "--" + raw.name + " has an empty value", "");
    }
    OptionValue v{raw.value, raw.origin};
    MarkSource(spec, raw.from_yaml, /*list=*/false);
    switch (spec.dest) {
      case oi::FlagDest::kMachineType: o_.machine_type = v; break;
      case oi::FlagDest::kSdkContainerImage: o_.sdk_container_image = raw.value; break;
      case oi::FlagDest::kRunner: o_.runner = raw.value; break;
      case oi::FlagDest::kProject: o_.project = raw.value; break;
      case oi::FlagDest::kRegion: o_.region = raw.value; break;
      case oi::FlagDest::kTempLocation: o_.temp_location = raw.value; break;
      case oi::FlagDest::kPythonEnv: o_.python_env = v; break;
      case oi::FlagDest::kFlexrsGoal:
        // Java's FlexResourceSchedulingGoal also has UNSPECIFIED, which schedules no FlexRS
        // (unverified); Python's choices are the two goals (pipeline_options.py --flexrs_goal).
        if (spec.java && raw.value == "UNSPECIFIED") break;
        if (raw.value != "COST_OPTIMIZED" && raw.value != "SPEED_OPTIMIZED") {
          return Syntax(raw.origin, raw.origin.value_offset, raw.value.size(),
                        "--" + raw.name + " expects COST_OPTIMIZED or SPEED_OPTIMIZED, got '" + raw.value + "'", "");
        }
        o_.flexrs_goal = v;
        break;
      default: break;
    }
  }

  template <typename Raw>
  void ApplyInt(const oi::FlagSpec& spec, const Raw& raw) {
    bool threads = spec.dest == oi::FlagDest::kHarnessThreads;
    const bool row_timeout = spec.dest == oi::FlagDest::kPythonRowTimeout;
    int64_t min = threads ? 1 : 0;
    const int64_t max = row_timeout ? 86400 : 4096;
    auto n = ParseInt64(raw.value);
    if (!n || *n < min || *n > max) {
      return Syntax(raw.origin, raw.origin.value_offset, raw.value.size(),
                    "--" + raw.name + " expects a whole number from " + std::to_string(min) + " to " +
                        std::to_string(max) + ", got '" + raw.value + "'",
                    threads       ? "the number of threads per SDK process, e.g. 4"
                    : row_timeout ? "seconds a Python callable may spend on one row (0 = no limit)"
                                  : "the number of SDK processes per worker (0 lets the runner choose)");
    }
    OptionValue v{raw.value, raw.origin};
    MarkSource(spec, raw.from_yaml, /*list=*/false);
    if (row_timeout) {
      o_.python_row_timeout_s = static_cast<int>(*n);
      o_.python_row_timeout_origin = v;
    } else if (threads) {
      o_.number_of_worker_harness_threads = static_cast<int>(*n);
      o_.number_of_worker_harness_threads_origin = v;
    } else {
      o_.sdk_worker_parallelism = static_cast<int>(*n);
      o_.sdk_worker_parallelism_origin = v;
    }
  }

  template <typename Raw>
  void ApplyBool(const oi::FlagSpec& spec, const Raw& raw) {
    std::string v = raw.value;
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    if (raw.has_value && v != "true" && v != "false") {
      return Syntax(raw.origin, raw.origin.value_offset, raw.value.size(),
                    "--" + raw.name + " expects true or false, got '" + raw.value + "'", "or write --" + raw.name);
    }
    MarkSource(spec, raw.from_yaml, /*list=*/false);
    o_.streaming = !raw.has_value || v == "true";
    o_.streaming_origin = OptionValue{raw.value, raw.origin};
  }

  // Scalars: where the winning value came from. Lists: where their items came from.
  void MarkSource(const oi::FlagSpec& spec, bool from_yaml, bool list) {
    if (spec.dest == oi::FlagDest::kOther) return;
    OptionSource now = from_yaml ? OptionSource::kPipelineYaml : OptionSource::kCommandLine;
    auto [it, inserted] = o_.sources.emplace(oi::CanonicalName(spec.dest), now);
    if (inserted || it->second == now) return;
    it->second = list ? OptionSource::kBoth : now;
  }

  void Syntax(const Origin& origin, std::size_t offset, std::size_t length, std::string message, std::string help) {
    o_.diagnostics.push_back(
        MakeDiagnostic(Severity::kError, "option-syntax", std::move(message), std::move(help), origin, offset, length));
  }

  PipelineOptions& o_;
};

}  // namespace

PipelineOptions OptionsParser::Finish() && {
  PipelineOptions options;
  options.java_list_style = std::any_of(raw_.begin(), raw_.end(), [](const Raw& r) {
    const oi::FlagSpec* spec = oi::FindFlag(r.name);
    return spec && spec->java;
  });
  Applier applier(options);
  for (const Raw& raw : raw_) applier.Apply(raw);
  options.yaml_resource_hints = std::move(yaml_hints_);
  oi::DeriveOptions(options);
  diagnostics_.insert(diagnostics_.end(), options.diagnostics.begin(), options.diagnostics.end());
  options.diagnostics = std::move(diagnostics_);
  return options;
}

}  // namespace dfw
