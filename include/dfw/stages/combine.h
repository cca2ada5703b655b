// Beam YAML's Combine (group_by + combine:) as Dataflow runs it: combiner lifting and a shuffle.
//
// A pipeline with a Combine runs as fused stages (dfw/pipeline/fused_stages.h). In the stage that
// feeds it, the Combine is a sink, `Combine/partial`: each bundle folds its rows into partial
// accumulators per key (a sum, a count, a mean's (sum, count), a top-n list ...) and writes them,
// partitioned by a hash of the key, to one shuffle file committed with the bundle (exactly once,
// like any sink's output). When that stage has finished, the next one leases the partitions as its
// bundles: a `Combine/merge` source reads partition p of every committed shuffle file, merges the
// accumulators per key and emits one row per key: the group_by fields, then each output in the
// order given (Beam's field order; `mean` is a float, `count` an int).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

class StageRegistry;

inline constexpr const char* kCombineType = "Combine";
inline constexpr const char* kCombinePartialType = "Combine/partial";  // internal (fused stages only)
inline constexpr const char* kCombineMergeType = "Combine/merge";      // internal (fused stages only)
// The fused stages tell the partial and the merge their partitions and folder in
// StageConfig::shuffle (dfw/stages/stage.h), never in the config.

// Marks a partial stage's shuffle as complete: writes <shuffle_dir>/shuffle.index naming the
// committed bundles (atomically). A merge source refuses to read a shuffle without it, so a reduce
// stage never runs over part of its input.
Status CommitShuffle(const std::string& shuffle_dir, const std::vector<int64_t>& bundle_ids);

// Registers Combine and its two internal types (RegisterBuiltinStages calls it).
void RegisterCombine(StageRegistry& r);
// The types only fused stages use; a pipeline file may not name them (the loader refuses them).
bool IsInternalStageType(std::string_view type);

}  // namespace dfw
