// Fused stages: a pipeline cut at its Combines and Joins, as Dataflow's optimiser cuts a graph at
// each GroupByKey / CoGroupByKey (dfw/stages/combine.h, dfw/stages/join.h).
//
// Stage 0 holds every transform that reads no Combine's or Join's output, with each Combine feeding
// it replaced by its partial sink and each Join input by one of the Join's. Stage k + 1 starts with
// one merge source per Combine or Join that ended stage k and holds the transforms that read them
// (and their own downstream), until the next shuffle. A Join's inputs may come from different
// stages: each input's partial sink runs where that input's rows are, and the Join's merge runs in
// the stage after the latest of them. A pipeline without either is one stage, the spec itself.
// Each stage is an ordinary PipelineSpec: the runner, the bundle plan, exactly-once commits and
// --resume work per stage; stage k + 1 runs only after stage k has finished and its shuffles are
// committed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/pipeline/spec.h"

namespace dfw {

struct FuseOptions {
  int64_t partitions = 1;  // shuffle partitions per Combine (the reduce stage's bundles); >= 1
  // Where stage k's committed sink outputs are (the partial sinks' shuffle files are under
  // <dir>/<Combine name>); called for k = 0 .. stages - 2.
  std::function<std::string(int stage)> committed_dir;
};

struct FusedStage {
  PipelineSpec spec;
  std::vector<std::string> transforms;  // the original transforms in this stage, by name
};

// kInvalidArgument (naming the transform) when a transform reads from both sides of a Combine
// (its inputs would be in two stages).
Result<std::vector<FusedStage>> FuseStages(const PipelineSpec& spec, const FuseOptions& options);

// Whether the pipeline has a Combine or a Join (so it runs as more than one stage).
bool HasShuffle(const PipelineSpec& spec);

// The default number of shuffle partitions for `processes` SDK processes (256, or 8 per process on
// a bigger machine). The reduce stage's bundles are ranges of whole partitions sized like any
// bundle (by shuffle bytes), so many partitions cost little; and a reduce bundle merges one
// partition at a time, so its memory is the keys of one partition: 10 million distinct keys are
// about 40,000 accumulators at a time.
int64_t DefaultShufflePartitions(int processes);

}  // namespace dfw
