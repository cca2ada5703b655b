// MLP handler: weights from safetensors, GEMM + fused bias/activation per layer on an
// InferenceBackend, optional softmax.
#include "dfw/inference/mlp_handler.h"

#include "dfw/inference/batch_elements.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <optional>
#include <string>

#include "dfw/backend/cpu_isa.h"
#include "dfw/backend/registry.h"
#include "dfw/common/strings.h"
#include "dfw/inference/device_memory.h"
#include "dfw/inference/precision_choice.h"
#include "dfw/inference/precision_monitor.h"
#include "dfw/inference/shared_copy.h"
#include "inference/weights/dtype_convert.h"

namespace dfw {
namespace {

bool IsDir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string ShapeOf(std::initializer_list<int64_t> dims) {
  TensorInfo t;
  t.shape.assign(dims.begin(), dims.end());
  return t.ShapeString();
}

Status CheckTensor(const SafetensorsHeader& h, const std::string& name, std::initializer_list<int64_t> shape) {
  const TensorInfo* t = h.Find(name);
  if (t == nullptr) return InvalidArgument("weights have no tensor '" + name + "' (expected shape " + ShapeOf(shape) + ")");
  if (t->dtype != TensorDType::kF32 && t->dtype != TensorDType::kF16 && t->dtype != TensorDType::kBF16) {
    return InvalidArgument("tensor '" + name + "' has dtype " + std::string(TensorDTypeName(t->dtype)) +
                           "; the MLP handler supports F32, F16, BF16");
  }
  if (!std::equal(t->shape.begin(), t->shape.end(), shape.begin(), shape.end())) {
    return InvalidArgument("tensor '" + name + "' has shape " + t->ShapeString() + " but config.json implies " +
                           ShapeOf(shape));
  }
  return Status::OK();
}

// Part of device memory someone else owns (a model host's GPU copy opened through CUDA IPC).
class DeviceView final : public DeviceBuffer {
 public:
  DeviceView(void* p, std::size_t bytes) : p_(p), bytes_(bytes) {}
  void* data() override { return p_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  void* p_;
  std::size_t bytes_;
};

// One layer's weights as F32: either a view into the mapping or an owned converted copy.
struct LayerWeights {
  std::vector<float> owned_w, owned_b;
  const float* w = nullptr;
  const float* b = nullptr;
  std::unique_ptr<DeviceBuffer> dev_w, dev_b;
  std::unique_ptr<PreparedLinear> prepared;  // dev_w in the model's LinearDType
};

Result<const float*> AsF32(const SafetensorsFile& file, const TensorInfo& t, std::vector<float>& owned) {
  const uint8_t* src = file.Data(t);
  const std::size_t n = t.num_elements();
  if (t.dtype == TensorDType::kF32 && reinterpret_cast<uintptr_t>(src) % alignof(float) == 0) {
    return reinterpret_cast<const float*>(src);
  }
  owned.resize(n);
  RETURN_IF_ERROR(WidenToFloat32(t.dtype, src, n, owned.data()));  // F32 misaligned in the file: copied once
  return static_cast<const float*>(owned.data());
}

// `dtype` (nullopt: auto), `precision_check_every` and `max_prob_diff` of the handler's config.
struct MlpPrecisionSettings {
  std::optional<LinearDType> dtype;
  int check_every = kDefaultPrecisionCheckEvery;
  PrecisionTolerance tolerance;  // kind kClassifier
};

// Where a shared model's weights come from (device_memory.h, shared_copy.h).
struct SharedSource {
  std::string models_dir;
  std::string weights_path;  // the original model file (names the copies)
  int copies = 1;
  int sdk_index = 0;
  int copy = 0;              // the attached copy
  CopyHostRecord host;       // its model host
};

class MlpModel final : public Model {
 public:
  MlpModel(MlpConfig config, std::unique_ptr<SafetensorsFile> file, std::unique_ptr<InferenceBackend> backend,
           std::unique_ptr<DeviceMemoryCharge> charge, std::optional<SharedSource> shared)
      : config_(std::move(config)),
        file_(std::move(file)),
        backend_(std::move(backend)),
        charge_(std::move(charge)),
        shared_(std::move(shared)) {
    for (const auto& l : config_.layers) max_width_ = std::max(max_width_, l.out_features);
    max_width_ = std::max(max_width_, config_.input_dim);
  }

  // Private weights are charged at load (DeviceMemoryCharge::ChargeOrDefer); a shared copy is
  // charged by its model host.
  void ChargeWeights(std::string_view model_name) {
    if (charge_ != nullptr && !shared_) {
      charge_->ChargeOrDefer(static_cast<uint64_t>(byte_size()), "model weights of '" + std::string(model_name) + "'");
    }
  }

  // The run-time check (precision_monitor.h): one batch in `every` (the first included) run in a
  // reduced dtype is recomputed in float32 and compared by `tolerance` (argmax and largest output
  // difference); a row outside it moves the plan the handler's lanes share, and with it this
  // model, to the next safer dtype for the rest of the job in this process.
  void Monitor(std::shared_ptr<PrecisionPlanState> state, PrecisionTolerance tolerance, int every, std::string id) {
    generation_ = state->generation();
    monitor_.emplace(std::move(state), tolerance, every, std::move(id));
  }

  Status Load() {
    weights_.clear();
    reference_.clear();
    host_device_copy_.reset();
    if (shared_ && !shared_->host.cuda_ipc_handle.empty() && backend_->name() == "cuda") {
      Status opened = OpenHostDeviceCopy();
      if (opened.ok()) {
        spdlog::info("model '{}': kernels run on model host '{}'s GPU copy (CUDA IPC, {}); no device copy of its own",
                     shared_->weights_path, shared_->host.name, HumanBytes(host_device_copy_->bytes()));
      } else {
        host_device_copy_.reset();
        spdlog::warn("model '{}': cannot use model host '{}'s GPU copy ({}); uploading a device copy of its own",
                     shared_->weights_path, shared_->host.name, opened.message());
      }
    }
    for (const MlpLayerConfig& l : config_.layers) {
      LayerWeights lw;
      const TensorInfo& w = *file_->header().Find(l.name + ".weight");
      if (host_device_copy_) {
        lw.dev_w = DeviceSlice(w);
      } else {
        ASSIGN_OR_RETURN(lw.w, AsF32(*file_, w, lw.owned_w));
        ASSIGN_OR_RETURN(lw.dev_w, backend_->UploadWeights(lw.w, l.in_features * l.out_features * sizeof(float)));
      }
      if (l.bias) {
        const TensorInfo& b = *file_->header().Find(l.name + ".bias");
        if (host_device_copy_) {
          lw.dev_b = DeviceSlice(b);
        } else {
          ASSIGN_OR_RETURN(lw.b, AsF32(*file_, b, lw.owned_b));
          ASSIGN_OR_RETURN(lw.dev_b, backend_->UploadWeights(lw.b, l.out_features * sizeof(float)));
        }
      }
      weights_.push_back(std::move(lw));
    }
    return SetLinearDType(dtype_);
  }

  // Re-prepares every layer's weights in `dtype` (all or nothing).
  Status SetLinearDType(LinearDType dtype) {
    std::vector<std::unique_ptr<PreparedLinear>> made;
    for (std::size_t i = 0; i < config_.layers.size(); ++i) {
      const MlpLayerConfig& l = config_.layers[i];
      ASSIGN_OR_RETURN(auto p, backend_->PrepareLinear(weights_[i].dev_w->f32(), static_cast<int>(l.out_features),
                                                       static_cast<int>(l.in_features), dtype));
      made.push_back(std::move(p));
    }
    for (std::size_t i = 0; i < made.size(); ++i) weights_[i].prepared = std::move(made[i]);
    dtype_ = dtype;
    return Status::OK();
  }

  InferenceBackend& backend() { return *backend_; }
  const MlpConfig& config() const { return config_; }

  // The layers on `rows` rows already in host_in_; the output (rows x output_dim) in host_out_.
  // `reference`: with the float32 weights of the run-time check instead of the model's dtype.
  Status Forward(int rows, bool reference = false) {
    const int64_t in_dim = config_.input_dim;
    float* x = act_a_->f32();
    float* y = act_b_->f32();
    RETURN_IF_ERROR(backend_->CopyToDevice(x, host_in_.data(), rows * in_dim * sizeof(float)));
    for (std::size_t i = 0; i < config_.layers.size(); ++i) {
      // y[rows x out] = act(x[rows x in] · Wᵀ + b), W stored [out x in] (nn.Linear layout).
      const float* bias = weights_[i].dev_b ? weights_[i].dev_b->f32() : nullptr;
      const PreparedLinear& w = reference ? *reference_[i] : *weights_[i].prepared;
      RETURN_IF_ERROR(backend_->Linear(x, w, bias, y, rows, config_.layers[i].activation));
      std::swap(x, y);
    }
    const int out_dim = static_cast<int>(config_.output_dim());
    if (config_.softmax) RETURN_IF_ERROR(backend_->Softmax(x, rows, out_dim));
    return backend_->CopyToHost(host_out_.data(), x, rows * out_dim * sizeof(float));
  }

  // `rows` x input_dim values in, rows x output_dim out (the precision choice's calibration run).
  Result<std::vector<float>> Run(const std::vector<float>& inputs, int rows) {
    RETURN_IF_ERROR(EnsureCapacity(rows, /*charge=*/false));
    std::copy(inputs.begin(), inputs.end(), host_in_.begin());
    Status ran = Forward(rows);
    std::vector<float> out(host_out_.begin(), host_out_.begin() + rows * config_.output_dim());
    // The uncharged calibration workspace goes: real batches grow (and charge) their own.
    act_a_.reset();
    act_b_.reset();
    capacity_ = 0;
    RETURN_IF_ERROR(ran);
    return out;
  }

  Status CheckExample(const Value& example) const override {
    if (!example.is_list()) {
      return InvalidArgument("expected a list of " + std::to_string(config_.input_dim) + " numbers, got " +
                             std::string(example.TypeName()));
    }
    const List& xs = example.as_list();
    if (static_cast<int64_t>(xs.size()) != config_.input_dim) {
      return InvalidArgument("expected a list of " + std::to_string(config_.input_dim) + " numbers, got a list of " +
                             std::to_string(xs.size()));
    }
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if (!xs[i].is_number()) {
        return InvalidArgument("element " + std::to_string(i) + " is " + std::string(xs[i].TypeName()) + " " +
                               xs[i].ToJson() + ", expected a number");
      }
    }
    return Status::OK();
  }

  Status RunInference(std::span<const Value* const> batch, std::vector<Value>& predictions) override {
    const int rows = static_cast<int>(batch.size());
    if (rows == 0) return Status::OK();
    RETURN_IF_ERROR(EnsureSharedCopy());
    if (charge_ != nullptr) RETURN_IF_ERROR(charge_->Settle());
    RETURN_IF_ERROR(EnsureCapacity(rows));
    checks_.clear();
    if (monitor_ && monitor_->state().generation() != generation_) {  // a check here or in another lane switched
      generation_ = monitor_->state().generation();
      RETURN_IF_ERROR(SetLinearDType(monitor_->state().plan().dtype));
    }
    const int64_t in_dim = config_.input_dim;
    for (int r = 0; r < rows; ++r) {
      RETURN_IF_ERROR(CheckExample(*batch[r]).WithContext("example " + std::to_string(r)));
      const List& xs = batch[r]->as_list();
      float* dst = host_in_.data() + r * in_dim;
      for (int64_t j = 0; j < in_dim; ++j) dst[j] = static_cast<float>(*xs[j].AsNumber());
    }
    RETURN_IF_ERROR(Forward(rows));
    if (monitor_ && monitor_->Due() && dtype_ != LinearDType::kFloat32) RETURN_IF_ERROR(CheckInFloat32(rows));
    last_batch_rows_ = rows;
    const int out_dim = static_cast<int>(config_.output_dim());
    predictions.reserve(predictions.size() + rows);
    for (int r = 0; r < rows; ++r) {
      List out;
      out.reserve(out_dim);
      for (int j = 0; j < out_dim; ++j) out.push_back(Value::Float(host_out_[r * out_dim + j]));
      predictions.push_back(Value::FromList(std::move(out)));
    }
    return Status::OK();
  }

  int64_t GetNumBytes(std::span<const Value* const> batch) const override {
    return static_cast<int64_t>(batch.size()) * config_.input_dim * static_cast<int64_t>(sizeof(float));
  }

  int64_t byte_size() const override {
    int64_t bytes = 0;
    for (const auto& l : config_.layers) bytes += (l.in_features + (l.bias ? 1 : 0)) * l.out_features * 4;
    return bytes;
  }

  std::string_view device() const override { return backend_->name(); }

  std::vector<std::pair<std::string, int64_t>> LoadFigures() const override {
    return {{"linear_dtype_bits", LinearDTypeBits(dtype_)}};
  }

  // The last batch's arithmetic, 2 x in x out per layer and row (as EstimateWork counts it), so a
  // run reports the model's achieved GFLOP/s the way the encoders do (metrics.json, bench, and
  // scripts/gpu-check.sh's handler efficiency).
  std::vector<std::pair<std::string, int64_t>> BatchFigures() const override {
    double flops_per_row = 0;
    int64_t in = config_.input_dim;
    for (const auto& l : config_.layers) {
      flops_per_row += 2.0 * static_cast<double>(in) * static_cast<double>(l.out_features);
      in = l.out_features;
    }
    std::vector<std::pair<std::string, int64_t>> out = {{"batch_kflop", std::llround(flops_per_row * last_batch_rows_ / 1e3)}};
    out.insert(out.end(), checks_.begin(), checks_.end());
    return out;
  }

 private:
  // The batch just computed (in host_out_), again with float32 weights, against what it got. The
  // batch's predictions stay what its dtype computed.
  Status CheckInFloat32(int rows) {
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(config_.output_dim());
    if (reference_.empty()) {
      std::vector<std::unique_ptr<PreparedLinear>> made;
      for (std::size_t i = 0; i < config_.layers.size(); ++i) {
        const MlpLayerConfig& l = config_.layers[i];
        ASSIGN_OR_RETURN(auto p, backend_->PrepareLinear(weights_[i].dev_w->f32(), static_cast<int>(l.out_features),
                                                         static_cast<int>(l.in_features), LinearDType::kFloat32));
        made.push_back(std::move(p));
      }
      reference_ = std::move(made);
    }
    got_.assign(host_out_.begin(), host_out_.begin() + static_cast<std::ptrdiff_t>(n));
    RETURN_IF_ERROR(Forward(rows, /*reference=*/true));
    ref_.assign(host_out_.begin(), host_out_.begin() + static_cast<std::ptrdiff_t>(n));
    std::copy(got_.begin(), got_.end(), host_out_.begin());
    row_dtypes_.assign(static_cast<std::size_t>(rows), dtype_);
    monitor_->Check(ref_, got_, static_cast<int>(config_.output_dim()), row_dtypes_);
    checks_ = monitor_->TakeFigures();
    return Status::OK();
  }

  // A shared copy whose model host died is gone (on CUDA its device memory goes with the host):
  // move to the next copy whose host runs, or fail the batch naming the hosts.
  Status EnsureSharedCopy() {
    if (!shared_ || CopyHostAlive(shared_->host)) return Status::OK();
    const std::string lost = "model host '" + shared_->host.name + "' (pid " + std::to_string(shared_->host.pid) +
                             ") of shared copy " + std::to_string(shared_->copy) + " is gone";
    Result<AttachedCopy> next =
        AttachSharedCopy(shared_->models_dir, shared_->weights_path, shared_->copies, shared_->sdk_index);
    if (!next.ok()) return Unavailable(lost + "; " + next.status().message());
    spdlog::warn("{}; using shared copy {} (model host '{}', pid {})", lost, next->copy, next->host.name, next->host.pid);
    file_ = std::move(next->file);
    shared_->copy = next->copy;
    shared_->host = next->host;
    return Load();
  }

  // Opens the attached host's GPU copy: the published file's data section byte for byte, so each
  // tensor is at its TensorInfo offset. Used only when every tensor is F32 at a float-aligned offset
  // (PublishF32Copy makes them so) and the sizes agree; otherwise the caller uploads its own copy.
  Status OpenHostDeviceCopy() {
    const uint64_t expected = file_->data_section_bytes();
    if (shared_->host.cuda_ipc_bytes != expected) {
      return FailedPrecondition("the host exported " + std::to_string(shared_->host.cuda_ipc_bytes) +
                                " bytes but the published data section has " + std::to_string(expected));
    }
    for (const MlpLayerConfig& l : config_.layers) {
      for (const std::string& name : {l.name + ".weight", l.name + ".bias"}) {
        const TensorInfo* t = file_->header().Find(name);
        if (t == nullptr) continue;  // no bias: CheckMlpWeights already required what the config needs
        if (t->dtype != TensorDType::kF32 || t->begin % alignof(float) != 0) {
          return FailedPrecondition("tensor '" + name + "' is not F32 at a 4-byte aligned offset in the published copy");
        }
      }
    }
    ASSIGN_OR_RETURN(host_device_copy_, backend_->ImportBuffer(shared_->host.cuda_ipc_handle, expected));
    return Status::OK();
  }

  std::unique_ptr<DeviceBuffer> DeviceSlice(const TensorInfo& t) {
    return std::make_unique<DeviceView>(static_cast<uint8_t*>(host_device_copy_->data()) + t.begin, t.num_bytes());
  }

  // Grows the workspace to hold `rows` (never shrinks), so steady state allocates nothing. The
  // growth is charged to the ledger (the activations live on the device).
  // (The calibration run of the precision choice, at load, is not charged: charge = false.)
  Status EnsureCapacity(int rows, bool charge = true) {
    if (rows <= capacity_) return Status::OK();
    const std::size_t act_bytes = static_cast<std::size_t>(rows) * max_width_ * sizeof(float);
    if (charge_ != nullptr && charge) {
      const uint64_t old_bytes = 2ull * static_cast<uint64_t>(capacity_) * max_width_ * sizeof(float);
      RETURN_IF_ERROR(charge_->Charge(2 * act_bytes - old_bytes, "workspace for a batch of " + std::to_string(rows) + " rows"));
    }
    ASSIGN_OR_RETURN(act_a_, backend_->Allocate(act_bytes));
    ASSIGN_OR_RETURN(act_b_, backend_->Allocate(act_bytes));
    host_in_.resize(static_cast<std::size_t>(rows) * config_.input_dim);
    host_out_.resize(static_cast<std::size_t>(rows) * config_.output_dim());
    capacity_ = rows;
    return Status::OK();
  }

  MlpConfig config_;
  std::unique_ptr<SafetensorsFile> file_;  // keeps F32 weights mapped while the backend reads them
  std::unique_ptr<InferenceBackend> backend_;
  std::unique_ptr<DeviceMemoryCharge> charge_;  // null: no ledger
  std::optional<SharedSource> shared_;          // set: weights from a model host's copy
  LinearDType dtype_ = LinearDType::kFloat32;  // what the layers' weights are prepared in
  // The attached model host's GPU copy opened through CUDA IPC (weights_ then view into it), or null.
  // Declared before weights_ so the views go first.
  std::unique_ptr<DeviceBuffer> host_device_copy_;
  std::vector<LayerWeights> weights_;
  int64_t max_width_ = 0;
  int capacity_ = 0;
  int last_batch_rows_ = 0;  // rows of the last RunInference call (BatchFigures)
  // The run-time check: unset when the handler runs none.
  std::optional<PrecisionMonitor> monitor_;
  int generation_ = 0;  // the shared plan's generation this model's dtype follows
  std::vector<std::unique_ptr<PreparedLinear>> reference_;  // float32 weights, made at the first check
  std::vector<float> got_, ref_;
  std::vector<LinearDType> row_dtypes_;
  std::vector<std::pair<std::string, int64_t>> checks_;  // the last batch's check figures
  std::unique_ptr<DeviceBuffer> act_a_, act_b_;
  std::vector<float> host_in_, host_out_;
};

class MlpHandler final : public ModelHandler {
 public:
  MlpHandler(ModelHandlerOptions options, ModelFiles files, MlpConfig config, MlpPrecisionSettings precision)
      : ModelHandler(std::move(options)),
        files_(std::move(files)),
        config_(std::move(config)),
        dtype_(precision.dtype),
        check_every_(precision.check_every),
        tolerance_(precision.tolerance) {}

  std::string_view type() const override { return kMlpHandlerType; }

  // What MlpModel::EnsureCapacity allocates for the largest batch: two ping-pong activation
  // buffers of rows x the widest layer (the input counts as a layer), F32.
  std::optional<WorkspaceEstimate> EstimateWorkspace() const override {
    int64_t widest = config_.input_dim;
    for (const auto& l : config_.layers) widest = std::max<int64_t>(widest, l.out_features);
    const int64_t rows = options().batching.max_batch_size.value_or(BatchElementsOptions{}.max_batch_size);
    WorkspaceEstimate e;
    e.bytes = 2ull * static_cast<uint64_t>(rows) * static_cast<uint64_t>(widest) * sizeof(float);
    e.how = "2 activation buffers x max_batch_size " + std::to_string(rows) + " rows x widest layer " +
            std::to_string(widest) + " x 4 B";
    return e;
  }

  // One GEMM per layer: 2 x in x out FLOPs per row; the two activation buffers are written and read
  // once per layer. Small GEMMs reach a small share of peak, hence the low default efficiency.
  std::optional<WorkEstimate> EstimateWork() const override {
    WorkEstimate w;
    w.batch_size = options().batching.max_batch_size.value_or(BatchElementsOptions{}.max_batch_size);
    w.default_efficiency = 0.2;
    int64_t in = config_.input_dim;
    std::string terms;
    double activations = static_cast<double>(in);
    for (const auto& l : config_.layers) {
      w.flops_per_record += 2.0 * static_cast<double>(in) * static_cast<double>(l.out_features);
      activations += static_cast<double>(l.out_features);
      terms += (terms.empty() ? "" : " + ") + std::to_string(in) + "x" + std::to_string(l.out_features);
      in = l.out_features;
    }
    w.activation_bytes_per_record = 2.0 * activations * sizeof(float);
    w.how = std::to_string(config_.layers.size()) + " layers: 2 x (" + terms + ") FLOPs per record; activations " +
            "written and read once per layer, 4 B each";
    return w;
  }

  Result<std::unique_ptr<Model>> LoadModel(const ModelProcessContext& context) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<DeviceMemoryCharge> charge, DeviceMemoryCharge::Open(context));
    std::unique_ptr<SafetensorsFile> file;
    std::optional<SharedSource> shared;
    if (ShareModelAcrossProcesses() && !context.models_dir.empty()) {
      SharedSource source{context.models_dir, files_.weights_path,
                          static_cast<int>(std::min<int64_t>(ModelCopies(), 1 << 20)), context.sdk_index, 0, {}};
      ASSIGN_OR_RETURN(AttachedCopy copy, AttachSharedCopy(source.models_dir, source.weights_path, source.copies,
                                                           source.sdk_index));
      spdlog::info("model '{}': shared copy {} of {} (model host '{}', pid {}; round robin by SDK index {}{})",
                   files_.weights_path, copy.copy, source.copies, copy.host.name, copy.host.pid, source.sdk_index,
                   copy.first_choice ? "" : ", first choice's host not running");
      source.copy = copy.copy;
      source.host = copy.host;
      file = std::move(copy.file);
      shared = std::move(source);
    } else {
      ASSIGN_OR_RETURN(file, SafetensorsFile::Open(files_.weights_path));
    }
    RETURN_IF_ERROR(CheckMlpWeights(config_, file->header()).WithContext("model '" + file->path() + "'"));
    RETURN_IF_ERROR(file->CheckFiniteTensors());
    std::unique_ptr<InferenceBackend> backend = MakeBackendForDevice();
    auto model = std::make_unique<MlpModel>(config_, std::move(file), std::move(backend), std::move(charge),
                                            std::move(shared));
    RETURN_IF_ERROR(model->Load());
    if (dtype_.has_value()) {
      RETURN_IF_ERROR(model->SetLinearDType(*dtype_).WithContext("model_handler config 'dtype'"));
    } else {
      RETURN_IF_ERROR(ChooseDType(*model));
    }
    if (check_every_ > 0) model->Monitor(PlanState(model->backend()), tolerance_, check_every_, ModelId());
    model->ChargeWeights(ModelId());
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  // `dtype: auto`: the fastest precision that leaves every row's argmax and every output within 1e-3
  // of float32 on a fixed batch of standard-normal inputs (the features' scale is unknown; a
  // standardised input is the usual one), once per handler.
  Status ChooseDType(MlpModel& model) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (choice_.has_value()) return model.SetLinearDType(choice_->dtype);
    constexpr int kRows = 64;
    std::vector<float> inputs(static_cast<std::size_t>(kRows) * config_.input_dim);
    std::mt19937 rng(20240601);
    std::normal_distribution<float> normal(0.f, 1.f);
    for (float& v : inputs) v = normal(rng);
    PrecisionProbe probe;
    probe.width = static_cast<int>(config_.output_dim());
    probe.check = [&model](LinearDType d) { return model.backend().CheckLinearDType(d); };
    probe.use = [&model](LinearDType d) { return model.SetLinearDType(d); };
    probe.run = [&]() { return model.Run(inputs, kRows); };
    PrecisionChoiceOptions o;
    o.tolerance = tolerance_;
    ASSIGN_OR_RETURN(PrecisionChoice choice, ChoosePrecision(probe, o));
    spdlog::info("model '{}' on {}: Linear layers in {}", ModelId(), model.backend().name(), choice.Describe());
    choice_ = std::move(choice);
    return Status::OK();
  }

  // The plan the lanes of this process share (a run-time check may move it to safer dtypes): made
  // by the first lane from the choice or the explicit dtype.
  std::shared_ptr<PrecisionPlanState> PlanState(const InferenceBackend& backend) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == nullptr) state_ = MakePrecisionPlanState(choice_, dtype_, tolerance_, backend.name());
    return state_;
  }

  ModelFiles files_;
  MlpConfig config_;
  std::optional<LinearDType> dtype_;  // nullopt: auto
  int check_every_;                   // `precision_check_every`; 0: no run-time check
  PrecisionTolerance tolerance_;      // kClassifier; `max_prob_diff`
  mutable std::mutex mu_;
  mutable std::optional<PrecisionChoice> choice_;
  mutable std::shared_ptr<PrecisionPlanState> state_;
};

}  // namespace

Result<ModelFiles> ResolveModelFiles(const std::string& model_path) {
  ModelFiles f;
  if (IsDir(model_path)) {
    f.config_path = model_path + "/config.json";
    f.weights_path = model_path + "/model.safetensors";
  } else if (model_path.size() > 12 && model_path.ends_with(".safetensors")) {
    const auto slash = model_path.find_last_of('/');
    f.config_path = (slash == std::string::npos ? std::string(".") : model_path.substr(0, slash)) + "/config.json";
    f.weights_path = model_path;
  } else {
    return InvalidArgument("model_path '" + model_path +
                           "' is neither a directory (config.json + model.safetensors) nor a .safetensors file");
  }
  return f;
}

Status CheckMlpWeights(const MlpConfig& config, const SafetensorsHeader& header) {
  for (const MlpLayerConfig& l : config.layers) {
    RETURN_IF_ERROR(CheckTensor(header, l.name + ".weight", {l.out_features, l.in_features}));
    if (l.bias) RETURN_IF_ERROR(CheckTensor(header, l.name + ".bias", {l.out_features}));
  }
  return Status::OK();
}

Result<std::unique_ptr<ModelHandler>> MakeMlpModelHandler(ModelHandlerOptions options) {
  ASSIGN_OR_RETURN(ModelFiles files, ResolveModelFiles(options.model_path));
  ASSIGN_OR_RETURN(MlpConfig config, LoadMlpConfig(files.config_path));
  // The header only (no weights read): a disagreeing model fails before any record is read.
  ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(files.weights_path));
  RETURN_IF_ERROR(CheckMlpWeights(config, file->header()).WithContext("model '" + files.weights_path + "'"));
  MlpPrecisionSettings precision;
  precision.tolerance.kind = PrecisionTolerance::Kind::kClassifier;
  for (const Field& f : options.extra.fields()) {
    const std::string bad = "model_handler " + std::string(kMlpHandlerType) + " config '" + f.name + "': " + f.value.ToJson();
    if (f.name == "precision_check_every") {
      if (!f.value.is_int() || f.value.as_int() < 0 || f.value.as_int() > 1000000) {
        return InvalidArgument(bad + " is not allowed; allowed: an integer in [0, 1000000] (one batch in N recomputed in "
                               "float32; 0: none)");
      }
      precision.check_every = static_cast<int>(f.value.as_int());
      continue;
    }
    if (f.name == "max_prob_diff") {
      const double x = f.value.is_int() ? static_cast<double>(f.value.as_int()) : f.value.is_float() ? f.value.as_float() : -1;
      if (!(x > 0 && x <= 1)) {
        return InvalidArgument(bad + " is not allowed; allowed: a number in (0, 1], the largest difference from float32 "
                               "any output may have");
      }
      precision.tolerance.max_prob_diff = x;
      continue;
    }
    if (f.name != "dtype") continue;
    if (!f.value.is_string()) return InvalidArgument(bad + " is not allowed; allowed: auto, float32, bfloat16, int8");
    if (f.value.as_string() == "auto") continue;
    auto d = ParseLinearDType(f.value.as_string());
    if (!d.ok()) return InvalidArgument(bad + " is not allowed; allowed: auto, float32, bfloat16, int8");
    // A dtype this CPU cannot run is an invalid configuration, found before any record is read.
    if (Status ok = options.device == "CPU" ? CheckLinearDTypeOn(DetectCpuIsa(), *d) : Status::OK(); !ok.ok()) {
      return InvalidArgument(bad + " cannot run here: " + ok.message());
    }
    precision.dtype = *d;
  }
  auto handler = std::make_unique<MlpHandler>(std::move(options), std::move(files), std::move(config), precision);
  handler->set_header_loaded_bytes(file->header().loaded_bytes());
  return std::unique_ptr<ModelHandler>(std::move(handler));
}

}  // namespace dfw
