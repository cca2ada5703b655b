// ModernBertEncoder (dfw/inference/modernbert_encoder.h): weights, RoPE tables, the forward pass.
#include "dfw/inference/modernbert_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "dfw/inference/safetensors.h"
#include "inference/encoders/host_ops.h"

namespace dfw {
namespace {

void EncoderLayerNormRows(const float* x, const float* g, const float* b, float* y, int rows, int h, float eps) {
  for (int r = 0; r < rows; ++r) {
    const std::size_t at = static_cast<std::size_t>(r) * h;
    host_ops::LayerNormRow(x + at, g, b, y + at, static_cast<std::size_t>(h), eps);
  }
}

// cos/sin of position p × inv_freq[i] for p < positions, i < half (inv_freq as torch computes it:
// 1 / theta^(2i / d) in float32).
void RopeTable(float theta, int head_dim, int positions, std::vector<float>& cos_t, std::vector<float>& sin_t) {
  const int half = head_dim / 2;
  cos_t.resize(static_cast<std::size_t>(positions) * half);
  sin_t.resize(cos_t.size());
  for (int i = 0; i < half; ++i) {
    const float inv = 1.f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
    for (int p = 0; p < positions; ++p) {
      const float angle = static_cast<float>(p) * inv;
      cos_t[static_cast<std::size_t>(p) * half + i] = std::cos(angle);
      sin_t[static_cast<std::size_t>(p) * half + i] = std::sin(angle);
    }
  }
}

}  // namespace

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
  RopeTable(config.modern.global_rope_theta, dh, max_seq_length, e->cos_full_, e->sin_full_);
  RopeTable(config.modern.local_rope_theta, dh, max_seq_length, e->cos_local_, e->sin_local_);
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

// ctx[b][t] = softmax over the keys a query may see of (q·k / √d) · v, per head; the query and key
// halves of each head already rotated.
void ModernBertEncoder::Attention(const float* qkv, const std::vector<int>& lengths, int seq, bool sliding, float* ctx) {
  const int h = config_.hidden_size, heads = config_.num_attention_heads, dh = h / heads, h3 = 3 * h;
  const int window = config_.modern.local_attention / 2;
  const float scale = 1.f / std::sqrt(static_cast<float>(dh));
  scores_.resize(static_cast<std::size_t>(seq));
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const int len = lengths[b];
    const float* base = qkv + b * static_cast<std::size_t>(seq) * h3;
    for (int head = 0; head < heads; ++head) {
      for (int i = 0; i < seq; ++i) {
        const float* q = base + static_cast<std::size_t>(i) * h3 + head * dh;
        const int lo = sliding ? std::max(0, i - window) : 0;
        const int hi = sliding ? std::min(len, i + window + 1) : len;
        float* out = ctx + (b * static_cast<std::size_t>(seq) + i) * h + head * dh;
        std::fill(out, out + dh, 0.f);
        if (lo >= hi) continue;  // a padding query past every key it may see (its row is unused)
        float top = -std::numeric_limits<float>::infinity();
        for (int j = lo; j < hi; ++j) {
          const float* k = base + static_cast<std::size_t>(j) * h3 + h + head * dh;
          float dot = 0.f;
          for (int d = 0; d < dh; ++d) dot += q[d] * k[d];
          scores_[static_cast<std::size_t>(j)] = dot * scale;
          top = std::max(top, scores_[static_cast<std::size_t>(j)]);
        }
        double sum = 0;
        for (int j = lo; j < hi; ++j) {
          const float e = std::exp(scores_[static_cast<std::size_t>(j)] - top);
          scores_[static_cast<std::size_t>(j)] = e;
          sum += e;
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int j = lo; j < hi; ++j) {
          const float p = scores_[static_cast<std::size_t>(j)] * inv;
          const float* v = base + static_cast<std::size_t>(j) * h3 + 2 * h + head * dh;
          for (int d = 0; d < dh; ++d) out[d] += p * v[d];
        }
      }
    }
  }
}

Status ModernBertEncoder::EncodeTokens(std::span<const std::span<const int32_t>> sequences,
                                       std::span<const std::span<const int32_t>>, std::vector<float>& out, int& seq) {
  const BertConfig& c = config_;
  const int h = c.hidden_size, I = c.intermediate_size, heads = c.num_attention_heads, dh = h / heads, half = dh / 2;
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
  EncoderLayerNormRows(a_.data(), emb_norm_g_, emb_norm_b_, x_.data(), rows, h, c.layer_norm_eps);
  InferenceBackend& be = *backend_;
  for (std::size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    const bool sliding = c.modern.sliding[li] != 0;
    const float* in = x_.data();
    if (li > 0) {
      EncoderLayerNormRows(x_.data(), l.attn_norm_g, l.attn_norm_b, a_.data(), rows, h, c.layer_norm_eps);
      in = a_.data();
    }
    RETURN_IF_ERROR(be.Linear(in, *l.qkv, l.bqkv, qkv_.data(), rows, Activation::kNone));
    const std::vector<float>& cs = sliding ? cos_local_ : cos_full_;
    const std::vector<float>& sn = sliding ? sin_local_ : sin_full_;
    for (int b = 0; b < batch; ++b) {
      for (int t = 0; t < seq; ++t) {
        float* row = qkv_.data() + (static_cast<std::size_t>(b) * seq + t) * 3 * h;
        const float* cp = cs.data() + static_cast<std::size_t>(t) * half;
        const float* sp = sn.data() + static_cast<std::size_t>(t) * half;
        for (int part = 0; part < 2; ++part) {  // q, then k
          for (int head = 0; head < heads; ++head) {
            float* v = row + part * h + head * dh;
            for (int i = 0; i < half; ++i) {
              const float x1 = v[i], x2 = v[i + half];
              v[i] = x1 * cp[i] - x2 * sp[i];
              v[i + half] = x2 * cp[i] + x1 * sp[i];
            }
          }
        }
      }
    }
    Attention(qkv_.data(), lengths, seq, sliding, ctx_.data());
    RETURN_IF_ERROR(be.Linear(ctx_.data(), *l.out, l.bo, o_.data(), rows, Activation::kNone));
    for (std::size_t i = 0; i < tokens * h; ++i) x_[i] += o_[i];
    EncoderLayerNormRows(x_.data(), l.mlp_norm_g, l.mlp_norm_b, a_.data(), rows, h, c.layer_norm_eps);
    RETURN_IF_ERROR(be.Linear(a_.data(), *l.in, l.bi, wi_.data(), rows, Activation::kNone));
    for (std::size_t r = 0; r < tokens; ++r) {
      const float* u = wi_.data() + r * 2 * I;
      float* gr = g_.data() + r * I;
      for (int i = 0; i < I; ++i) gr[i] = host_ops::Activate(c.hidden_act, u[i]) * u[I + i];
    }
    RETURN_IF_ERROR(be.Linear(g_.data(), *l.mlp_out, l.bo2, o_.data(), rows, Activation::kNone));
    for (std::size_t i = 0; i < tokens * h; ++i) x_[i] += o_[i];
  }
  out.resize(tokens * h);
  EncoderLayerNormRows(x_.data(), final_norm_g_, final_norm_b_, out.data(), rows, h, c.layer_norm_eps);
  for (int len : lengths) tokens_.real += len;
  tokens_.computed += static_cast<int64_t>(tokens);
  tokens_.flops += Flops(c, batch, seq);
  return Status::OK();
}

}  // namespace dfw
