// Finalize of a (fused) stage once every bundle is committed: the sinks' committed outputs renamed
// to Beam's sharded names <prefix>-SSSSS-of-NNNNN<suffix> (one shard per bundle, in bundle order;
// empty shards are kept), a Combine's shuffle marked complete, the error thresholds checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/metrics/metrics.h"
#include "dfw/pipeline/spec.h"

namespace dfw {

// Renames <staging>/<sink>/bundle-<id>.done for each id (in the given order) to
// <prefix>-SSSSS-of-NNNNN<suffix>; with no ids, writes one empty shard. Sinks without a `path`
// (test collectors) are skipped. With a `journal_path` the renames are one journaled, redoable
// step (dfw/job/journaled_moves.h): a run killed part-way is finished by calling this again.
// Missing .done files before the journal exists are kFailedPrecondition naming the bundle.
Status FinalizeOutputs(const PipelineSpec& spec, const std::string& staging_dir, const std::vector<int64_t>& bundle_ids,
                       const std::string& journal_path);

// Creates every file sink's output folder and writes and removes a probe file there, so a run that
// could not deliver its output fails before doing the work (kIoError naming the transform and path).
Status CheckSinksWritable(const PipelineSpec& spec);

// Marks each Combine or Join partial sink's shuffle of a finished stage as complete (CommitShuffle over
// <committed_dir>/<name> with the stage's committed bundle ids), before the next stage reads it.
Status CommitShuffles(const PipelineSpec& stage, const std::string& committed_dir, const std::vector<int64_t>& bundle_ids);

// Finalize of one (fused) stage, the one sequence every run uses — the launcher's pipeline jobs and
// RunAllBundles alike: the error thresholds over `total`, the Combine shuffles' commit, then the
// journaled moves of committed outputs to their shard names (FinalizeOutputs with
// `journal_path`). Redoable from any point with the same arguments.
Status FinalizeStage(const PipelineSpec& stage, const MetricsSnapshot& total, const std::string& committed_dir,
                     const std::vector<int64_t>& bundle_ids, const std::string& journal_path);

}  // namespace dfw
