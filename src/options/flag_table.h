// The table of pipeline flags dfworker knows: every Python and Java spelling of each option.
#pragma once

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
  kSdkContainerImage, kRunner, kProject, kRegion, kTempLocation, kStreaming, kOther,
};

struct FlagSpec {
  const char* spelling;  // as written after "--"
  FlagDest dest;
  FlagKind kind;
  bool java = false;     // Java spelling: list values are comma-split
};

// The spec for `spelling`, or nullptr.
const FlagSpec* FindFlag(std::string_view spelling);

// Every spelling (for did-you-mean).
const std::vector<std::string>& AllSpellings();

// The canonical (Python) name of a destination, used in messages: "dataflow_service_options".
const char* CanonicalName(FlagDest dest);

}  // namespace dfw::options_internal
