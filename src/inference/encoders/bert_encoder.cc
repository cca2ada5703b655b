// BertEncoder: weight loading (HF names, shape checks) and the forward pass on the backend.
#include "dfw/inference/bert_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "dfw/inference/safetensors.h"

namespace dfw {


// Device buffers sized for max_batch × max_seq_length, and their host staging twins.
struct BertEncoder::Workspace {
  std::unique_ptr<DeviceBuffer> x, alt, qkv, scores, ctx, inter, mask, pool_w, pooled;
  std::vector<float> host_x, host_mask, host_pool_w;
};

BertEncoder::BertEncoder(BertConfig config, BertEncoderOptions options, InferenceBackend* backend)
    : config_(config), options_(options), backend_(backend) {}

BertEncoder::~BertEncoder() = default;

namespace {
Status RefuseModernBert(const BertConfig& config) {
  if (config.family != EncoderFamily::kModernBert) return Status::OK();
  return InvalidArgument("model_type modernbert (RoPE, GeGLU, local attention) runs in HuggingFacePipelineModelHandler "
                         "on its own encoder; this handler runs BERT, DistilBERT, RoBERTa and XLM-RoBERTa encoders");
}
}  // namespace

Status BertEncoder::CheckWeights(const BertConfig& config, const SafetensorsFile& weights) {
  RETURN_IF_ERROR(RefuseModernBert(config));
  BertEncoder e(config, BertEncoderOptions{}, nullptr);
  e.shapes_only_ = true;
  return e.LoadWeights(weights).WithContext("'" + weights.path() + "'");
}

Result<std::unique_ptr<BertEncoder>> BertEncoder::Make(const BertConfig& config, const SafetensorsFile& weights,
                                                       InferenceBackend* backend, BertEncoderOptions options) {
  RETURN_IF_ERROR(RefuseModernBert(config));
  if (backend == nullptr) return InvalidArgument("BertEncoder needs a backend");
  if (options.max_batch < 1 || options.max_batch > 4096) {
    return InvalidArgument("max batch size must be in [1, 4096], got " + std::to_string(options.max_batch));
  }
  if (options.max_tokens < 0) {
    return InvalidArgument("max tokens per sub-batch must be >= 0 (0: the backend's), got " +
                           std::to_string(options.max_tokens));
  }
  const int max_positions = config.max_position_embeddings - config.position_offset;
  if (options.max_seq_length < 2 || options.max_seq_length > max_positions) {
    return InvalidArgument("max_seq_length must be in [2, " + std::to_string(max_positions) +
                           "] (the model's max_position_embeddings" +
                           (config.position_offset > 0 ? " less its position offset " + std::to_string(config.position_offset) : std::string()) +
                           "), got " + std::to_string(options.max_seq_length));
  }
  std::unique_ptr<BertEncoder> e(new BertEncoder(config, options, backend));
  RETURN_IF_ERROR(e->LoadWeights(weights).WithContext("'" + weights.path() + "'"));
  RETURN_IF_ERROR(e->SetLinearDType(options.linear_dtype));
  RETURN_IF_ERROR(e->AllocateWorkspace());
  return e;
}

Status BertEncoder::AllocateWorkspace() {
  const std::size_t b = static_cast<std::size_t>(options_.max_batch);
  const std::size_t s = static_cast<std::size_t>(options_.max_seq_length);
  const std::size_t h = static_cast<std::size_t>(config_.hidden_size);
  const std::size_t tokens = b * s;
  auto alloc = [&](std::size_t floats, std::unique_ptr<DeviceBuffer>& out) -> Status {
    ASSIGN_OR_RETURN(out, backend_->Allocate(floats * sizeof(float)));
    return Status::OK();
  };
  ws_ = std::make_unique<Workspace>();
  RETURN_IF_ERROR(alloc(tokens * h, ws_->x));
  RETURN_IF_ERROR(alloc(tokens * h, ws_->alt));
  RETURN_IF_ERROR(alloc(tokens * 3 * h, ws_->qkv));
  RETURN_IF_ERROR(alloc(b * static_cast<std::size_t>(config_.num_attention_heads) * s * s, ws_->scores));
  RETURN_IF_ERROR(alloc(tokens * h, ws_->ctx));
  RETURN_IF_ERROR(alloc(tokens * static_cast<std::size_t>(config_.intermediate_size), ws_->inter));
  RETURN_IF_ERROR(alloc(tokens, ws_->mask));
  RETURN_IF_ERROR(alloc(tokens, ws_->pool_w));
  RETURN_IF_ERROR(alloc(b * h, ws_->pooled));
  ws_->host_x.resize(tokens * h);
  ws_->host_mask.resize(tokens);
  ws_->host_pool_w.resize(tokens);
  return Status::OK();
}

uint64_t BertEncoder::workspace_bytes() const {
  if (!ws_) return 0;
  uint64_t n = 0;
  for (const auto* b : {&ws_->x, &ws_->alt, &ws_->qkv, &ws_->scores, &ws_->ctx, &ws_->inter, &ws_->mask, &ws_->pool_w,
                        &ws_->pooled}) {
    if (*b) n += (*b)->bytes();
  }
  return n;
}

double BertEncoder::Flops(const BertConfig& c, int batch, int seq) {
  const double h = c.hidden_size, i = c.intermediate_size, s = seq;
  // Per token and layer: QKV 6H², attention output 2H², FFN 4HI, scores + context 4SH.
  return static_cast<double>(batch) * s * c.num_hidden_layers * (8 * h * h + 4 * h * i + 4 * s * h);
}

Status BertEncoder::RunLayer(const Layer& l, int batch, int seq) {
  const int h = config_.hidden_size, heads = config_.num_attention_heads, dh = h / heads;
  const int tokens = batch * seq, h3 = 3 * h;
  float* x = ws_->x->f32();
  float* alt = ws_->alt->f32();
  float* qkv = ws_->qkv->f32();
  float* scores = ws_->scores->f32();
  float* ctx = ws_->ctx->f32();
  InferenceBackend& be = *backend_;
  RETURN_IF_ERROR(be.Linear(x, *l.qkv, l.qkv_b, qkv, tokens, Activation::kNone));
  // Scores are laid out [batch][head][seq][seq], as ScaledMaskedSoftmax expects; one GEMM call
  // covers every (sequence, head) pair of a round (q/k/v of a head are column slices of qkv, dh
  // apart). A round is as many sequences as the backend asks (AttentionSequencesPerCall: all of
  // them on a GPU, few on a CPU so the scores stay in cache), each round reusing the scores' start.
  const int64_t seq_stride = static_cast<int64_t>(seq) * h3;
  const int64_t score_stride = static_cast<int64_t>(heads) * seq * seq, head_score = static_cast<int64_t>(seq) * seq;
  const int per_round = std::max(1, be.AttentionSequencesPerCall(heads, seq));
  const float scale = 1.f / std::sqrt(static_cast<float>(dh));
  for (int b0 = 0; b0 < batch; b0 += per_round) {
    const int n = std::min(per_round, batch - b0);
    const float* q = qkv + static_cast<int64_t>(b0) * seq_stride;
    RETURN_IF_ERROR(be.GemmHeadsBatched(false, true, seq, seq, dh, 1.f, q, h3, seq_stride, dh, q + h, h3, seq_stride,
                                        dh, 0.f, scores, seq, score_stride, head_score, n, heads));
    RETURN_IF_ERROR(be.ScaledMaskedSoftmax(scores, n, heads, seq, seq, scale, ws_->mask->f32() + static_cast<int64_t>(b0) * seq));
    RETURN_IF_ERROR(be.GemmHeadsBatched(false, false, seq, dh, seq, 1.f, scores, seq, score_stride, head_score,
                                        q + 2 * h, h3, seq_stride, dh, 0.f, ctx + static_cast<int64_t>(b0) * seq * h, h,
                                        static_cast<int64_t>(seq) * h, dh, n, heads));
  }
  RETURN_IF_ERROR(be.Linear(ctx, *l.attn_out, l.attn_out_b, alt, tokens, Activation::kNone));
  RETURN_IF_ERROR(be.LayerNorm(alt, x, l.attn_ln_g, l.attn_ln_b, alt, tokens, h, config_.layer_norm_eps));
  std::swap(ws_->x, ws_->alt);  // the new hidden state is in `alt`
  x = ws_->x->f32();
  alt = ws_->alt->f32();
  float* mid = ws_->inter->f32();
  RETURN_IF_ERROR(be.Linear(x, *l.inter, l.inter_b, mid, tokens, config_.hidden_act));
  RETURN_IF_ERROR(be.Linear(mid, *l.out, l.out_b, alt, tokens, Activation::kNone));
  RETURN_IF_ERROR(be.LayerNorm(alt, x, l.out_ln_g, l.out_ln_b, alt, tokens, h, config_.layer_norm_eps));
  std::swap(ws_->x, ws_->alt);
  return Status::OK();
}

Status BertEncoder::Forward(std::span<const std::span<const int32_t>> sequences,
                            std::span<const std::span<const int32_t>> type_ids, int& seq) {
  const int batch = static_cast<int>(sequences.size());
  const int h = config_.hidden_size;
  if (sequences.size() > static_cast<std::size_t>(options_.max_batch)) {
    return InvalidArgument("batch of " + std::to_string(sequences.size()) + " sequences exceeds the encoder's max " +
                           std::to_string(options_.max_batch));
  }
  if (!type_ids.empty() && type_ids.size() != sequences.size()) {
    return InvalidArgument(std::to_string(type_ids.size()) + " segment-id sequences for " +
                           std::to_string(sequences.size()) + " sequences");
  }
  seq = 0;
  int64_t real_tokens = 0;
  for (std::size_t b = 0; b < sequences.size(); ++b) {
    const auto& s = sequences[b];
    if (s.empty() || s.size() > static_cast<std::size_t>(options_.max_seq_length)) {
      return InvalidArgument("sequence " + std::to_string(b) + " has " + std::to_string(s.size()) +
                             " tokens; allowed 1.." + std::to_string(options_.max_seq_length));
    }
    for (int32_t id : s) {
      if (id < 0 || id >= config_.vocab_size) {
        return InvalidArgument("sequence " + std::to_string(b) + " has token id " + std::to_string(id) +
                               " outside the vocabulary [0, " + std::to_string(config_.vocab_size) + ")");
      }
    }
    if (!type_ids.empty()) {
      if (type_ids[b].size() != s.size()) return InvalidArgument("sequence " + std::to_string(b) + ": segment ids and tokens differ in length");
      for (int32_t t : type_ids[b]) {
        if (t < 0 || t >= std::max(1, config_.type_vocab_size)) {
          return InvalidArgument("sequence " + std::to_string(b) + " has segment id " + std::to_string(t) +
                                 "; the model has " + std::to_string(std::max(1, config_.type_vocab_size)));
        }
      }
    }
    seq = std::max(seq, static_cast<int>(s.size()));
    real_tokens += static_cast<int64_t>(s.size());
  }
  tokens_.real += real_tokens;
  tokens_.computed += static_cast<int64_t>(batch) * seq;
  tokens_.flops += Flops(config_, batch, seq);
  // Embeddings: gathered and summed on the host, then one upload (the tables stay on the host).
  const std::size_t hs = static_cast<std::size_t>(h);
  for (int b = 0; b < batch; ++b) {
    const auto& s = sequences[static_cast<std::size_t>(b)];
    const int len = static_cast<int>(s.size());
    for (int t = 0; t < seq; ++t) {
      float* dst = ws_->host_x.data() + (static_cast<std::size_t>(b) * seq + t) * hs;
      const std::size_t m = static_cast<std::size_t>(b) * seq + t;
      if (t >= len) {  // padding: any finite values do; the mask keeps them out of everything
        std::fill(dst, dst + hs, 0.f);
        ws_->host_mask[m] = -1e30f;
        ws_->host_pool_w[m] = 0.f;
        continue;
      }
      const float* w = word_emb_ + static_cast<std::size_t>(s[static_cast<std::size_t>(t)]) * hs;
      const float* p = pos_emb_ + static_cast<std::size_t>(t + config_.position_offset) * hs;
      const std::size_t type = type_ids.empty() ? 0 : static_cast<std::size_t>(type_ids[static_cast<std::size_t>(b)][static_cast<std::size_t>(t)]);
      const float* ty = type_emb_ + type * hs;
      for (std::size_t k = 0; k < hs; ++k) dst[k] = w[k] + p[k] + ty[k];
      ws_->host_mask[m] = 0.f;
      ws_->host_pool_w[m] = options_.pooling == Pooling::kMean ? 1.f / static_cast<float>(len) : (t == 0 ? 1.f : 0.f);
    }
  }
  const std::size_t tokens = static_cast<std::size_t>(batch) * seq;
  RETURN_IF_ERROR(backend_->CopyToDevice(ws_->x->data(), ws_->host_x.data(), tokens * hs * sizeof(float)));
  RETURN_IF_ERROR(backend_->CopyToDevice(ws_->mask->data(), ws_->host_mask.data(), tokens * sizeof(float)));
  RETURN_IF_ERROR(backend_->CopyToDevice(ws_->pool_w->data(), ws_->host_pool_w.data(), tokens * sizeof(float)));
  RETURN_IF_ERROR(backend_->LayerNorm(ws_->x->f32(), nullptr, emb_ln_gamma_, emb_ln_beta_, ws_->x->f32(),
                                      static_cast<int>(tokens), h, config_.layer_norm_eps));
  for (const Layer& l : layers_) RETURN_IF_ERROR(RunLayer(l, batch, seq));
  return Status::OK();
}

Status BertEncoder::Encode(std::span<const std::span<const int32_t>> sequences, std::span<float> out) {
  const int batch = static_cast<int>(sequences.size());
  const int h = config_.hidden_size;
  const std::size_t hs = static_cast<std::size_t>(h);
  if (out.size() != sequences.size() * static_cast<std::size_t>(h)) {
    return InvalidArgument("output holds " + std::to_string(out.size()) + " floats, expected " +
                           std::to_string(sequences.size() * static_cast<std::size_t>(h)));
  }
  if (batch == 0) return Status::OK();
  int seq = 0;
  RETURN_IF_ERROR(Forward(sequences, {}, seq));
  // Pooling as a [1 x seq]·[seq x H] product per sequence with the per-token weights.
  RETURN_IF_ERROR(backend_->GemmStridedBatched(false, false, 1, h, seq, 1.f, ws_->pool_w->f32(), seq, seq,
                                               ws_->x->f32(), h, static_cast<int64_t>(seq) * h, 0.f,
                                               ws_->pooled->f32(), h, h, batch));
  RETURN_IF_ERROR(backend_->CopyToHost(out.data(), ws_->pooled->data(), out.size() * sizeof(float)));
  RETURN_IF_ERROR(backend_->Synchronize());
  if (options_.normalize) {
    for (int b = 0; b < batch; ++b) {
      float* v = out.data() + static_cast<std::size_t>(b) * hs;
      double norm = 0;
      for (std::size_t k = 0; k < hs; ++k) norm += static_cast<double>(v[k]) * v[k];
      const float inv = 1.f / static_cast<float>(std::max(std::sqrt(norm), 1e-12));  // torch F.normalize's eps
      for (std::size_t k = 0; k < hs; ++k) v[k] *= inv;
    }
  }
  return Status::OK();
}

Status BertEncoder::EncodeTokens(std::span<const std::span<const int32_t>> sequences,
                                 std::span<const std::span<const int32_t>> type_ids, std::vector<float>& out, int& seq) {
  seq = 0;
  out.clear();
  if (sequences.empty()) return Status::OK();
  RETURN_IF_ERROR(Forward(sequences, type_ids, seq));
  out.resize(sequences.size() * static_cast<std::size_t>(seq) * static_cast<std::size_t>(config_.hidden_size));
  RETURN_IF_ERROR(backend_->CopyToHost(out.data(), ws_->x->data(), out.size() * sizeof(float)));
  return backend_->Synchronize();
}

}  // namespace dfw
