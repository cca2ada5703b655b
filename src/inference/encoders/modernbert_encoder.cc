// ModernBertEncoder (dfw/inference/modernbert_encoder.h): weights, RoPE tables, the forward pass
// (GEMMs on the backend's Linear; LayerNorm, RoPE and attention on its encoder kernels).
#include "dfw/inference/modernbert_encoder.h"

#include <algorithm>
#include <cstring>

#include "dfw/backend/encoder_kernels.h"
#include "dfw/inference/safetensors.h"

namespace dfw {

ModernBertEncoder::ModernBertEncoder(BertConfig config, InferenceBackend* backend, int max_seq_length)
    : config_(std::move(config)), backend_(backend), max_seq_length_(max_seq_length) {}

ModernBertEncoder::~ModernBertEncoder() = default;

Status ModernBertEncoder::CheckWeights(const BertConfig& config, const SafetensorsFile& weights) {
  ModernBertEncoder e(config, nullptr, 2);
  return e.LoadWeights(weights, /*shapes_only=*/true).WithContext("'" + weights.path() + "'");
}

Result<std::unique_ptr<ModernBertEncoder>> ModernBertEncoder::Make(const BertConfig& config, const SafetensorsFile& weights,
                                                                   InferenceBackend* backend, int max_seq_length,
                                                                   LinearDType dtype) {
  if (config.family != EncoderFamily::kModernBert) return InvalidArgument("ModernBertEncoder runs model_type modernbert only");
  if (backend == nullptr) return InvalidArgument("ModernBertEncoder needs a backend");
  if (max_seq_length < 2 || max_seq_length > config.max_position_embeddings) {
    return InvalidArgument("max_seq_length must be in [2, " + std::to_string(config.max_position_embeddings) +
                           "] (the model's max_position_embeddings), got " + std::to_string(max_seq_length));
  }
  std::unique_ptr<ModernBertEncoder> e(new ModernBertEncoder(config, backend, max_seq_length));
  RETURN_IF_ERROR(e->LoadWeights(weights, /*shapes_only=*/false).WithContext("'" + weights.path() + "'"));
  const int dh = config.hidden_size / config.num_attention_heads;
  encoder_kernels::RopeTable(config.modern.global_rope_theta, dh, max_seq_length, e->cos_full_, e->sin_full_);
  encoder_kernels::RopeTable(config.modern.local_rope_theta, dh, max_seq_length, e->cos_local_, e->sin_local_);
  RETURN_IF_ERROR(e->SetLinearDType(dtype));
  return e;
}

Status ModernBertEncoder::LoadWeights(const SafetensorsFile& f, bool shapes_only) {
  const BertConfig& c = config_;
  const ModernBertFields& m = c.modern;
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const std::string prefix = f.header().Find("model.embeddings.tok_embeddings.weight") != nullptr ? "model." : "";
  auto read = [&](const std::string& name, std::vector<int64_t> shape, const float*& out) -> Status {
    const TensorInfo* t = f.header().Find(prefix + name);
    if (t == nullptr) return InvalidArgument("no tensor '" + prefix + name + "' (a ModernBERT checkpoint has it)");
    if (t->dtype != TensorDType::kF32) {
      return InvalidArgument("tensor '" + prefix + name + "' is " + std::string(TensorDTypeName(t->dtype)) +
                             "; the ModernBERT encoder loads F32 weights");
    }
    if (t->shape != shape) {
      std::string want;
      for (int64_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      return InvalidArgument("tensor '" + prefix + name + "' has shape " + t->ShapeString() + ", expected [" + want + "]");
    }
    if (shapes_only) return Status::OK();
    std::vector<float>& v = owned_.emplace_back(t->num_elements());
    std::memcpy(v.data(), f.Data(*t), t->num_bytes());
    weight_bytes_ += static_cast<int64_t>(t->num_bytes());
    out = v.data();
    return Status::OK();
  };
  auto norm = [&](const std::string& name, const float*& g, const float*& b) -> Status {
    RETURN_IF_ERROR(read(name + ".weight", {H}, g));
    if (m.norm_bias) RETURN_IF_ERROR(read(name + ".bias", {H}, b));
    return Status::OK();
  };
  owned_.reserve(static_cast<std::size_t>(4 + 12 * c.num_hidden_layers));  // stable addresses
  RETURN_IF_ERROR(read("embeddings.tok_embeddings.weight", {V, H}, tok_emb_));
  RETURN_IF_ERROR(norm("embeddings.norm", emb_norm_g_, emb_norm_b_));
  layers_.clear();
  layers_.resize(static_cast<std::size_t>(c.num_hidden_layers));
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    Layer& l = layers_[static_cast<std::size_t>(i)];
    const std::string p = "layers." + std::to_string(i) + ".";
    if (i > 0) RETURN_IF_ERROR(norm(p + "attn_norm", l.attn_norm_g, l.attn_norm_b));
    RETURN_IF_ERROR(read(p + "attn.Wqkv.weight", {3 * H, H}, l.wqkv));
    if (m.attention_bias) RETURN_IF_ERROR(read(p + "attn.Wqkv.bias", {3 * H}, l.bqkv));
    RETURN_IF_ERROR(read(p + "attn.Wo.weight", {H, H}, l.wo));
    if (m.attention_bias) RETURN_IF_ERROR(read(p + "attn.Wo.bias", {H}, l.bo));
    RETURN_IF_ERROR(norm(p + "mlp_norm", l.mlp_norm_g, l.mlp_norm_b));
    RETURN_IF_ERROR(read(p + "mlp.Wi.weight", {2 * I, H}, l.wi));
    if (m.mlp_bias) RETURN_IF_ERROR(read(p + "mlp.Wi.bias", {2 * I}, l.bi));
    RETURN_IF_ERROR(read(p + "mlp.Wo.weight", {H, I}, l.wo2));
    if (m.mlp_bias) RETURN_IF_ERROR(read(p + "mlp.Wo.bias", {H}, l.bo2));
  }
  RETURN_IF_ERROR(norm("final_norm", final_norm_g_, final_norm_b_));
  return Status::OK();
}

Status ModernBertEncoder::SetLinearDType(LinearDType dtype) {
  RETURN_IF_ERROR(backend_->CheckLinearDType(dtype));
  const int H = config_.hidden_size, I = config_.intermediate_size;
  std::vector<Layer> prepared(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    ASSIGN_OR_RETURN(prepared[i].qkv, backend_->PrepareLinear(l.wqkv, 3 * H, H, dtype));
    ASSIGN_OR_RETURN(prepared[i].out, backend_->PrepareLinear(l.wo, H, H, dtype));
    ASSIGN_OR_RETURN(prepared[i].in, backend_->PrepareLinear(l.wi, 2 * I, H, dtype));
    ASSIGN_OR_RETURN(prepared[i].mlp_out, backend_->PrepareLinear(l.wo2, H, I, dtype));
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {  // all prepared: swap in, none half-done
    layers_[i].qkv = std::move(prepared[i].qkv);
    layers_[i].out = std::move(prepared[i].out);
    layers_[i].in = std::move(prepared[i].in);
    layers_[i].mlp_out = std::move(prepared[i].mlp_out);
  }
  dtype_ = dtype;
  return Status::OK();
}

uint64_t ModernBertEncoder::workspace_bytes() const {
  return (x_.capacity() + a_.capacity() + qkv_.capacity() + ctx_.capacity() + o_.capacity() + wi_.capacity() +
          g_.capacity() + scores_.capacity()) * sizeof(float);
}

double ModernBertEncoder::Flops(const BertConfig& c, int batch, int seq) {
  const double h = c.hidden_size, i = c.intermediate_size, s = seq;
  // Per token and layer: QKV 6H², attention output 2H², GeGLU in 4HI, out 2HI, scores + context 4SH.
  return static_cast<double>(batch) * s * c.num_hidden_layers * (8 * h * h + 6 * h * i + 4 * s * h);
}

Status ModernBertEncoder::EncodeTokens(std::span<const std::span<const int32_t>> sequences,
                                       std::span<const std::span<const int32_t>>, std::vector<float>& out, int& seq) {
  const BertConfig& c = config_;
  const int h = c.hidden_size, I = c.intermediate_size, heads = c.num_attention_heads;
  const int batch = static_cast<int>(sequences.size());
  seq = 0;
  std::vector<int> lengths;
  for (std::size_t b = 0; b < sequences.size(); ++b) {
    const auto& s = sequences[b];
    if (s.empty() || static_cast<int>(s.size()) > max_seq_length_) {
      return InvalidArgument("sequence " + std::to_string(b) + " has " + std::to_string(s.size()) + " tokens; the encoder takes 1 to " +
                             std::to_string(max_seq_length_));
    }
    for (int32_t id : s) {
      if (id < 0 || id >= c.vocab_size) {
        return InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(c.vocab_size) + ")");
      }
    }
    lengths.push_back(static_cast<int>(s.size()));
    seq = std::max(seq, static_cast<int>(s.size()));
  }
  if (batch == 0) {
    out.clear();
    return Status::OK();
  }
  const std::size_t tokens = static_cast<std::size_t>(batch) * seq;
  x_.assign(tokens * h, 0.f);
  a_.resize(tokens * h);
  qkv_.resize(tokens * 3 * h);
  ctx_.resize(tokens * h);
  o_.resize(tokens * h);
  wi_.resize(tokens * 2 * I);
  g_.resize(tokens * I);
  for (int b = 0; b < batch; ++b) {  // padding rows embed token 0; their outputs are never read
    for (int t = 0; t < seq; ++t) {
      const int32_t id = t < lengths[static_cast<std::size_t>(b)] ? sequences[static_cast<std::size_t>(b)][static_cast<std::size_t>(t)] : 0;
      std::memcpy(a_.data() + (static_cast<std::size_t>(b) * seq + t) * h, tok_emb_ + static_cast<std::size_t>(id) * h, h * sizeof(float));
    }
  }
  const int rows = static_cast<int>(tokens);
  encoder_kernels::LayerNormRows(a_.data(), emb_norm_g_, emb_norm_b_, x_.data(), rows, h, c.layer_norm_eps);
  InferenceBackend& be = *backend_;
  for (std::size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    const bool sliding = c.modern.sliding[li] != 0;
    const float* in = x_.data();
    if (li > 0) {
      encoder_kernels::LayerNormRows(x_.data(), l.attn_norm_g, l.attn_norm_b, a_.data(), rows, h, c.layer_norm_eps);
      in = a_.data();
    }
    RETURN_IF_ERROR(be.Linear(in, *l.qkv, l.bqkv, qkv_.data(), rows, Activation::kNone));
    // RoPE on q and k, then attention over the keys each query may see (a local layer: those
    // within half its window).
    const std::vector<float>& cs = sliding ? cos_local_ : cos_full_;
    const std::vector<float>& sn = sliding ? sin_local_ : sin_full_;
    encoder_kernels::RopeRotateHalfQk(qkv_.data(), batch, seq, h, heads, cs.data(), sn.data());
    encoder_kernels::BidirectionalAttention(qkv_.data(), lengths, seq, h, heads, sliding ? c.modern.local_attention / 2 : -1,
                                            ctx_.data(), scores_);
    RETURN_IF_ERROR(be.Linear(ctx_.data(), *l.out, l.bo, o_.data(), rows, Activation::kNone));
    encoder_kernels::AddInPlace(x_.data(), o_.data(), tokens * h);
    encoder_kernels::LayerNormRows(x_.data(), l.mlp_norm_g, l.mlp_norm_b, a_.data(), rows, h, c.layer_norm_eps);
    RETURN_IF_ERROR(be.Linear(a_.data(), *l.in, l.bi, wi_.data(), rows, Activation::kNone));
    encoder_kernels::GatedActivationRows(c.hidden_act, wi_.data(), g_.data(), rows, I);
    RETURN_IF_ERROR(be.Linear(g_.data(), *l.mlp_out, l.bo2, o_.data(), rows, Activation::kNone));
    encoder_kernels::AddInPlace(x_.data(), o_.data(), tokens * h);
  }
  out.resize(tokens * h);
  encoder_kernels::LayerNormRows(x_.data(), final_norm_g_, final_norm_b_, out.data(), rows, h, c.layer_norm_eps);
  for (int len : lengths) tokens_.real += len;
  tokens_.computed += static_cast<int64_t>(tokens);
  tokens_.flops += Flops(c, batch, seq);
  return Status::OK();
}

}  // namespace dfw
