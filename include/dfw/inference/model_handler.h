// ModelHandler: Beam's RunInference model-handler contract (apache_beam/ml/inference/base.py).
//
// A ModelHandler is the configured, not-yet-loaded model (cheap, made once per stage); LoadModel()
// returns a Model (weights loaded, workspace allocated) that runs batches. The split mirrors
// Beam's ModelHandler.load_model() / run_inference(batch, model).
//
// Beam's sharing rule (PytorchModelHandler et al.):
//   share_model_across_processes() = large_model || model_copies is set
//   model_copies()                 = model_copies or 1   (so model_copies: 0 also means 1)
//
// Threading: a ModelHandler is immutable and may be used from any thread. A Model is used by one
// thread at a time (it owns scratch buffers); callers that share one serialise the calls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"
#include "dfw/inference/model_process_context.h"
#include "dfw/record/value.h"

namespace dfw {

// The batching kwargs the user set (only those: unset ones fall back to BatchElements defaults).
struct BatchingKwargs {
  std::optional<int64_t> min_batch_size;          // >= 1
  std::optional<int64_t> max_batch_size;          // >= min_batch_size
  std::optional<double> max_batch_duration_secs;  // > 0: flush a partial batch this long after its first element
  // >= 1: a batch's total weight at most this (Beam's max_batch_weight; the weight of an element is
  // Model::ElementWeight: tokens for the text models, 1 otherwise, so then it caps the count).
  std::optional<int64_t> max_batch_weight;
};

// model_handler.config of a RunInference transform, shared by every handler type.
struct ModelHandlerOptions {
  std::string model_path;      // a model directory (config.json + model.safetensors) or the .safetensors file
  std::string device = "CPU";  // "CPU" or "GPU" (GPU falls back to CPU with a warning when unavailable)
  std::string input_field;     // the row field holding the example
  BatchingKwargs batching;     // min/max_batch_size, max_batch_duration_secs
  bool large_model = false;    // one copy per worker, shared by all SDK processes
  std::optional<int64_t> model_copies;  // exact copies per worker; setting it turns sharing on
  std::string model_id;        // PredictionResult.model_id; "" = model_path
  // OpenBLAS threads for this process while the model runs (>= 1); unset = the runner's policy
  // (DefaultBlasThreads in dfw/backend/registry.h). The pool is per process: the last stage to
  // load with this key set wins.
  std::optional<int64_t> blas_threads;
  Row extra;                   // handler-specific keys (declared in the handler table), as given
  // Made for the plan alone (`dfworker plan`, `run --dry_run`), never from YAML: a handler that can
  // describe its model from config.json alone (text generation) accepts a directory without the
  // weights file and plans from the config; with the file present it checks it in full, as always.
  // LoadModel of a handler made this way without weights fails.
  bool config_only = false;
};

// Beam's model-copies rule, the one place it is written (RunInference, the plan and the launcher
// read it here): the model is shared across the SDK processes when large_model is set or
// model_copies is given; model_copies or 1 copies, so model_copies: 0 also means 1.
inline bool ShareModelAcrossProcesses(const ModelHandlerOptions& o) { return o.large_model || o.model_copies.has_value(); }
inline int64_t ModelCopies(const ModelHandlerOptions& o) { return o.model_copies.value_or(0) > 0 ? *o.model_copies : 1; }

// A loaded model.
class Model {
 public:
  virtual ~Model() = default;
  // Per-example check done before batching (Beam's preprocessing step): a bad example becomes a
  // dead-lettered row instead of failing its whole batch. The message names the value and what
  // was expected ("expected a list of 30 numbers, got a list of 29").
  virtual Status CheckExample(const Value& example) const = 0;
  // One prediction per example, in order, appended to `predictions`. Examples passed
  // CheckExample. A failure fails the whole batch (Beam's failed_inferences).
  virtual Status RunInference(std::span<const Value* const> batch, std::vector<Value>& predictions) = 0;
  // Beam's element_size_fn: what one example contributes to a batch's weight (max_batch_weight)
  // and the key batches are sorted by (ModelHandler::SortWindow). Text models: its token count
  // after truncation. Default 1 (a count). Called on examples that passed CheckExample.
  virtual int64_t ElementWeight(const Value& example) const {
    (void)example;
    return 1;
  }
  // Beam's get_num_bytes(batch): bytes of the batch as the model consumes it.
  virtual int64_t GetNumBytes(std::span<const Value* const> batch) const = 0;
  // Bytes of weights this copy holds (reported as model_byte_size).
  virtual int64_t byte_size() const = 0;
  // The backend that runs it: "cpu" or "cuda" (after any GPU → CPU fallback).
  virtual std::string_view device() const = 0;
  // Device bytes this copy has allocated for activations and scratch so far (what
  // ModelHandler::EstimateWorkspace plans for its largest batch); nullopt when not tracked.
  virtual std::optional<uint64_t> workspace_bytes() const { return std::nullopt; }
  // Figures the RunInference stage records once per loaded model, each as a distribution under
  // the handler's metrics namespace (so they reach metrics.json): e.g. the precision the model
  // runs in ("linear_dtype_bits") and what its choice measured. Default: none.
  virtual std::vector<std::pair<std::string, int64_t>> LoadFigures() const { return {}; }
  // Figures of the last RunInference call, recorded the same way after each batch (a name may
  // repeat: one value per sequence, e.g. "time_to_first_token_ms"). Default: none.
  virtual std::vector<std::pair<std::string, int64_t>> BatchFigures() const { return {}; }
};

// Device memory one loaded copy of a model needs beyond its weights, for its largest batch: the
// activation and scratch buffers, as the model really allocates them.
// A text-generation model's KV cache and step scratch, in the terms vLLM users size a GPU in: the
// plan counts how many sequences of `context_tokens` fit beside the weights (dfw/plan/plan.h).
struct KvCacheEstimate {
  uint64_t bytes_per_token = 0;    // layers x KV heads x head_dim x 2 (K and V) x bytes per value
  std::string bytes_per_token_how;
  int64_t context_tokens = 0;      // one sequence's longest context (prompt + new tokens)
  std::string context_how;         // which: "max_length 4096 ...", "max_position_embeddings 8192 ..."
  int block_tokens = 1;            // the cache hands out blocks of this many tokens
  int64_t max_sequences = 1;       // the engine's limit on concurrent sequences (max_num_seqs)
  uint64_t cache_bytes = 0;        // the cache one loaded copy allocates at most (kv_cache_memory_bytes)
  bool cache_bytes_given = false;  // kv_cache_memory_bytes was set (else the engine's default)
  uint64_t activation_bytes = 0;   // the scratch of the largest step
  std::string activation_how;
};

struct WorkspaceEstimate {
  uint64_t bytes = 0;
  std::string how;  // the arithmetic, e.g. "2 activation buffers x 256 rows x widest layer 32 x 4 B"
  // The weights as the model holds them on its device, when the handler knows them better than the
  // weights file's size (a dtype the model converts to, or no file: ModelHandlerOptions::config_only);
  // nullopt = the safetensors header's size.
  std::optional<uint64_t> weight_bytes;
  std::string weight_how;
  bool weights_absent = false;            // config_only and there is no weights file
  std::optional<KvCacheEstimate> kv_cache;  // text generation: `bytes` is cache_bytes + activation_bytes
};

// The work of one record for the throughput estimate (dfworker plan), from the model's config
// alone: arithmetic and memory traffic of the forward pass at the handler's batch size.
struct WorkEstimate {
  double flops_per_record = 0;             // multiply-adds x 2 of the forward pass, per record
  double activation_bytes_per_record = 0;  // activations written and read back, per record
  int64_t batch_size = 0;                  // records per batch assumed (max_batch_size); weights are
                                           // read once per batch, so their traffic per record is bytes / batch
  // Weight reads per record when they are not once per batch (a decoder reads them once per step,
  // shared by the sequences of that step); 0 = 1 / batch_size.
  double weight_reads_per_record = 0;
  std::string dtype = "fp32";              // what the kernels compute in (the backends run FP32)
  // The share of the GPU's FP32 peak this handler's kernels are assumed to reach: a stated default,
  // not a measurement (scripts/gpu-check.sh measures it on a real GPU); plan --gpu_efficiency overrides.
  double default_efficiency = 0.3;
  std::string how;                         // the arithmetic, e.g. "3 layers: 2 x (16x64 + 64x32 + 32x4)"
};

class ModelHandler {
 public:
  virtual ~ModelHandler() = default;

  // For the throughput estimate (no weights loaded); nullopt when the handler cannot say.
  virtual std::optional<WorkEstimate> EstimateWork() const { return std::nullopt; }

  // For the plan (no weights loaded); nullopt when the handler cannot say.
  virtual std::optional<WorkspaceEstimate> EstimateWorkspace() const { return std::nullopt; }

  virtual Result<std::unique_ptr<Model>> LoadModel(const ModelProcessContext& process) const = 0;
  // The most examples a message to its RunInference stage should carry (Stage::MaxMessageRows);
  // 0 = no preference. Handlers whose examples each take milliseconds set it.
  virtual int64_t MaxMessageRows() const { return 0; }
  // > 0: RunInference pools this many examples (or the batch size, if larger) per lane, sorts
  // them by Model::ElementWeight and cuts batches from the sorted pool (size-aware batching,
  // BatchElementsOptions::sort_window), so batches of a text model hold similar lengths whatever
  // max_batch_size is. 0 = batches in arrival order.
  virtual int64_t SortWindow() const { return 0; }
  // Beam's default namespace is "RunInference"; handlers may override (Beam's BeamML_PyTorch etc.).
  virtual std::string MetricsNamespace() const { return "RunInference"; }
  // The handler type name as written in YAML.
  virtual std::string_view type() const = 0;

  const ModelHandlerOptions& options() const { return options_; }
  BatchingKwargs BatchElementsKwargs() const { return options_.batching; }
  bool ShareModelAcrossProcesses() const { return dfw::ShareModelAcrossProcesses(options_); }
  int64_t ModelCopies() const { return dfw::ModelCopies(options_); }
  std::string ModelId() const { return options_.model_id.empty() ? options_.model_path : options_.model_id; }

  // The weights' size as loaded (SafetensorsHeader::loaded_bytes), when the handler read the
  // header while it was made: the plan sizes the model from it without opening the file again.
  std::optional<uint64_t> header_loaded_bytes() const { return header_loaded_bytes_; }
  void set_header_loaded_bytes(uint64_t bytes) { header_loaded_bytes_ = bytes; }

 protected:
  explicit ModelHandler(ModelHandlerOptions options) : options_(std::move(options)) {}

  // The backend for options().device, with Beam's rule: `device: GPU` uses CUDA when it can be
  // created, otherwise the CPU with one warning naming the reason; `device: CPU` uses the CPU.
  std::unique_ptr<InferenceBackend> MakeBackendForDevice() const;

 private:
  ModelHandlerOptions options_;
  std::optional<uint64_t> header_loaded_bytes_;
};

// Checks the options every handler shares (device, batch bounds, copies); kInvalidArgument names the
// key, the value and what is allowed.
Status ValidateModelHandlerOptions(const ModelHandlerOptions& options);

// One entry per handler type; the built-in ones are listed in src/inference/builtin_handlers.cc
// (one line each).
struct ModelHandlerTypeInfo {
  std::string type;                     // as written in YAML: model_handler.type
  std::vector<std::string> extra_keys;  // handler-specific config keys allowed in `extra`
  std::function<Result<std::unique_ptr<ModelHandler>>(ModelHandlerOptions)> make;
};
// A snapshot of the table: the built-in types plus any added with RegisterModelHandlerType.
std::vector<ModelHandlerTypeInfo> ModelHandlerTypes();

// Adds a handler type at run time (for tests and embedders: a handler that exists only in one
// binary). An empty type, a missing `make` or a type already present is kInvalidArgument.
// Thread-safe; register before the pipelines that use the type are built.
Status RegisterModelHandlerType(ModelHandlerTypeInfo info);

// The keys every handler accepts in model_handler.config.
const std::vector<std::string>& CommonModelHandlerKeys();

// Makes the handler of `type` after validating `options` (an unknown type or an `extra` key the
// handler does not declare is kInvalidArgument with "did you mean"). Does not load weights, but does check
// that the model files exist and agree (config vs safetensors header), so a bad model is an
// invalid-invocation error before any record is read.
Result<std::unique_ptr<ModelHandler>> MakeModelHandler(std::string_view type, ModelHandlerOptions options);

}  // namespace dfw
