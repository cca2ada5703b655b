#include "dfw/validate/validate.h"

#include "rules.h"

namespace dfw {
namespace vi = validate_internal;
namespace {

constexpr const char* kServiceOptions = "https://cloud.google.com/dataflow/docs/reference/service-options";
constexpr const char* kPipelineOptions = "https://cloud.google.com/dataflow/docs/reference/pipeline-options";
constexpr const char* kGpus = "https://cloud.google.com/compute/docs/gpus";
constexpr const char* kMachines = "https://cloud.google.com/compute/docs/machine-types";
constexpr const char* kMps = "https://cloud.google.com/dataflow/docs/gpu/use-nvidia-mps";
constexpr const char* kNvidiaMps = "https://docs.nvidia.com/deploy/mps/index.html";
constexpr const char* kGpuSupport = "https://cloud.google.com/dataflow/docs/concepts/gpu-support";
constexpr const char* kBeamOptions =
    "https://github.com/apache/beam/blob/v2.77.0/sdks/python/apache_beam/options/pipeline_options.py";
constexpr const char* kRightFitting = "https://cloud.google.com/dataflow/docs/guides/right-fitting";
constexpr const char* kTenants = "docs/tenants.md";
constexpr const char* kFlexrs = "https://cloud.google.com/dataflow/docs/guides/flexrs";
constexpr const char* kUseGpus = "https://cloud.google.com/dataflow/docs/gpu/use-gpus";
constexpr const char* kVllmEngineArgs = "https://docs.vllm.ai/en/latest/models/engine_args.html";

using S = Severity;

const std::vector<RuleInfo> kRules = {
    {"option-syntax", S::kError, kServiceOptions, "a flag, service option or options: entry is malformed"},
    {"unknown-flag", S::kWarning, kPipelineOptions,
     "not a Beam pipeline option (Beam hands it to the pipeline's own parser or drops it); did-you-mean when close"},
    {"misspelled-flag", S::kError, kPipelineOptions,
     "a near miss or abbreviation of a flag that shapes the worker (service options, experiments, machine type, ...)"},
    {"accelerator-duplicate", S::kError, kServiceOptions, "worker_accelerator given more than once"},
    {"service-option-comma", S::kWarning, kServiceOptions,
     "a service option that keeps a comma (two '=' before it, or the options: block) looks like two"},
    {"beam-version-split", S::kWarning, kBeamOptions,
     "Beam >= 2.67 splits this --experiments / --dataflow_service_options value at commas; Beam <= 2.66 does not"},
    {"list-empty-item", S::kWarning, kBeamOptions, "an empty item in a comma list (Beam drops it)"},
    {"service-option-as-flag", S::kError, kServiceOptions,
     "a service option written as a flag of its own (--worker_accelerator=...): Dataflow ignores it"},
    {"service-option-unknown", S::kWarning, kServiceOptions, "a service option dfworker does not know (passed on unchecked)"},
    {"accelerator-mangled", S::kError, kServiceOptions,
     "a value that looks like a mangled worker_accelerator (list literal, quotes, ':' for '=', misspelled name)"},
    {"gpu-unknown-type", S::kError, kGpus, "GPU type not in the catalog"},
    {"machine-unknown-type", S::kError, kMachines, "machine type not in the catalog"},
    {"gpu-count-invalid", S::kError, kGpus, "GPU count not offered for the type or machine"},
    {"gpu-machine-mismatch", S::kError, kGpus, "GPU type cannot be attached to the machine type"},
    {"n1-gpu-shape", S::kWarning, kGpus, "N1 machine larger than the attached GPUs allow (unverified bounds)"},
    {"mps-multi-gpu", S::kError, kMps, "use_nvidia_mps needs count:1"},
    {"mps-single-sdk-process", S::kError, kMps, "use_nvidia_mps with no_use_multiple_sdk_containers"},
    {"mps-prime", S::kError, kMps, "Dataflow Prime does not support MPS"},
    {"mps-outside-accelerator", S::kError, kMps, "use_nvidia_mps outside worker_accelerator"},
    {"mps-restricted-parallelism", S::kWarning, kMps, "MPS with options that force one process or thread"},
    {"mps-single-vcpu", S::kWarning, kMps, "MPS on a worker with one vCPU"},
    {"mps-client-limit", S::kError, kNvidiaMps, "more MPS clients than one device takes"},
    {"mps-recommended", S::kWarning, kMps, "several model copies on one GPU without MPS"},
    {"driver-not-installed", S::kWarning, kGpuSupport, "worker_accelerator without install-nvidia-driver"},
    {"right-fitting-conflict", S::kError, kRightFitting, "accelerator resource hint together with worker_accelerator"},
    {"resource-hints-conflict", S::kError, kRightFitting,
     "transforms' accelerator resource hints that differ (one worker VM has one accelerator)"},
    {"resource-hint-exceeds-machine", S::kError, kRightFitting,
     "a min_ram or cpu_count resource hint above what the machine type has"},
    {"streaming-unsupported", S::kError, kPipelineOptions,
     "`dfworker run` with --streaming: dfworker runs bounded batch work (the dry run gives Dataflow's verdict)"},
    {"streaming-batch-only", S::kWarning, kGpuSupport,
     "--streaming in a dry run: Dataflow accepts it (GPUs work in streaming jobs on Runner v2); `dfworker run` "
     "would refuse it"},
    {"streaming-right-fitting", S::kError, kRightFitting,
     "right fitting (an accelerator resource hint) in a streaming job without "
     "--experiments=enable_streaming_rightfitting"},
    {"flexrs-gpu", S::kError, kFlexrs, "--flexrs_goal with a GPU: FlexRS doesn't support GPUs"},
    {"flex-start-batch-only", S::kError, kUseGpus,
     "provisioning_model:FLEX_START in a streaming job: GPU flex-start is for batch pipelines only"},
    {"gpu-memory-exceeded", S::kError, kMps, "planned GPU memory above capacity"},
    {"gpu-memory-tight", S::kWarning, kMps, "planned GPU memory above 90% of capacity"},
    {"kv-cache-no-sequence", S::kError, kVllmEngineArgs,
     "text generation: not one sequence of the context fits the GPU within gpu_memory_utilization 0.9"},
    {"kv-cache-short", S::kWarning, kVllmEngineArgs,
     "text generation: the engine's KV cache (kv_cache_memory_bytes) holds no sequence of the whole context"},
    {"gpu-requested-no-accelerator", S::kWarning, kGpuSupport,
     "RunInference asks for device: GPU but no accelerator is declared (Beam falls back to the CPU)"},
    // Tenants (dfworker run --tenants FILE): checked by the tenants module (dfw/tenants/admission.h).
    {"tenants-file-invalid", S::kError, kTenants, "the tenants file: YAML, an unknown key, a bad value, a duplicate name"},
    {"tenants-budget-over-100", S::kError, kTenants, "the tenants' GPU-memory fractions add up to more than 1"},
    {"tenants-pipeline-invalid", S::kError, kTenants, "a tenant's pipeline file fails to load or plan"},
    {"tenants-same-output", S::kError, kTenants, "two tenants write the same output path"},
    {"tenants-mps-required", S::kError, kNvidiaMps, "tenants need the shared worker's one GPU under MPS"},
    {"tenants-worker-mismatch", S::kError, kTenants, "tenants' options give different worker shapes"},
    {"tenant-over-budget", S::kError, kTenants, "a tenant's plan (model copies + workspace) exceeds its gpu_memory"},
    {"tenant-client-share", S::kError, kNvidiaMps,
     "a tenant's budget divided among its MPS clients is below what one of them needs"},
    {"tenants-gpu-overcommitted", S::kError, kTenants, "the budgets and the context overhead exceed the GPU's memory"},
    {"tenants-mps-client-limit", S::kError, kNvidiaMps, "more MPS clients over all tenants than one server takes"},
    {"tenants-vcpus", S::kError, kTenants, "the tenants' guaranteed SDK processes exceed the worker's vCPUs"},
};

constexpr vi::Rule kRuleFunctions[] = {
    vi::GpuUnknownType,       vi::MachineUnknownType,  vi::GpuCountInvalid,          vi::GpuMachineMismatch,
    vi::N1GpuShape,           vi::DriverNotInstalled,  vi::RightFittingConflict,     vi::StreamingUnsupported,
    vi::StreamingRightFitting, vi::FlexrsWithGpu,      vi::FlexStartBatchOnly,
    vi::MpsMultiGpu,          vi::MpsSingleSdkProcess, vi::MpsPrime,                 vi::MpsOutsideAccelerator,
    vi::MpsRestrictedParallelism, vi::MpsSingleVcpu, vi::MpsClientLimit,             vi::MpsRecommended,
    vi::GpuMemory,            vi::KvCacheSequences,    vi::GpuRequestedNoAccelerator, vi::ResourceHintExceedsMachine,
};

const RuleInfo* FindRule(std::string_view code) {
  for (const RuleInfo& r : kRules) {
    if (code == r.code) return &r;
  }
  return nullptr;
}

}  // namespace

const std::vector<RuleInfo>& AllRules() { return kRules; }

std::string DocUrl(std::string_view code) {
  const RuleInfo* rule = FindRule(code);
  return rule ? rule->doc_url : "";
}

void vi::RuleContext::Add(const char* code, const Origin& origin, std::size_t offset, std::size_t length,
                          std::string message, std::string help) const {
  const RuleInfo* rule = FindRule(code);
  out.push_back(MakeDiagnostic(rule ? rule->severity : Severity::kError, code, std::move(message), std::move(help),
                               origin, offset, length));
}

std::vector<Diagnostic> Validate(const PipelineOptions& options, const Catalog& catalog, const WorkerPlan* plan,
                                 CheckFor check_for) {
  std::vector<Diagnostic> out = options.diagnostics;
  const AcceleratorSpec* accelerator = options.worker_accelerator ? &*options.worker_accelerator
                                       : options.accelerator_hint ? &*options.accelerator_hint
                                                                  : nullptr;
  vi::RuleContext ctx{options, catalog, plan, accelerator, out, check_for};
  for (vi::Rule rule : kRuleFunctions) rule(ctx);
  return out;
}

}  // namespace dfw
