// Running a pipeline's fused stages in order (dfw/pipeline/fused_stages.h): the one driver, with
// an executor that runs one stage's bundles — the launcher's (a job dir per stage, SDK processes)
// or the in-process one (RunAllBundles, for `dfworker test` and the unit tests). Both finalize
// every stage through the same FinalizeStage, in the same order, before the next stage starts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/metrics/metrics.h"
#include "dfw/pipeline/accounting.h"
#include "dfw/pipeline/fused_stages.h"
#include "dfw/pipeline/runner.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"

namespace dfw {

// A stage's finalize, as the driver hands it to the executor: called once every bundle of the
// stage is committed, with where the committed outputs are, the stage's finalize journal, the
// metrics merged over its committed bundles and every bundle id in data order.
using StageFinalize = std::function<Status(const std::string& committed_dir, const std::string& journal_path,
                                           const MetricsSnapshot& total, const std::vector<int64_t>& bundle_ids)>;

class StageExecutor {
 public:
  virtual ~StageExecutor() = default;
  // Runs every bundle of fused stage `k` of `count`, then calls `finalize` once before the stage
  // counts as finished (a launcher's FINISHED marker comes after it; a stage an earlier run
  // finished is skipped, its finalize done then). An error stops the run; the driver starts no
  // later stage.
  virtual Status RunStage(int k, int count, const FusedStage& stage, const StageFinalize& finalize) = 0;
};

// Runs stages 0 .. n-1 in order through `executor`, each finalized by FinalizeStage.
Status RunStagedJob(const std::vector<FusedStage>& stages, StageExecutor& executor);

// Single-process run of the whole pipeline: plan, run every bundle, finalize, check the error
// thresholds across the run. A pipeline with a Combine runs its fused stages one after the other
// (dfw/pipeline/fused_stages.h), each finalized by FinalizeStage with its journal
// `<staging_dir>/finalize-<k>.json`. Metrics go to `metrics`.
struct RunSummary {
  int64_t bundles = 0;
  Accounting accounting;
};
Result<RunSummary> RunAllBundles(const PipelineSpec& spec, const StageRegistry& registry, const RunnerOptions& options,
                                 const std::string& staging_dir, MetricsRegistry* metrics);

}  // namespace dfw
