// HuggingFacePipelineModelHandler: text → tokenizer.json pipeline → encoder → head → the task's
// result, one transformers-shaped value per example.
#include "dfw/inference/hf_pipeline_handler.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "dfw/backend/cpu_isa.h"
#include "dfw/backend/registry.h"
#include "dfw/common/file.h"
#include "dfw/inference/device_memory.h"
#include "dfw/inference/safetensors.h"
#include "dfw/inference/decoder_config.h"
#include "dfw/inference/hf_model_dir.h"
#include "dfw/inference/modernbert_encoder.h"
#include "dfw/tokenizers/utf8.h"
#include "inference/handlers/hf_pipeline_settings.h"
#include "inference/handlers/hf_text_generation.h"

namespace dfw {
namespace {

constexpr int kHfEncodeBatch = 32;  // sequences per encoder call (the workspace is sized for it)

class HfPipelineModel final : public Model {
 public:
  HfPipelineModel(const HfPipelineSettings& s, std::unique_ptr<SafetensorsFile> file, std::unique_ptr<InferenceBackend> backend,
                  std::unique_ptr<TokenEncoder> encoder, std::unique_ptr<EncoderHead> head)
      : s_(s), file_(std::move(file)), backend_(std::move(backend)), encoder_(std::move(encoder)), head_(std::move(head)) {}

  Status CheckExample(const Value& example) const override {
    if (!example.is_string()) {
      return InvalidArgument("task '" + s_.task + "' takes a string (the preprocess result), got " +
                             std::string(example.TypeName()) + " " + example.ToJson());
    }
    // What the tokenizer accepts, checked before batching so a bad text is one error row rather
    // than a failed batch.
    if (utf8::FirstInvalid(example.as_string())) return InvalidArgument("text is not valid UTF-8");
    if (s_.task == "fill-mask" && s_.tokenizer->IdToToken(s_.mask_id).size() > 0 &&
        example.as_string().find(s_.tokenizer->IdToToken(s_.mask_id)) == std::string::npos) {
      return InvalidArgument("fill-mask: no mask token (" + s_.tokenizer->IdToToken(s_.mask_id) + ") in the text");
    }
    return Status::OK();
  }

  void ChargeWeights(std::unique_ptr<DeviceMemoryCharge> charge, const std::string& name) {
    charge_ = std::move(charge);
    if (charge_ != nullptr) charge_->ChargeOrDefer(static_cast<uint64_t>(byte_size()), "model weights of '" + name + "'");
  }

  Status RunInference(std::span<const Value* const> batch, std::vector<Value>& predictions) override {
    if (charge_ != nullptr) RETURN_IF_ERROR(charge_->Settle());
    encodings_.clear();
    first_.clear();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      RETURN_IF_ERROR(CheckExample(*batch[i]).WithContext("example " + std::to_string(i)));
      first_.push_back(encodings_.size());
      const std::string& text = batch[i]->as_string();
      if (s_.task == "zero-shot-classification") {
        for (const std::string& label : s_.args.candidate_labels) {
          std::string hypothesis = s_.args.hypothesis_template;
          hypothesis.replace(hypothesis.find("{}"), 2, label);
          RETURN_IF_ERROR(s_.tokenizer->Encode(text, hypothesis, s_.max_tokens, encodings_.emplace_back()));
        }
      } else {
        RETURN_IF_ERROR(s_.tokenizer->Encode(text, std::nullopt, s_.max_tokens, encodings_.emplace_back()));
      }
    }
    first_.push_back(encodings_.size());
    last_tokens_ = encoder_->token_counts();
    RETURN_IF_ERROR(EncodeAll());
    predictions.reserve(predictions.size() + batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) predictions.push_back(Result(batch[i]->as_string(), first_[i], first_[i + 1]));
    return Status::OK();
  }

  int64_t GetNumBytes(std::span<const Value* const> batch) const override {
    int64_t n = 0;
    for (const Value* v : batch) n += v->is_string() ? static_cast<int64_t>(v->as_string().size()) : 0;
    return n;
  }
  // Its tokens after truncation (special tokens included), times the candidate labels for
  // zero-shot (one premise-hypothesis pair each): what it costs the encoder.
  int64_t ElementWeight(const Value& example) const override {
    if (!example.is_string()) return 1;
    thread_local TokenEncoding enc;
    if (!s_.tokenizer->Encode(example.as_string(), std::nullopt, s_.max_tokens, enc).ok()) return 1;
    const int64_t labels = static_cast<int64_t>(s_.args.candidate_labels.size());
    const int64_t pairs = s_.task == "zero-shot-classification" ? std::max<int64_t>(1, labels) : 1;
    return static_cast<int64_t>(enc.size()) * pairs;
  }
  std::vector<std::pair<std::string, int64_t>> BatchFigures() const override { return TokenFigures(*encoder_, last_tokens_); }
  std::vector<std::pair<std::string, int64_t>> LoadFigures() const override {
    const LinearDType d = encoder_->linear_dtype();
    return {{"linear_dtype_bits", LinearDTypeBits(d)}};
  }
  int64_t byte_size() const override { return encoder_->weight_bytes(); }
  std::optional<uint64_t> workspace_bytes() const override { return encoder_->workspace_bytes(); }
  std::string_view device() const override { return backend_->name(); }

 private:
  // Every encoding through the encoder in order of length (stable), so a sub-batch pads to similar
  // lengths, at most kHfEncodeBatch at a time and within the backend's tokens per call;
  // hidden_[e] = tokens × hidden, in the encodings' order.
  Status EncodeAll() {
    const std::size_t h = static_cast<std::size_t>(s_.config.hidden_size);
    hidden_.resize(encodings_.size());
    order_.resize(encodings_.size());
    for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::stable_sort(order_.begin(), order_.end(),
                     [&](std::size_t a, std::size_t b) { return encodings_[a].size() < encodings_[b].size(); });
    const std::size_t max_tokens = static_cast<std::size_t>(std::max(encoder_->tokens_per_call(), 1));
    for (std::size_t start = 0, n = 0; start < encodings_.size(); start += n) {
      n = SubBatchSize(start, encodings_.size(), kHfEncodeBatch, max_tokens,
                       [&](std::size_t i) { return encodings_[order_[i]].size(); });
      seqs_.clear();
      types_.clear();
      for (std::size_t k = 0; k < n; ++k) {
        seqs_.emplace_back(encodings_[order_[start + k]].ids);
        types_.emplace_back(encodings_[order_[start + k]].type_ids);
      }
      int seq = 0;
      RETURN_IF_ERROR(encoder_->EncodeTokens(seqs_, types_, out_, seq));
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t e = order_[start + k];
        const std::size_t len = encodings_[e].size();
        const float* base = out_.data() + k * static_cast<std::size_t>(seq) * h;
        hidden_[e].assign(base, base + len * h);
      }
    }
    return Status::OK();
  }

  Value Result(const std::string& text, std::size_t first, std::size_t last) {
    const std::size_t h = static_cast<std::size_t>(s_.config.hidden_size);
    const TokenEncoding& enc = encodings_[first];
    const std::vector<float>& x = hidden_[first];
    if (s_.task == "feature-extraction") {
      List tokens;
      for (std::size_t t = 0; t < enc.size(); ++t) {
        List v;
        v.reserve(h);
        for (std::size_t k = 0; k < h; ++k) v.push_back(Value::Float(x[t * h + k]));
        tokens.push_back(Value::FromList(std::move(v)));
      }
      List one;
      one.push_back(Value::FromList(std::move(tokens)));
      return Value::FromList(std::move(one));
    }
    if (s_.task == "text-classification") {
      head_->Logits(Pooled(first), logits_);
      return TextClassificationResult(logits_, s_.labels, s_.args);
    }
    if (s_.task == "zero-shot-classification") {
      std::vector<float> all;
      for (std::size_t e = first; e < last; ++e) {
        head_->Logits(Pooled(e), logits_);
        all.insert(all.end(), logits_.begin(), logits_.end());
      }
      return ZeroShotResult(text, all, head_->outputs(), s_.labels, s_.args);
    }
    if (s_.task == "token-classification") {
      std::vector<float> all;
      for (std::size_t t = 0; t < enc.size(); ++t) {
        head_->Logits(x.data() + t * h, logits_);
        all.insert(all.end(), logits_.begin(), logits_.end());
      }
      return TokenClassificationResult(text, enc, all, s_.labels, s_.args, *s_.tokenizer);
    }
    std::vector<int> masks;  // fill-mask
    std::vector<float> all;
    for (std::size_t t = 0; t < enc.size(); ++t) {
      if (enc.ids[t] != s_.mask_id) continue;
      masks.push_back(static_cast<int>(t));
      head_->Logits(x.data() + t * h, logits_);
      all.insert(all.end(), logits_.begin(), logits_.end());
    }
    return FillMaskResult(enc, masks, all, head_->outputs(), s_.target_ids, s_.args, *s_.tokenizer, s_.pad_id);
  }

  // What a sequence-classification head reads of encoding e: its first token's hidden state, or
  // the mean over its tokens (ModernBERT's classifier_pooling: mean; every token is unpadded here).
  const float* Pooled(std::size_t e) {
    if (!head_->mean_pooling()) return hidden_[e].data();
    const std::size_t h = static_cast<std::size_t>(s_.config.hidden_size), n = encodings_[e].size();
    pooled_.assign(h, 0.f);
    for (std::size_t t = 0; t < n; ++t) {
      for (std::size_t k = 0; k < h; ++k) pooled_[k] += hidden_[e][t * h + k];
    }
    for (float& v : pooled_) v /= static_cast<float>(n);
    return pooled_.data();
  }

  HfPipelineSettings s_;  // a copy (the tokenizer is shared): a model may outlive its handler
  std::unique_ptr<SafetensorsFile> file_;
  std::unique_ptr<InferenceBackend> backend_;
  std::unique_ptr<TokenEncoder> encoder_;
  std::unique_ptr<EncoderHead> head_;
  std::unique_ptr<DeviceMemoryCharge> charge_;
  // Per-batch scratch, reused.
  std::vector<TokenEncoding> encodings_;
  std::vector<std::size_t> first_;  // encodings of example i: [first_[i], first_[i+1])
  std::vector<std::vector<float>> hidden_;
  std::vector<std::span<const int32_t>> seqs_, types_;
  std::vector<std::size_t> order_;  // encodings by length
  std::vector<float> out_, logits_;
  EncoderTokenCounts last_tokens_;  // the encoder's counts before the last batch
  std::vector<float> pooled_;
};

Result<std::unique_ptr<EncoderHead>> LoadHead(const HfPipelineSettings& s, const SafetensorsFile& f) {
  if (s.task == "feature-extraction") return std::unique_ptr<EncoderHead>();
  return EncoderHead::Load(s.head, s.config, static_cast<int>(s.labels.id2label.size()), f);
}

class HfPipelineHandler final : public ModelHandler {
 public:
  HfPipelineHandler(ModelHandlerOptions options, HfPipelineSettings s) : ModelHandler(std::move(options)), s_(std::move(s)) {}
  std::string_view type() const override { return kHfPipelineHandlerType; }
  int64_t MaxMessageRows() const override { return kHfEncodeBatch; }
  int64_t SortWindow() const override { return kEncoderSortWindow; }

  // BertEncoder's workspace for kHfEncodeBatch sequences of the longest input (as the sentence
  // handler states it).
  std::optional<WorkspaceEstimate> EstimateWorkspace() const override {
    const uint64_t b = kHfEncodeBatch, seq = static_cast<uint64_t>(s_.max_tokens);
    const uint64_t h = static_cast<uint64_t>(s_.config.hidden_size), heads = static_cast<uint64_t>(s_.config.num_attention_heads);
    const uint64_t inter = static_cast<uint64_t>(s_.config.intermediate_size), tokens = b * seq;
    WorkspaceEstimate e;
    if (s_.config.family == EncoderFamily::kModernBert) {  // host attention: one score row at a time
      e.bytes = tokens * (7 * h + 3 * inter) * sizeof(float);
      e.how = "modernbert sub-batch " + std::to_string(b) + " x " + std::to_string(seq) + " tokens: 7 x hidden " +
              std::to_string(h) + " + 3 x intermediate " + std::to_string(inter) + " per token, x 4 B";
      return e;
    }
    e.bytes = (6 * tokens * h + b * heads * seq * seq + tokens * inter + 2 * tokens + b * h) * sizeof(float);
    e.how = s_.config.model_type + " sub-batch " + std::to_string(b) + " x " + std::to_string(seq) +
            " tokens: 6 x hidden " + std::to_string(h) + " + intermediate " + std::to_string(inter) + " per token, " +
            std::to_string(heads) + " heads x " + std::to_string(seq) + "^2 attention scores per sequence, x 4 B";
    return e;
  }

  Result<std::unique_ptr<Model>> LoadModel(const ModelProcessContext& process) const override {
    ASSIGN_OR_RETURN(auto charge, DeviceMemoryCharge::Open(process));
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(s_.dir + "/model.safetensors"));
    RETURN_IF_ERROR(file->CheckFiniteTensors());
    std::unique_ptr<TokenEncoder> encoder;
    std::unique_ptr<InferenceBackend> backend;
    if (s_.config.family == EncoderFamily::kModernBert) {
      // Its RoPE and sliding-window attention run on the host: the CPU backend, whatever the device.
      backend = MakeCpuBackend();
      ASSIGN_OR_RETURN(encoder, ModernBertEncoder::Make(s_.config, *file, backend.get(), s_.max_tokens));
    } else {
      backend = MakeBackendForDevice();
      BertEncoderOptions eo;
      eo.max_batch = kHfEncodeBatch;
      eo.max_seq_length = s_.max_tokens;
      eo.normalize = false;
      ASSIGN_OR_RETURN(encoder, BertEncoder::Make(s_.config, *file, backend.get(), eo));
    }
    if (s_.linear_dtype != LinearDType::kFloat32) {
      RETURN_IF_ERROR(encoder->SetLinearDType(s_.linear_dtype).WithContext("load_pipeline_args " + s_.dtype_how));
    }
    ASSIGN_OR_RETURN(auto head, LoadHead(s_, *file));
    auto model = std::make_unique<HfPipelineModel>(s_, std::move(file), std::move(backend), std::move(encoder), std::move(head));
    model->ChargeWeights(std::move(charge), ModelId());
    return std::unique_ptr<Model>(std::move(model));
  }

 private:
  HfPipelineSettings s_;
};

}  // namespace

const std::vector<std::string>& HfPipelineHandlerKeys() {
  static const std::vector<std::string> keys = {"task", "pipeline_args"};
  return keys;
}

Result<std::unique_ptr<ModelHandler>> MakeHfPipelineHandler(ModelHandlerOptions options) {
  // text-generation (named, or implied by a causal-LM config.json) runs on the decoder engine.
  if (const Value* task = options.extra.Find("task"); task == nullptr || (task->is_string() && task->as_string() == "text-generation")) {
    auto dir = ResolveHfModelDir(options.model_path, HfCacheEnvFromProcess());
    // The plan's config-only handler takes a local directory with config.json and no weights yet
    // (MakeHfTextGenerationHandler decides what it needs).
    if (!dir.ok() && options.config_only && ::access((options.model_path + "/config.json").c_str(), F_OK) == 0) dir = options.model_path;
    if (!dir.ok()) return dir.status().WithContext("model_handler " + std::string(kHfPipelineHandlerType));
    Result<std::string> text = ReadWholeFile(*dir + "/config.json", kModelConfigFile);
    if (!text.ok() && text.status().code() != StatusCode::kNotFound) {  // a missing one is named by the reader below
      return text.status().WithContext("model_handler " + std::string(kHfPipelineHandlerType));
    }
    if (task != nullptr || (text.ok() && LooksLikeDecoderConfig(*text))) {
      auto h = MakeHfTextGenerationHandler(std::move(options), *dir);
      if (!h.ok()) return h.status().WithContext("model_handler " + std::string(kHfPipelineHandlerType));
      return h;
    }
  }
  auto s = ReadHfPipelineSettings(options);
  if (!s.ok()) return s.status().WithContext("model_handler " + std::string(kHfPipelineHandlerType));
  // Shapes checked now, before any record is read: the encoder's from the header alone (no backend
  // is made: the launcher makes this handler to plan), the task head's as it loads.
  ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(s->dir + "/model.safetensors"));
  RETURN_IF_ERROR(s->config.family == EncoderFamily::kModernBert ? ModernBertEncoder::CheckWeights(s->config, *file)
                                                                 : BertEncoder::CheckWeights(s->config, *file));
  ASSIGN_OR_RETURN(auto head, LoadHead(*s, *file));
  // A precision this CPU cannot run is an invalid configuration (exit 2) now, not at the first load.
  if (s->linear_dtype != LinearDType::kFloat32 && options.device == "CPU") {
    if (Status ok = CheckLinearDTypeOn(DetectCpuIsa(), s->linear_dtype); !ok.ok()) {
      return InvalidArgument("model_handler " + std::string(kHfPipelineHandlerType) + " load_pipeline_args " + s->dtype_how +
                             " cannot run here: " + ok.message());
    }
  }
  auto handler = std::make_unique<HfPipelineHandler>(std::move(options), std::move(s).value());
  handler->set_header_loaded_bytes(file->header().loaded_bytes());
  return std::unique_ptr<ModelHandler>(std::move(handler));
}

}  // namespace dfw
