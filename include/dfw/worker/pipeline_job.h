// The production path: a Beam-YAML pipeline run by the launcher and its SDK processes; this is the
// SDK processes' side (the launcher plans and finalizes: dfw/launcher/pipeline_job_plan.h).
// The job's JobInfo carries the pipeline text itself (so --resume needs nothing but the job dir)
// and the launcher's working directory (relative paths in the pipeline resolve the same way in
// every process and on resume).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/job/job_dir.h"
#include "dfw/metrics/metrics.h"
#include "dfw/worker/bundle_executor.h"

namespace dfw {

// An executor that runs bundles of the job's pipeline with `threads` harness threads. Each
// RunBundle reports the bundle's metric delta (counters exact; distribution min/max are this
// process's running min/max, which merge correctly) plus ("dfworker", "records") = rows read.
//
// Test-only hooks (dfw/common/test_hooks.h: only in a -DDFW_TEST_HOOKS=ON build), read from the
// environment (real-process tests of `dfworker run` plant faults):
//   DFW_TEST_BUNDLE_DELAY_MS=N    sleep N ms before each bundle (so a kill lands mid-run)
//   DFW_TEST_CRASH_ON_BUNDLE=ID   abort() whenever bundle ID is run (a poison bundle)
//   DFW_TEST_BUNDLE_GATE=K:PATH   bundles with id >= K wait for PATH to exist (60 s at most), so a
//                                 kill lands mid-run however fast the machine is; the test opens
//                                 the gate when it is done
//   DFW_TEST_SOURCE_BATCH_DELAY_MS=N  (pipeline graph) sleep N ms before each source batch is read
//   DFW_TEST_SOURCE_GATE_FILE=PATH    (pipeline graph) read no source batch until PATH exists (60 s
//                                 at most): a test opens the gate once it has seen the splits it
//                                 wants, instead of hoping a delay is long
Result<std::unique_ptr<BundleExecutor>> MakePipelineExecutor(const JobInfo& job, const ExecutorContext& context);

}  // namespace dfw
