// RunInference: Beam's BatchElements → model handler → PredictionResult, with Beam's metrics and
// dead letters.
//
//   - type: RunInference
//     config:
//       inference_tag: inference            # output field holding the PredictionResult
//       model_handler:
//         type: MlpModelHandlerSafetensors
//         config: {model_path: …, input_field: …, device: CPU, min_batch_size: …, …}
//       error_handling: {output: errors}
//
// With Beam's HuggingFacePipelineModelHandler (hf_pipeline_config.h) the example is the
// `preprocess` callable's result, `inference_args` sit beside `model_handler`, and `postprocess`
// (when given) replaces the PredictionResult in the output field.
//
// model_handler.config.blas_threads (optional, >= 1) pins the process's OpenBLAS pool for this
// model; without it the runner's policy applies (RunnerOptions::blas_threads, DefaultBlasThreads).
//
// Lanes: a CPU model runs in RunnerOptions::inference_lanes lanes (DefaultInferenceLanes: one per
// CPU when a single SDK process has the machine and enough harness threads), each a loaded
// model with its own BatchElements, as each of Beam's harness threads has its own DoFn calling a
// shared model. The weights are mmapped once; the graph overlaps at most that many Process calls.
//
// Per row: the example is `input_field`; a missing or malformed example is dead-lettered alone
// (Beam's failed_preprocessing). Good rows are batched; a batch whose inference fails goes to the
// error output as its rows with the reason (Beam's failed_inferences) and counts once in
// failed_batches_counter. Without error_handling the first failure fails the bundle.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "dfw/backend/cpu_isa.h"
#include "dfw/backend/registry.h"
#include "dfw/inference/batch_elements.h"
#include "dfw/inference/hf_pipeline_handler.h"
#include "dfw/inference/model_handler.h"
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "dfw/stages/run_inference.h"
#include "hf_pipeline_config.h"
#include "run_inference.h"

namespace dfw {
namespace {

struct RunInferenceOptions {
  std::string inference_tag = "inference";  // the field each output row gains
  std::string handler_type;                 // model_handler.type
  ModelHandlerOptions handler;              // model_handler.config
  // HuggingFacePipelineModelHandler only: its preprocess/postprocess callables (shared: the
  // options are copied for the load-time check).
  std::shared_ptr<const stages_internal::HfPipelineStageConfig> hf;
};

// Beam's metrics, looked up once (stable pointers into the run's registry).
struct InferenceMetrics {
  CounterCell* num_inferences;
  CounterCell* failed_batches_counter;
  DistributionCell* batch_size;
  DistributionCell* batch_byte_size;
  DistributionCell* batch_latency_us;
  DistributionCell* model_byte_size;
  DistributionCell* load_model_latency_ms;

  static InferenceMetrics Make(MetricsRegistry& r, const std::string& ns) {
    return {r.Counter(ns, "num_inferences"),
            r.Counter(ns, "failed_batches_counter"),
            r.Distribution(ns, "inference_request_batch_size"),
            r.Distribution(ns, "inference_request_batch_byte_size"),
            r.Distribution(ns, "inference_batch_latency_micro_secs"),
            r.Distribution(ns, "model_byte_size"),
            r.Distribution(ns, "load_model_latency_milli_secs")};
  }
};

Result<std::optional<int64_t>> OptInt(const StageConfig& c, const ConfigNode& m, const char* key) {
  if (!m[key].IsDefined()) return std::optional<int64_t>();
  const Value v = ConfigToValue(m[key]);
  if (!v.is_int()) return c.ConfigError(NodeLocation(c, m[key]) + ": model_handler config '" + key + "' must be an integer, got " + v.ToJson());
  return std::optional<int64_t>(v.as_int());
}

// Beam's own model handler types (beam-runinference.md §11): valid in a Beam pipeline, but their
// models run in Python (or behind a remote endpoint), so each is refused by name with what dfworker
// runs instead, rather than reported as an unknown type.
Status RefuseBeamHandler(const StageConfig& c, const ConfigNode& mh) {
  static const std::vector<std::pair<std::string, std::string>> kBeamHandlers = {
      {"VertexAIModelHandlerJSON", "it calls a remote Vertex AI endpoint, and dfworker runs models on this machine only"},
      {"HuggingFaceModelHandlerTensor", ""},
      {"HuggingFaceModelHandlerKeyedTensor", ""},
      {"PytorchModelHandlerTensor", "it loads a pickled PyTorch model class, which needs Python"},
      {"PytorchModelHandlerKeyedTensor", "it loads a pickled PyTorch model class, which needs Python"},
      {"SklearnModelHandlerNumpy", "it unpickles a scikit-learn model, which needs Python"},
      {"SklearnModelHandlerPandas", "it unpickles a scikit-learn model, which needs Python"},
      {"TFModelHandlerNumpy", "TensorFlow models are not supported"},
      {"TFModelHandlerTensor", "TensorFlow models are not supported"},
      {"OnnxModelHandlerNumpy", "ONNX models are not supported"},
      {"TensorRTEngineHandlerNumPy", "TensorRT engines are not supported"},
      {"VLLMCompletionsModelHandler", "it starts a vLLM server, which dfworker does not have"},
      {"VLLMChatModelHandler", "it starts a vLLM server, which dfworker does not have"},
      {"XGBoostModelHandlerNumpy", "XGBoost models are not supported"},
      {"GeminiModelHandler", "it calls a remote Gemini endpoint, and dfworker runs models on this machine only"},
  };
  const std::string type = mh["type"].Scalar();
  for (const auto& [name, why] : kBeamHandlers) {
    if (name != type) continue;
    std::string reason = why;
    if (reason.empty()) {
      // Hugging Face: name the task when there is one, since that is what has no model here.
      const ConfigNode& task = mh["config"]["task"];
      reason = task.IsScalar() ? "dfworker has no model for its task '" + task.Scalar() + "' (it runs transformers in Python)"
                                       : "it runs transformers models in Python";
    }
    return Unimplemented(NodeLocation(c, mh["type"]) + ": transform '" + c.name + "' (RunInference): model_handler type '" +
                         type + "' is valid Beam YAML but not supported by dfworker: " + reason +
                         ". Supported: HuggingFacePipelineModelHandler (a local BERT, DistilBERT or RoBERTa model "
                         "directory: text/token/zero-shot classification, fill-mask, feature extraction), "
                         "MlpModelHandlerSafetensors (an MLP in safetensors), SentenceEmbeddingHandler "
                         "(a BERT-family sentence encoder), or Beam's MLTransform with SentenceTransformerEmbeddings "
                         "(a local model directory) for text embeddings");
  }
  return Status::OK();
}

Result<RunInferenceOptions> ParseRunInferenceOptions(const StageConfig& c) {
  RunInferenceOptions o;
  ASSIGN_OR_RETURN(o.inference_tag, ConfigString(c, "inference_tag", std::string("inference")));
  const ConfigNode& mh = c.config["model_handler"];
  if (!mh.IsMap()) return ConfigKeyError(c, "model_handler", "must be a mapping with 'type' and 'config'");
  for (const ConfigEntry& kv : mh.entries()) {
    const std::string key = kv.key.Scalar();
    if (key != "type" && key != "config") {
      return ConfigKeyError(c, "model_handler", "unknown key '" + key + "'; allowed: type, config");
    }
  }
  if (!mh["type"].IsScalar()) return ConfigKeyError(c, "model_handler", "'type' is required (a handler type name)");
  o.handler_type = mh["type"].Scalar();
  RETURN_IF_ERROR(RefuseBeamHandler(c, mh));
  const ConfigNode& hc = mh["config"];
  if (!hc.IsMap()) return ConfigKeyError(c, "model_handler", "'config' must be a mapping");
  ModelHandlerOptions& h = o.handler;
  if (o.handler_type == kHfPipelineHandlerType) {
    ASSIGN_OR_RETURN(o.hf, stages_internal::ParseHfPipelineConfig(c, hc, h));
  } else if (c.config["inference_args"].IsDefined()) {
    return ConfigKeyError(c, "inference_args", "is read by HuggingFacePipelineModelHandler only (model_handler type '" +
                                                   o.handler_type + "' takes none)");
  }
  const auto& common = CommonModelHandlerKeys();
  for (const ConfigEntry& kv : hc.entries()) {
    const std::string key = kv.key.Scalar();
    if (o.hf) break;  // its keys were read above
    if (std::find(common.begin(), common.end(), key) == common.end()) h.extra.Append(key, ConfigToValue(kv.value));
  }
  auto str = [&](const char* key, std::string& out) -> Status {
    if (!hc[key].IsDefined()) return Status::OK();
    const Value v = ConfigToValue(hc[key]);
    if (!v.is_string()) return c.ConfigError(NodeLocation(c, hc[key]) + ": model_handler config '" + key + "' must be a string");
    out = v.as_string();
    return Status::OK();
  };
  if (!o.hf) {
    RETURN_IF_ERROR(str("model_path", h.model_path));
    h.model_path = ResolveConfigPath(c, h.model_path);
    RETURN_IF_ERROR(str("device", h.device));
    RETURN_IF_ERROR(str("input_field", h.input_field));
  }
  RETURN_IF_ERROR(str("model_id", h.model_id));
  ASSIGN_OR_RETURN(h.batching.min_batch_size, OptInt(c, hc, "min_batch_size"));
  ASSIGN_OR_RETURN(h.batching.max_batch_size, OptInt(c, hc, "max_batch_size"));
  ASSIGN_OR_RETURN(h.batching.max_batch_weight, OptInt(c, hc, "max_batch_weight"));
  ASSIGN_OR_RETURN(h.model_copies, OptInt(c, hc, "model_copies"));
  ASSIGN_OR_RETURN(h.blas_threads, OptInt(c, hc, "blas_threads"));
  if (hc["max_batch_duration_secs"].IsDefined()) {
    const Value v = ConfigToValue(hc["max_batch_duration_secs"]);
    if (!v.is_number()) return c.ConfigError("model_handler config 'max_batch_duration_secs' must be a number of seconds");
    h.batching.max_batch_duration_secs = *v.AsNumber();
  }
  if (hc["large_model"].IsDefined()) {
    const Value v = ConfigToValue(hc["large_model"]);
    if (!v.is_bool()) return c.ConfigError("model_handler config 'large_model' must be true or false");
    h.large_model = v.as_bool();
  }
  return o;
}

BatchElementsOptions BatchOptionsFor(const ModelHandler& handler) {
  const BatchingKwargs k = handler.BatchElementsKwargs();
  BatchElementsOptions b;
  if (k.min_batch_size) b.min_batch_size = *k.min_batch_size;
  if (k.max_batch_size) b.max_batch_size = *k.max_batch_size;
  b.max_batch_duration_secs = k.max_batch_duration_secs;
  b.max_batch_weight = k.max_batch_weight;
  b.sort_window = handler.SortWindow();
  return b;
}

// One model with its own batcher and scratch: what one Beam harness thread's DoFn holds. Lanes run
// concurrently (each Process call takes a free one); the weights are mmapped, so lanes share them.
struct Lane {
  BatchElements<Row> batcher;
  std::unique_ptr<Model> model;
  // Reused across batches: no per-batch vector allocation in steady state.
  std::vector<const Value*> examples;
  std::vector<Value> predictions;
  std::vector<Value> computed;  // preprocess results (HuggingFacePipelineModelHandler)
};

class RunInference final : public Stage {
 public:
  static Result<std::unique_ptr<Stage>> Make(const StageConfig& config) {
    ASSIGN_OR_RETURN(RunInferenceOptions options, ParseRunInferenceOptions(config));
    auto handler = MakeModelHandler(options.handler_type, options.handler);
    if (!handler.ok()) return config.ConfigError(handler.status().message());
    // Batch options are checked here, once, so a lane's batcher cannot fail to build later.
    if (auto b = BatchElements<Row>::Make(BatchOptionsFor(**handler), SystemClock()); !b.ok()) {
      return config.ConfigError(b.status().message());
    }
    auto stage = std::unique_ptr<RunInference>(new RunInference(config, std::move(options), std::move(handler).value()));
    RETURN_IF_ERROR(stage->LoadModels());
    return std::unique_ptr<Stage>(std::move(stage));
  }

  int MaxConcurrentCalls() const override { return static_cast<int>(lanes_.size()); }
  int64_t MaxMessageRows() const override { return handler_->MaxMessageRows(); }

  Status StartBundle(const BundleContext&) override {
    for (auto& lane : lanes_) lane->batcher.StartBundle();
    return Status::OK();
  }

  Status Process(RowBatch& in, StageOutput& out) override {
    LaneLease lease(*this);
    Lane& lane = lease.lane();
    auto consume = [&](std::vector<Row>& batch) { return RunBatch(lane, batch, out); };
    for (Row& row : in) {
      if (options_.hf) {
        Result<Value> example = Preprocess(row);
        Status s = example.ok() ? lane.model->CheckExample(*example) : example.status();
        if (!s.ok()) {
          RETURN_IF_ERROR(out.Fail(row, "RunInference: preprocess '" + options_.hf->preprocess_shown + "': " + s.message()));
          continue;
        }
        RETURN_IF_ERROR(lane.batcher.Add(std::move(row), Weight(*lane.model, *example), consume));
        continue;
      }
      const Value* example = row.Find(options_.handler.input_field);
      if (example == nullptr) {
        RETURN_IF_ERROR(out.Fail(row, "RunInference: input field '" + options_.handler.input_field + "' is missing"));
        continue;
      }
      if (Status s = lane.model->CheckExample(*example); !s.ok()) {
        RETURN_IF_ERROR(out.Fail(row, "RunInference: input field '" + options_.handler.input_field + "': " + s.message()));
        continue;
      }
      const int64_t weight = Weight(*lane.model, *example);
      RETURN_IF_ERROR(lane.batcher.Add(std::move(row), weight, consume));
    }
    return lane.batcher.Poll(consume);
  }

  // Never overlaps Process (stage.h), so every lane is free here.
  Status FinishBundle(StageOutput& out) override {
    for (auto& lane : lanes_) {
      Lane& l = *lane;
      RETURN_IF_ERROR(l.batcher.FinishBundle([&](std::vector<Row>& batch) { return RunBatch(l, batch, out); }));
    }
    return Status::OK();
  }

 private:
  // Takes a free lane for one Process call (the graph runs at most lanes_.size() calls at once, so
  // one is always free; the wait is a guard, not a queue).
  class LaneLease {
   public:
    explicit LaneLease(RunInference& s) : s_(s) {
      std::unique_lock lock(s_.mu_);
      s_.lane_freed_.wait(lock, [&] { return !s_.free_.empty(); });
      lane_ = s_.free_.back();
      s_.free_.pop_back();
    }
    ~LaneLease() {
      {
        std::lock_guard lock(s_.mu_);
        s_.free_.push_back(lane_);
      }
      s_.lane_freed_.notify_one();
    }
    LaneLease(const LaneLease&) = delete;
    LaneLease& operator=(const LaneLease&) = delete;
    Lane& lane() { return *lane_; }

   private:
    RunInference& s_;
    Lane* lane_;
  };

  RunInference(const StageConfig& config, RunInferenceOptions options, std::unique_ptr<ModelHandler> handler)
      : config_(config), options_(std::move(options)), handler_(std::move(handler)) {
    // Load-time checks pass no registry; metrics then go to a private one nobody reads.
    MetricsRegistry* registry = config.run.metrics != nullptr ? config.run.metrics : &private_metrics_;
    registry_ = registry;
    metrics_ = InferenceMetrics::Make(*registry, handler_->MetricsNamespace());
    model_id_ = Value::String(handler_->ModelId());
    sorted_or_weighted_ = handler_->SortWindow() > 0 || handler_->BatchElementsKwargs().max_batch_weight.has_value();
  }

  // Lanes: the runner's count (RunnerOptions::inference_lanes) for CPU models. One lane when the
  // model asks for the GPU (one model per process, as on Dataflow; on the emulated device every
  // copy is charged to its memory ledger) or when blas_threads pins the BLAS pool for it.
  int WantedLanes() const {
    if (options_.handler.device != "CPU" || options_.handler.blas_threads) return 1;
    return std::max(1, config_.run.inference_lanes);
  }

  // (A blas_threads pin is applied by the runner, which sizes the process's pool once before any
  // stage loads a model.)
  Status LoadModels() {
    const int lanes = WantedLanes();
    for (int i = 0; i < lanes; ++i) {
      const auto start = std::chrono::steady_clock::now();
      auto model = handler_->LoadModel(config_.run.model_process);
      if (!model.ok()) return config_.ConfigError(model.status().message());
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      auto batcher = BatchElements<Row>::Make(BatchOptionsFor(*handler_), SystemClock());
      if (!batcher.ok()) return config_.ConfigError(batcher.status().message());
      // Beam records one load per model; Beam measures the RSS increase around load_model, but the
      // weights are mmapped (RSS grows only as pages are touched), so we report the bytes the
      // model's weights occupy instead. Lanes share the mapping: only the first is reported.
      if (i == 0) {
        metrics_.load_model_latency_ms->Update(ms.count());
        metrics_.model_byte_size->Update((*model)->byte_size());
        for (const auto& [name, value] : (*model)->LoadFigures()) {
          registry_->Distribution(handler_->MetricsNamespace(), name)->Update(value);
        }
        // What the CPU could run it with (CpuIsa::Level), for the report and `dfworker bench`.
        if ((*model)->device() == "cpu") {
          registry_->Distribution(handler_->MetricsNamespace(), "cpu_isa_level")->Update(DetectCpuIsa().Level());
        }
      }
      lanes_.push_back(std::make_unique<Lane>(Lane{std::move(batcher).value(), std::move(model).value(), {}, {}, {}}));
      free_.push_back(lanes_.back().get());
    }
    return Status::OK();
  }

  // An example's weight for the batcher, asked of the model only when batches are cut by weight.
  int64_t Weight(const Model& model, const Value& example) const {
    return sorted_or_weighted_ ? model.ElementWeight(example) : 1;
  }

  // The preprocess callable on one row (HuggingFacePipelineModelHandler): deterministic, so it is
  // run again when the batch is formed rather than stored in the row.
  Result<Value> Preprocess(const Row& row) const { return options_.hf->preprocess->Evaluate(row); }

  // The downstream work BatchElements times: one run_inference call for the batch.
  Status RunBatch(Lane& lane, std::vector<Row>& batch, StageOutput& out) {
    lane.examples.clear();
    if (options_.hf) {
      lane.computed.clear();
      lane.computed.reserve(batch.size());  // no reallocation: examples point into it
      for (const Row& row : batch) {
        Result<Value> v = Preprocess(row);
        lane.computed.push_back(v.ok() ? std::move(v).value() : Value());
        lane.examples.push_back(&lane.computed.back());
      }
    } else {
      for (const Row& row : batch) lane.examples.push_back(row.Find(options_.handler.input_field));
    }
    metrics_.batch_size->Update(static_cast<int64_t>(batch.size()));
    metrics_.batch_byte_size->Update(lane.model->GetNumBytes(lane.examples));
    lane.predictions.clear();
    const auto start = std::chrono::steady_clock::now();
    Status s = lane.model->RunInference(lane.examples, lane.predictions);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
    metrics_.batch_latency_us->Update(us.count());
    if (s.ok() && lane.predictions.size() != batch.size()) {
      s = Internal("model returned " + std::to_string(lane.predictions.size()) + " predictions for " +
                   std::to_string(batch.size()) + " examples");
    }
    if (!s.ok()) {
      metrics_.failed_batches_counter->Inc();
      const std::string msg = "RunInference: inference failed for a batch of " + std::to_string(batch.size()) +
                              " rows: " + s.message();
      for (const Row& row : batch) RETURN_IF_ERROR(out.Fail(row, msg));
      return Status::OK();
    }
    metrics_.num_inferences->Inc(static_cast<int64_t>(batch.size()));
    for (const auto& [name, value] : lane.model->BatchFigures()) {
      registry_->Distribution(handler_->MetricsNamespace(), name)->Update(value);
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Row result;
      result.Reserve(3);
      result.Append("example", *lane.examples[i]);
      result.Append("inference", std::move(lane.predictions[i]));
      result.Append("model_id", model_id_);
      if (options_.hf && options_.hf->postprocess) {
        Result<Value> post = options_.hf->postprocess->Evaluate(result);
        if (!post.ok()) {
          RETURN_IF_ERROR(out.Fail(batch[i], "RunInference: postprocess '" + options_.hf->postprocess_shown + "': " +
                                                 post.status().message()));
          continue;
        }
        batch[i].Set(options_.inference_tag, std::move(post).value());
      } else {
        batch[i].Set(options_.inference_tag, Value::FromRow(std::move(result)));
      }
      out.Emit(std::move(batch[i]));
    }
    return Status::OK();
  }

  StageConfig config_;
  RunInferenceOptions options_;
  std::unique_ptr<ModelHandler> handler_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::mutex mu_;
  std::condition_variable lane_freed_;
  std::vector<Lane*> free_;  // guarded by mu_
  MetricsRegistry private_metrics_;
  MetricsRegistry* registry_ = nullptr;  // config.run.metrics or private_metrics_
  InferenceMetrics metrics_{};
  Value model_id_;
  bool sorted_or_weighted_ = false;  // the batcher pools by weight or caps it: ask the model for weights
};

// Load-time check (also what --dry_run runs): the config parses and the model files exist and
// agree (config.json vs the safetensors header). Weights are not loaded.
Status CheckRunInference(const StageConfig& config) { return CheckRunInferenceHandler(config, ModelChecks::kFull).status(); }

}  // namespace

Result<std::unique_ptr<ModelHandler>> CheckRunInferenceHandler(const StageConfig& config, ModelChecks checks) {
  ASSIGN_OR_RETURN(RunInferenceOptions options, ParseRunInferenceOptions(config));
  options.handler.config_only = checks == ModelChecks::kConfigOnly;
  auto handler = MakeModelHandler(options.handler_type, options.handler);
  if (!handler.ok()) return config.ConfigError(handler.status().message());
  if (checks == ModelChecks::kFull) {
    auto estimator = BatchSizeEstimator::Make(BatchOptionsFor(**handler));
    if (!estimator.ok()) return config.ConfigError(estimator.status().message());
  }
  return handler;
}

Result<std::optional<WorkspaceEstimate>> EstimateRunInferenceWorkspace(const StageConfig& config) {
  ASSIGN_OR_RETURN(RunInferenceOptions options, ParseRunInferenceOptions(config));
  auto handler = MakeModelHandler(options.handler_type, options.handler);
  if (!handler.ok()) return config.ConfigError(handler.status().message());
  return (*handler)->EstimateWorkspace();
}

Result<std::optional<WorkEstimate>> EstimateRunInferenceWork(const StageConfig& config) {
  ASSIGN_OR_RETURN(RunInferenceOptions options, ParseRunInferenceOptions(config));
  auto handler = MakeModelHandler(options.handler_type, options.handler);
  if (!handler.ok()) return config.ConfigError(handler.status().message());
  return (*handler)->EstimateWork();
}

Result<RunInferenceConfig> DescribeRunInference(const StageConfig& config) {
  ASSIGN_OR_RETURN(RunInferenceOptions options, ParseRunInferenceOptions(config));
  RunInferenceConfig out;
  out.handler_type = std::move(options.handler_type);
  out.handler = std::move(options.handler);
  out.device_line = config.line;
  out.device_column = config.column;
  const ConfigNode& device = config.config["model_handler"]["config"]["device"];
  if (device.IsDefined() && device.line() > 0) {
    out.device_line = device.line();
    out.device_column = device.column();
  }
  return out;
}

namespace stages_internal {
Result<std::unique_ptr<Stage>> MakeRunInferenceStage(const StageConfig& config) { return RunInference::Make(config); }
Status CheckRunInferenceConfig(const StageConfig& config) { return CheckRunInference(config); }
Status CheckRunInferenceOptions(const StageConfig& config) { return ParseRunInferenceOptions(config).status(); }
}  // namespace stages_internal

void RegisterRunInference(StageRegistry& r, ModelChecks checks) {
  Status s = r.Register(StageTypeInfo{
      .type = "RunInference",
      .factory = RunInference::Make,
      .allowed_keys = {"inference_tag", "model_handler", "inference_args"},
      .required_keys = {"model_handler"},
      // Not serial: Process calls overlap up to the number of lanes (MaxConcurrentCalls).
      .traits = {.can_fail_per_record = true},
      .check = checks == ModelChecks::kFull ? StageCheck(CheckRunInference) : StageCheck(stages_internal::CheckRunInferenceOptions),
  });
  (void)s;  // only fails on a duplicate registration, which RegisterBuiltinStages never does
}

}  // namespace dfw
