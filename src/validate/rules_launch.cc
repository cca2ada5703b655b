// Rules on how the job is launched: streaming, FlexRS and GPU flex-start provisioning.
//
// A dry run gives Dataflow's verdict. Dataflow runs GPU jobs in streaming mode (Runner v2, the only
// runner for Python since Beam 2.45: https://cloud.google.com/dataflow/docs/runner-v2), so
// --streaming alone is only a note there; `dfworker run` itself runs bounded batch work and refuses
// it (CheckFor::kLocalRun). The restrictions Dataflow documents stay errors in both modes.
#include <algorithm>

#include "rules.h"

namespace dfw::validate_internal {
namespace {

bool HasExperiment(const PipelineOptions& o, std::string_view name) {
  return std::any_of(o.experiments.begin(), o.experiments.end(),
                     [&](const OptionValue& v) { return v.value == name; });
}

const AcceleratorSpec* FlexStartSpec(const PipelineOptions& o) {
  for (const auto& spec : {&o.worker_accelerator, &o.accelerator_hint}) {
    if (*spec && (*spec)->provisioning_model == "FLEX_START") return &**spec;
  }
  return nullptr;
}

}  // namespace

// dfworker runs bounded inputs with batch semantics (4 attempts per work item, then the job fails);
// a streaming Dataflow job retries a failing bundle indefinitely and never finishes, so a run here
// would not behave like the job it claims to be.
void StreamingUnsupported(const RuleContext& ctx) {
  const auto& o = ctx.options;
  if (!o.streaming || !o.streaming_origin) return;
  const OptionValue& flag = *o.streaming_origin;
  if (ctx.check_for == CheckFor::kDataflowLaunch) {
    ctx.Add("streaming-batch-only", flag.origin, 0, flag.origin.text.size(),
            "--streaming: Dataflow accepts this streaming launch (GPUs run in streaming jobs on Runner v2), and "
            "this dry run checks it as Dataflow does; `dfworker run` runs batch pipelines only and would refuse it",
            "run the streaming job on Dataflow; to run it here, drop --streaming and read bounded inputs");
    return;
  }
  ctx.Add("streaming-unsupported", flag.origin, 0, flag.origin.text.size(),
          "--streaming: dfworker runs bounded batch work with batch semantics (a failing work item is attempted 4 "
          "times, then the job fails), while a streaming Dataflow job retries a failing bundle forever",
          "drop --streaming to run the pipeline here as a batch job over bounded inputs; run the streaming job on "
          "Dataflow itself (`dfworker run --dry_run` gives Dataflow's verdict on the launch)");
}

// Right fitting in streaming needs the experiment (right-fitting page, updated 2026-03-03).
void StreamingRightFitting(const RuleContext& ctx) {
  const auto& o = ctx.options;
  if (!o.streaming || !o.streaming_origin || !o.accelerator_hint) return;
  if (HasExperiment(o, "enable_streaming_rightfitting")) return;
  const OptionValue& flag = *o.streaming_origin;
  ctx.Add("streaming-right-fitting", flag.origin, 0, flag.origin.text.size(),
          "--streaming with an accelerator resource hint: Dataflow refuses right fitting in a streaming job "
          "without --experiments=enable_streaming_rightfitting",
          "add --experiments=enable_streaming_rightfitting (right fitting in streaming also needs horizontal "
          "autoscaling), or use worker_accelerator instead of the hint");
}

// FlexRS, quoted: "Doesn't support GPUs." (https://cloud.google.com/dataflow/docs/guides/flexrs).
void FlexrsWithGpu(const RuleContext& ctx) {
  const auto& goal = ctx.options.flexrs_goal;
  if (!goal || !ctx.accelerator) return;
  ctx.Add("flexrs-gpu", goal->origin, goal->origin.value_offset, goal->value.size(),
          "--flexrs_goal=" + goal->value + " with a GPU (" + std::string(AcceleratorFormName(ctx.accelerator->form)) +
              " accelerator '" + ctx.accelerator->gpu_type + "'): Dataflow's FlexRS doesn't support GPUs "
              "(https://cloud.google.com/dataflow/docs/guides/flexrs)",
          "drop --flexrs_goal; for hard-to-get GPUs in a batch job, add ;provisioning_model:FLEX_START to the "
          "accelerator instead (flex-start provisioning, Preview)");
}

// Flex-start GPUs, quoted from the 2025-09-24 release note: "available in Preview and is for batch
// pipelines only" (https://cloud.google.com/dataflow/docs/gpu/use-gpus).
void FlexStartBatchOnly(const RuleContext& ctx) {
  const auto& o = ctx.options;
  const AcceleratorSpec* spec = FlexStartSpec(o);
  if (!spec || !o.streaming) return;
  const SubField& field = *spec->provisioning_field;
  ctx.Add("flex-start-batch-only", spec->origin, field.offset, field.text.size(),
          "provisioning_model:FLEX_START in a streaming job: Dataflow's GPU flex-start provisioning is for batch "
          "pipelines only",
          "drop ;provisioning_model:FLEX_START for the streaming job, or run the job as a batch job");
}

}  // namespace dfw::validate_internal
