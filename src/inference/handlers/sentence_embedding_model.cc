// The SentenceEmbeddingHandler's model; see sentence_embedding_model.h.
#include "inference/handlers/sentence_embedding_model.h"

#include <algorithm>
#include <map>
#include <span>
#include <vector>

#include "dfw/tokenizers/utf8.h"

namespace dfw::sentence_embedding {
namespace {

void AddTokenCounts(EncoderTokenCounts& a, const EncoderTokenCounts& b) {
  a.real += b.real, a.computed += b.computed, a.flops += b.flops;
}

// The encoders of one lane: the main one (max_seq_length, the plan's dtype), one per other dtype
// the plan's token-count buckets run (as long as the longest such bucket), and a float32 one with
// a small sub-batch for the run-time check when the main one is not float32. On the CPU they all
// read the same mapped float32 weights; each reduced dtype keeps its own converted copy.
class SentenceEmbeddingModel final : public Model {
 public:
  SentenceEmbeddingModel(Settings s, std::unique_ptr<SafetensorsFile> file, std::unique_ptr<InferenceBackend> backend,
                         std::unique_ptr<BertEncoder> encoder, std::shared_ptr<PrecisionPlanState> state, std::string id)
      : s_(std::move(s)), file_(std::move(file)), backend_(std::move(backend)), encoder_(std::move(encoder)),
        monitor_(state, s_.tolerance, s_.check_every, std::move(id)) {}

  // (Re)makes the encoders for the shared plan's current dtypes.
  Status Prepare() {
    plan_ = monitor_.state().plan();
    generation_ = monitor_.state().generation();
    if (encoder_->linear_dtype() != plan_.dtype) RETURN_IF_ERROR(encoder_->SetLinearDType(plan_.dtype));
    std::map<LinearDType, int> want;  // dtype -> tokens of the longest bucket it runs
    for (std::size_t b = 0; b < plan_.bucket_dtypes.size(); ++b) {
      const LinearDType d = plan_.bucket_dtypes[b];
      if (d == plan_.dtype) continue;
      const int limit = b < plan_.bucket_limits.size() ? plan_.bucket_limits[b] : s_.encoder.max_seq_length;
      want[d] = std::max(want[d], std::clamp(limit, 2, s_.encoder.max_seq_length));
    }
    for (auto it = extras_.begin(); it != extras_.end();) {
      auto w = want.find(it->first);
      if (w != want.end() && w->second == it->second->options().max_seq_length) {
        ++it;
        continue;
      }
      AddTokenCounts(retired_, it->second->token_counts());
      it = extras_.erase(it);
    }
    for (const auto& [d, tokens] : want) {
      if (extras_.count(d)) continue;
      BertEncoderOptions o = s_.encoder;
      o.max_seq_length = tokens;
      o.linear_dtype = d;
      ASSIGN_OR_RETURN(extras_[d], BertEncoder::Make(s_.config, *file_, backend_.get(), o));
    }
    const bool reduced = plan_.dtype != LinearDType::kFloat32 || !want.empty();
    if (s_.check_every > 0 && reduced && plan_.dtype != LinearDType::kFloat32 && check_ == nullptr) {
      BertEncoderOptions o = s_.encoder;
      o.max_batch = kCheckBatch;
      o.linear_dtype = LinearDType::kFloat32;
      ASSIGN_OR_RETURN(check_, BertEncoder::Make(s_.config, *file_, backend_.get(), o));
    }
    return Status::OK();
  }

  Status CheckExample(const Value& example) const override {
    if (!example.is_string()) return InvalidArgument("expected a string (the text to embed), got " + std::string(example.TypeName()));
    return utf8::Check(example.as_string());
  }

  // Charges the weights to the job's ledger (emulated device; see device_memory.h). Shared copies
  // are not implemented for this handler: each SDK process loads and charges its own.
  void ChargeWeights(std::unique_ptr<DeviceMemoryCharge> charge, const std::string& model_name) {
    charge_ = std::move(charge);
    if (charge_ != nullptr) charge_->ChargeOrDefer(static_cast<uint64_t>(byte_size()), "model weights of '" + model_name + "'");
  }

  Status RunInference(std::span<const Value* const> batch, std::vector<Value>& predictions) override {
    if (charge_ != nullptr) RETURN_IF_ERROR(charge_->Settle());
    if (monitor_.state().generation() != generation_) RETURN_IF_ERROR(Prepare());  // another lane or batch switched
    const std::size_t n = batch.size(), h = static_cast<std::size_t>(encoder_->hidden_size());
    if (ids_.size() < n) ids_.resize(n);  // inner vectors keep their capacity across batches
    seqs_.clear();
    row_dtypes_.clear();
    bool one_dtype = true;
    for (std::size_t i = 0; i < n; ++i) {
      RETURN_IF_ERROR(CheckExample(*batch[i]).WithContext("example " + std::to_string(i)));
      RETURN_IF_ERROR(s_.tokenizer.Encode(batch[i]->as_string(), s_.encoder.max_seq_length, ids_[i]));
      seqs_.emplace_back(ids_[i]);
      row_dtypes_.push_back(plan_.DTypeFor(static_cast<int>(ids_[i].size())));
      one_dtype = one_dtype && row_dtypes_.back() == plan_.dtype;
    }
    out_.resize(n * h);
    last_tokens_ = Counts();
    checks_.clear();
    if (one_dtype) {
      RETURN_IF_ERROR(encoder_->EncodeMany(seqs_, out_, /*group_by_length=*/true));
    } else {
      RETURN_IF_ERROR(EncodeByDType(h));
    }
    if (monitor_.Due()) RETURN_IF_ERROR(CheckInFloat32(h));
    predictions.reserve(predictions.size() + n);
    for (std::size_t i = 0; i < n; ++i) {
      List v;
      v.reserve(h);
      for (std::size_t k = 0; k < h; ++k) v.push_back(Value::Float(out_[i * h + k]));
      predictions.push_back(Value::FromList(std::move(v)));
    }
    return Status::OK();
  }

  int64_t GetNumBytes(std::span<const Value* const> batch) const override {
    int64_t bytes = 0;
    for (const Value* v : batch) bytes += v->is_string() ? static_cast<int64_t>(v->as_string().size()) : 0;
    return bytes;
  }
  // Its tokens after truncation ([CLS] and [SEP] included): what it costs the encoder.
  int64_t ElementWeight(const Value& example) const override {
    if (!example.is_string()) return 1;
    thread_local std::vector<int32_t> ids;
    if (!s_.tokenizer.Encode(example.as_string(), s_.encoder.max_seq_length, ids).ok()) return 1;
    return static_cast<int64_t>(ids.size());
  }
  std::vector<std::pair<std::string, int64_t>> BatchFigures() const override {
    const EncoderTokenCounts now = Counts();
    std::vector<std::pair<std::string, int64_t>> out = {
        {"batch_tokens", now.real - last_tokens_.real},
        {"batch_computed_tokens", now.computed - last_tokens_.computed},
        {"batch_kflop", std::llround((now.flops - last_tokens_.flops) / 1e3)}};
    out.insert(out.end(), checks_.begin(), checks_.end());
    return out;
  }
  // The main encoder's weights (the mapped float32 tensors on the CPU; what a device upload costs).
  int64_t byte_size() const override { return encoder_->weight_bytes(); }
  std::optional<uint64_t> workspace_bytes() const override {
    uint64_t bytes = encoder_->workspace_bytes() + (check_ != nullptr ? check_->workspace_bytes() : 0);
    for (const auto& [d, e] : extras_) bytes += e->workspace_bytes();
    return bytes;
  }
  std::string_view device() const override { return backend_->name(); }

  std::vector<std::pair<std::string, int64_t>> LoadFigures() const override {
    if (precision_.has_value()) return precision_->Figures();
    return {{"linear_dtype_bits", LinearDTypeBits(encoder_->linear_dtype())}};
  }
  void SetPrecision(std::optional<PrecisionChoice> p) { precision_ = std::move(p); }

 private:
  EncoderTokenCounts Counts() const {
    EncoderTokenCounts c = retired_;
    AddTokenCounts(c, encoder_->token_counts());
    for (const auto& [d, e] : extras_) AddTokenCounts(c, e->token_counts());
    return c;
  }

  // Rows whose bucket runs another dtype than the main encoder's go through that dtype's encoder.
  Status EncodeByDType(std::size_t h) {
    for (LinearDType d : {LinearDType::kFloat32, LinearDType::kBFloat16, LinearDType::kInt8}) {
      BertEncoder* enc = d == plan_.dtype ? encoder_.get() : nullptr;
      if (enc == nullptr) {
        auto it = extras_.find(d);
        if (it != extras_.end()) enc = it->second.get();
      }
      part_rows_.clear();
      part_seqs_.clear();
      for (std::size_t i = 0; i < seqs_.size(); ++i) {
        if (row_dtypes_[i] == d) part_rows_.push_back(i), part_seqs_.push_back(seqs_[i]);
      }
      if (part_rows_.empty()) continue;
      if (enc == nullptr) return Internal(std::string("no encoder prepared for ") + std::string(LinearDTypeName(d)));
      part_out_.resize(part_rows_.size() * h);
      RETURN_IF_ERROR(enc->EncodeMany(part_seqs_, part_out_, /*group_by_length=*/true));
      for (std::size_t k = 0; k < part_rows_.size(); ++k) {
        std::copy_n(part_out_.data() + k * h, h, out_.data() + part_rows_[k] * h);
      }
    }
    return Status::OK();
  }

  // The sampled batch's rows that ran in a reduced dtype, again in float32, against what they got.
  Status CheckInFloat32(std::size_t h) {
    BertEncoder* f32 = plan_.dtype == LinearDType::kFloat32 ? encoder_.get() : check_.get();
    part_rows_.clear();
    part_seqs_.clear();
    part_dtypes_.clear();
    for (std::size_t i = 0; i < seqs_.size(); ++i) {
      if (row_dtypes_[i] == LinearDType::kFloat32) continue;
      part_rows_.push_back(i), part_seqs_.push_back(seqs_[i]), part_dtypes_.push_back(row_dtypes_[i]);
    }
    if (part_rows_.empty() || f32 == nullptr) return Status::OK();
    part_out_.resize(part_rows_.size() * h);
    RETURN_IF_ERROR(f32->EncodeMany(part_seqs_, part_out_, /*group_by_length=*/true));
    got_.resize(part_rows_.size() * h);
    for (std::size_t k = 0; k < part_rows_.size(); ++k) std::copy_n(out_.data() + part_rows_[k] * h, h, got_.data() + k * h);
    monitor_.Check(part_out_, got_, static_cast<int>(h), part_dtypes_);
    checks_ = monitor_.TakeFigures();
    return Status::OK();
  }

  std::optional<PrecisionChoice> precision_;  // what `dtype: auto` measured; unset for an explicit dtype
  Settings s_;
  std::unique_ptr<SafetensorsFile> file_;  // the CPU backend reads the weights in place
  std::unique_ptr<InferenceBackend> backend_;
  std::unique_ptr<BertEncoder> encoder_;  // destroyed before what it points into (declared after)
  std::map<LinearDType, std::unique_ptr<BertEncoder>> extras_;
  std::unique_ptr<BertEncoder> check_;  // float32, kCheckBatch sequences a call
  PrecisionMonitor monitor_;
  PrecisionChoice plan_;  // the shared plan as of generation_
  int generation_ = -1;
  EncoderTokenCounts retired_;  // counts of encoders dropped by a switch
  std::vector<std::vector<int32_t>> ids_;
  std::vector<std::span<const int32_t>> seqs_, part_seqs_;
  std::vector<LinearDType> row_dtypes_, part_dtypes_;
  std::vector<std::size_t> part_rows_;
  std::vector<float> out_, part_out_, got_;
  std::vector<std::pair<std::string, int64_t>> checks_;  // the last batch's check figures
  std::unique_ptr<DeviceMemoryCharge> charge_;  // null: no ledger
  EncoderTokenCounts last_tokens_;  // the encoders' counts before the last batch
};

}  // namespace

Result<std::unique_ptr<Model>> MakeModel(Settings s, std::unique_ptr<SafetensorsFile> file,
                                         std::unique_ptr<InferenceBackend> backend, std::unique_ptr<BertEncoder> encoder,
                                         std::shared_ptr<PrecisionPlanState> state, std::string id,
                                         std::optional<PrecisionChoice> precision,
                                         std::unique_ptr<DeviceMemoryCharge> charge) {
  auto model = std::make_unique<SentenceEmbeddingModel>(std::move(s), std::move(file), std::move(backend), std::move(encoder),
                                                        std::move(state), id);
  RETURN_IF_ERROR(model->Prepare());
  model->SetPrecision(std::move(precision));
  model->ChargeWeights(std::move(charge), id);
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace dfw::sentence_embedding
