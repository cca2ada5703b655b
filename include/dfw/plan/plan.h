// WorkerPlan: what one Dataflow GPU worker will look like for these options — SDK processes,
// threads, accelerator, model copies and the GPU-memory budget (design.md "Accelerator and MPS").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/common/status.h"
#include "dfw/options/options.h"
#include "dfw/device/accelerator.h"

namespace dfw {

// How many copies of a model a worker loads (Beam RunInference, design.md "Model copies").
enum class CopiesPolicy {
  kPerProcess,  // default: one copy per SDK process
  kLargeModel,  // large_model: one copy per worker, shared by all SDK processes
  kModelCopies, // model_copies: k copies per worker, shared
};

const char* CopiesPolicyName(CopiesPolicy policy);  // "per-process", "large_model", "model_copies"

// A model copy's per-batch workspace and how it was estimated; converts from a plain byte count.
struct WorkspaceSize {
  uint64_t bytes = 0;
  std::string how;  // the arithmetic ("" = not estimated)
  WorkspaceSize(uint64_t b = 0, std::string h = {}) : bytes(b), how(std::move(h)) {}  // NOLINT: implicit on purpose
};

// The work of one record of a model, for the throughput estimate (throughput.h); filled from the
// handler's WorkEstimate by the launcher module (the plan does not see handlers).
struct ModelWork {
  double flops_per_record = 0;
  double activation_bytes_per_record = 0;
  int64_t batch_size = 1;          // weights are read once per batch
  std::string dtype = "fp32";
  double default_efficiency = 0.3; // share of the GPU's peak the handler's kernels are assumed to reach
  std::string how;
  double weight_reads_per_record = 0;  // when not once per batch (decoders: once per step); 0 = 1 / batch_size
};

// vLLM's default gpu_memory_utilization: the share of a GPU an engine may fill with weights,
// activations and KV cache. The plan counts text-generation sequences within it; the dry run's
// gpu-memory-tight rule and the catalog plan's "tight" verdict start at the same 90 %.
inline constexpr double kGpuMemoryUtilization = 0.9;

// A text-generation model's KV cache and step scratch, per SDK process running it (filled by the
// launcher from the handler's KvCacheEstimate, dfw/inference/model_handler.h).
struct KvCacheRequirement {
  uint64_t bytes_per_token = 0;    // layers x KV heads x head_dim x 2 x bytes per value
  std::string bytes_per_token_how;
  int64_t context_tokens = 0;      // one sequence's longest context
  std::string context_how;         // which figure gave it
  int block_tokens = 1;            // a sequence takes whole cache blocks
  int64_t max_sequences = 1;       // max_num_seqs
  uint64_t cache_bytes = 0;        // the cache one process allocates at most (kv_cache_memory_bytes)
  bool cache_bytes_given = false;  // else the engine's default
  uint64_t activation_bytes = 0;   // the largest step's scratch
  std::string activation_how;
  // One sequence of context_tokens: bytes_per_token x the context rounded up to whole blocks.
  uint64_t SequenceBytes() const;
};

// One model the pipeline loads, filled by the pipeline/inference modules (empty list = no models known).
struct ModelRequirement {
  std::string name;                 // e.g. the RunInference transform or model file name
  uint64_t bytes = 0;               // weights resident on the device per copy
  CopiesPolicy policy = CopiesPolicy::kPerProcess;
  int model_copies = 1;             // k for kModelCopies (>= 1)
  WorkspaceSize workspace;          // per-batch activation workspace estimate, per process running it
  std::string device = "CPU";       // model_handler.config device: "CPU" or "GPU" (as the pipeline asks)
  std::optional<Origin> origin;     // where the transform (its `device:` when given) is written, for diagnostics
  std::optional<ModelWork> work = std::nullopt;  // per-record work (estimate.h); nullopt when the handler cannot say
  // Text generation: `workspace` is cache_bytes + activation_bytes, and the plan counts sequences.
  std::optional<KvCacheRequirement> kv_cache = std::nullopt;
  std::string bytes_how = {};      // how `bytes` was found ("" = the safetensors header)
  bool weights_absent = false;     // planned from config.json alone (no weights file yet)
};

// What we know about the machine we run on (filled by the CLI; a fake in tests).
struct HostInfo {
  int cpu_cores = 1;              // used for the process count when no --machine_type is given
  int cuda_devices = 0;           // visible CUDA GPUs; 0 = the accelerator is emulated
  // The device module's selection (device::SelectAccelerator): kCuda or kEmulated decides the plan's
  // accelerator.backend when an accelerator is declared; nullopt (or kNone) = decide from cuda_devices alone.
  std::optional<device::Accelerator::Kind> selected_backend;
  std::string backend_reason;     // why it is not "cuda" (device::Accelerator::fallback_reason); "" = none given
};

// Harness threads per SDK process when --number_of_worker_harness_threads is not given: where a
// GPU is declared (or there are fewer processes than vCPUs), one thread runs inference while
// another reads/prepares the next batch; on the CPU alone, with a process per vCPU, one thread in
// each (MakePlan; documented in docs/options.md).
inline constexpr int kDefaultHarnessThreads = 2;
inline constexpr int kCpuHarnessThreads = 1;

struct WorkerPlan {
  std::string machine_type;        // "" when none was given (host cores used)
  int vcpus = 0;                   // of the machine type, or host cores
  int sdk_processes = 1;
  std::string sdk_processes_reason;  // "vCPUs of g2-standard-8", "no_use_multiple_sdk_containers", ...
  int harness_threads_per_process = kDefaultHarnessThreads;

  struct Accelerator {
    bool present = false;
    std::string type;              // "nvidia-l4"
    int count = 0;                 // GPUs per worker
    uint64_t memory_bytes = 0;     // per GPU
    bool mps = false;
    device::Accelerator::Kind backend = device::Accelerator::Kind::kNone;  // printed by AcceleratorKindName
    std::string backend_reason;    // why not cuda, when known (HostInfo::backend_reason)
    int mps_client_limit = 0;      // clients per device (MPS only)
    // Who declared it when it came from an accelerator resource hint (right fitting), e.g.
    // "resource hint of transform 'Classify' (p.yaml:12:7)"; "" = worker_accelerator.
    std::string declared_by;
    // "FLEX_START" when the accelerator asks for flex-start provisioning ("" = standard).
    std::string provisioning_model;
  } accelerator;

  struct Model {
    std::string name;
    uint64_t bytes = 0;
    CopiesPolicy policy = CopiesPolicy::kPerProcess;
    int copies = 0;                // per worker
    int copies_per_gpu = 0;        // on the busiest GPU
    std::string device = "CPU";    // as the pipeline asks ("GPU" runs on the CPU without an accelerator)
    std::optional<Origin> origin;  // copied from ModelRequirement::origin
    WorkspaceSize workspace;       // per process running it (ModelRequirement::workspace)
    std::string bytes_how = {};    // ModelRequirement::bytes_how
    // Text generation, in vLLM's arithmetic (docs/right-sizing.md): on the busiest GPU the budget
    // utilization x capacity, less the contexts, every model's weights, activations and other
    // workspace, is what the KV caches may hold; each SDK process has its own cache, so the room is
    // split between them and counted in whole sequences of the context.
    struct Sequences {
      KvCacheRequirement kv;
      uint64_t sequence_bytes = 0;     // kv.SequenceBytes()
      int64_t cache_sequences = 0;     // sequences the configured cache (kv.cache_bytes) holds
      bool on_gpu = false;             // an accelerator is planned (the rest is 0 without one)
      double utilization = kGpuMemoryUtilization;
      uint64_t budget_bytes = 0;       // utilization x capacity
      uint64_t other_bytes = 0;        // planned peak without the text-generation KV caches
      uint64_t kv_bytes_left = 0;      // budget - other (0 below), for the KV caches on the GPU
      int processes = 0;               // SDK processes on the busiest GPU (each its own cache)
      int kv_caches = 0;               // processes x text-generation models
      uint64_t kv_bytes_per_cache = 0; // kv_bytes_left / kv_caches
      int64_t per_process = 0;         // sequences of the context that fit per process
      int64_t per_gpu = 0;             // per_process x processes
    };
    std::optional<Sequences> sequences;  // text-generation models only
    bool weights_absent = false;        // ModelRequirement::weights_absent
  };
  std::vector<Model> models;

  // The inputs cut into bundles for these SDK processes (filled by the caller that can read them;
  // the dry run does). Empty `target` and `error` = not looked at.
  struct Bundles {
    int64_t count = 0;
    std::string target;  // BundleTarget::ToString()
    std::string error;   // why the inputs could not be split here
    // A pipeline with a Combine runs as fused stages (dfw/pipeline/fused_stages.h): per stage, its
    // transforms in order ("PerKey (shuffle read)", "Format", ...). Empty = not looked at.
    std::vector<std::vector<std::string>> stages;
    int64_t shuffle_partitions = 0;  // per Combine, when there are stages
  } bundles;

  // GPU memory on the busiest GPU (processes spread round-robin over the GPUs).
  struct GpuMemory {
    uint64_t capacity_bytes = 0;
    uint64_t planned_peak_bytes = 0;
    int contexts = 0;              // CUDA contexts on the GPU (1 shared server context under MPS)
    int processes_per_gpu = 0;     // SDK processes using the busiest GPU
    int clients = 0;               // CUDA client processes on it: SDK processes + model hosts
    uint64_t context_bytes = 0;    // contexts × per-context overhead estimate
    uint64_t model_bytes = 0;      // copies × model bytes
    uint64_t workspace_bytes = 0;  // processes × per-batch workspace
  } gpu_memory;

  // The resource hints (PipelineOptions::pipeline_hints, then transform_hints): which transform
  // asked for what, after Beam's nesting (innermost accelerator, largest min_ram and cpu_count).
  struct ResourceHints {
    std::string transform;         // "" = the pipeline level (flags, options:, `pipeline: resource_hints`)
    std::string where;             // "file:line:col" of the transform ("" at the pipeline level)
    std::string accelerator;       // "type:nvidia-l4;count:1;install-nvidia-driver"; "" = none
    bool accelerator_inherited = false;  // from the pipeline level, not the transform's own
    uint64_t min_ram_bytes = 0;    // 0 = no hint
    int cpu_count = 0;             // 0 = no hint
  };
  std::vector<ResourceHints> resource_hints;
};

// Builds the plan. Fails (kInvalidArgument) only when the options name something the catalog does
// not know (unknown GPU or machine type) — the validate module reports those as diagnostics, so a
// caller may ignore this Status and validate without a plan.
Result<WorkerPlan> MakePlan(const PipelineOptions& options, const Catalog& catalog,
                            const std::vector<ModelRequirement>& models, const HostInfo& host);

// Human-readable plan (several lines, ending in '\n').
std::string RenderPlanText(const WorkerPlan& plan);

// The text-generation models of `plan` whose sequences do not fit its GPU: one sentence each with
// the numbers (budget, what fills it, what one sequence needs), for the dry run's refusal and
// `dfworker plan`'s verdict. Empty when every sequence count is 1 or more, or there is no GPU.
std::vector<std::string> SequenceShortfalls(const WorkerPlan& plan);
// "8 sequences of 8192 tokens per GPU (2 per process x 4 processes)", for one model's Sequences.
std::string SequencesText(const WorkerPlan::Model::Sequences& s);

}  // namespace dfw
