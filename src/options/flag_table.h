// The table of pipeline flags dfworker knows: every Python and Java spelling of each option.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dfw::options_internal {

enum class FlagKind {
  kString,   // scalar text; the last one wins
  kInt,      // scalar whole number
  kBool,     // --flag, --flag=true|false
  kList,     // repeatable; each occurrence appends
  kIgnored,  // a Beam/Dataflow flag that does not change what dfworker does (kept in `other`)
  kIgnoredBool,
};

// Destination of a flag in PipelineOptions.
enum class FlagDest {
  kServiceOptions, kExperiments, kResourceHints, kMachineType, kHarnessThreads, kSdkWorkerParallelism,
  kSdkContainerImage, kRunner, kProject, kRegion, kTempLocation, kStreaming, kFlexrsGoal, kPythonEnv,
  kPythonRowTimeout, kOther,
};

struct FlagSpec {
  const char* spelling;  // as written after "--"
  FlagDest dest;
  FlagKind kind;
  bool java = false;     // Java spelling: list values are comma-split
};

// The spec for `spelling` (dfworker's table first, then Beam's), or nullptr.
const FlagSpec* FindFlag(std::string_view spelling);

// Every spelling of both tables (for did-you-mean).
const std::vector<std::string>& AllSpellings();

// beam_flags.cc: the rest of Beam's option table (Python 2.77 generated, Java written out), all
// FlagDest::kOther.
const FlagSpec* FindBeamFlag(std::string_view spelling);
void AppendBeamSpellings(std::vector<std::string>& out);

// Options that decide the worker's shape (service options, experiments, resource hints, machine
// type, harness threads, SDK processes, container image): a near miss of one of them silently
// changes the job, so it is an error; a near miss of any other flag is only a warning.
bool IsWorkerShaping(FlagDest dest);

// The known spelling closest to `name` (ClosestMatch over AllSpellings()), or nullopt; names longer
// than any plausible near miss are not compared (an edit distance per spelling on a 128 KB argument
// would take seconds).
std::optional<std::string> NearestSpelling(std::string_view name);

// The canonical (Python) name of a destination, used in messages: "dataflow_service_options".
const char* CanonicalName(FlagDest dest);

}  // namespace dfw::options_internal
