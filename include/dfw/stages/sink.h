// How sinks name their files: per-bundle staging files (written by the sink stages) and Beam's
// final sharded names (chosen by the pipeline's FinalizeOutputs).
#pragma once

#include <cstdint>
#include <string>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw {

struct ShardNaming {
  std::string prefix;  // config `path`
  std::string suffix;  // config `file_name_suffix` ("" by default, as Beam's WriteToText)
  // "<prefix>-00003-of-00010<suffix>" (Beam's default shard name template).
  std::string ShardName(int64_t index, int64_t count) const;
};

// The naming of a sink transform (kInvalidArgument when `path` is missing).
Result<ShardNaming> SinkNaming(const StageConfig& config);

// <staging_dir>/<transform name>/bundle-<id>.tmp and .done
std::string StagingTmpPath(const std::string& staging_dir, const std::string& transform, int64_t bundle_id);
std::string StagingDonePath(const std::string& staging_dir, const std::string& transform, int64_t bundle_id);

}  // namespace dfw
