// The CPU decoder step (cpu_decoder.h): every projection one product over all the step's rows (the
// backend's Linear for prefill, the streaming kernels for decode), attention per row against its
// own sequence's blocks in a host pool addressed by the caller's block ids.
#include "cpu_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "dfw/backend/decoder_kernels.h"
#include "dfw/backend/registry.h"
#include "dfw/backend/skinny_kernels.h"

namespace dfw::cpu_decoder {
namespace {

constexpr int kCpuPoolSlabBlocks = 64;  // pool blocks per allocation (device_decoder.h's slab rule)

// One product's weights: prepared for the backend's Linear (prefill) and for the streaming
// kernels (decode).
struct CpuDecoderProduct {
  const float* w = nullptr;  // host float32 [n x k], the spec's (its owner keeps it alive)
  int n = 0, k = 0;
  std::unique_ptr<PreparedLinear> prepared;
  skinny_kernels::SkinnyWeights skinny;
};

struct CpuDecoderLayer {
  CpuDecoderProduct qkv, o, up, down;
};

class CpuDecoder final : public DeviceDecoder {
 public:
  CpuDecoder(const DecoderSpec& spec, InferenceBackend& backend) : s_(spec), backend_(backend) {
    block_floats_ = static_cast<std::size_t>(s_.num_layers) * 2 * static_cast<std::size_t>(s_.num_kv_heads) *
                    kDeviceKvBlockTokens * static_cast<std::size_t>(s_.head_dim);
  }

  Status Prepare();
  Status Step(std::span<const DeviceStepRow> rows, const DeviceBlockTables& tables, std::vector<float>& logits) override;
  int64_t weight_bytes() const override { return weight_bytes_; }
  int64_t kv_pool_bytes() const override { return pool_bytes_; }
  std::string description() const override {
    return "cpu decoder engine (" + std::string(LinearDTypeName(s_.linear_dtype)) +
           " products; attention, norms and KV cache in host memory)";
  }

 private:
  Status PrepareProduct(const float* w, int n, int k, CpuDecoderProduct& p);
  Status EnsurePool(int need, int pool_blocks);
  float* Block(int32_t id) const {
    return slabs_[static_cast<std::size_t>(id / kCpuPoolSlabBlocks)].get() +
           static_cast<std::size_t>(id % kCpuPoolSlabBlocks) * block_floats_;
  }
  void Attention(std::span<const DeviceStepRow> rows, int layer);
  Status Project(const float* x, int m, const CpuDecoderProduct& p, const float* bias, float* y);

  DecoderSpec s_;  // with the weight pointers and their owner
  InferenceBackend& backend_;
  std::vector<CpuDecoderLayer> layers_;
  CpuDecoderProduct lm_head_;
  int64_t weight_bytes_ = 0, pool_bytes_ = 0;

  // The KV pool: slab i holds ids [64 i, 64 i + slab_counts_[i]), zeroed when allocated.
  std::size_t block_floats_ = 0;
  std::vector<std::unique_ptr<float[]>> slabs_;
  std::vector<int> slab_counts_;

  // Scratch, per step.
  std::vector<float> x_, h_, qkv_, attn_, mlp_, act_, last_;
  // Each row's pool blocks (base pointers) for the attention kernel: row r's are
  // row_blocks_[row_block_at_[r], row_block_at_[r + 1]); row_kv_[r] is the block its K/V go to.
  std::vector<const float*> row_blocks_;
  std::vector<std::size_t> row_block_at_;
  std::vector<float*> row_kv_;
};

Status CpuDecoder::Prepare() {
  if (s_.host_weights_owner == nullptr) {
    return InvalidArgument("cpu decoder: the spec must hand over its host weights (host_weights_owner): they are read in place");
  }
  const int hidden = s_.hidden_size, inter = s_.intermediate_size;
  const int q = s_.num_heads * s_.head_dim, kv = s_.num_kv_heads * s_.head_dim;
  const int up = s_.gpt2 ? inter : 2 * inter;
  // The float32 weights read, each tensor once (a tied LM head is the embedding).
  std::set<const float*> seen;
  auto count = [&](const float* w, int64_t floats) {
    if (w != nullptr && seen.insert(w).second) weight_bytes_ += floats * static_cast<int64_t>(sizeof(float));
  };
  const int64_t h = hidden;
  count(s_.embed, int64_t{s_.vocab_size} * h);
  if (s_.gpt2) count(s_.positions, int64_t{s_.max_positions} * h);
  layers_.resize(s_.layers.size());
  for (std::size_t l = 0; l < s_.layers.size(); ++l) {
    const DecoderLayerWeights& w = s_.layers[l];
    for (const float* v : {w.norm1_w, w.norm1_b, w.norm2_w, w.norm2_b, w.pre_ff_w, w.post_ff_w, w.o_b, w.down_b}) count(v, h);
    count(w.qkv, int64_t{q + 2 * kv} * h);
    count(w.qkv_b, q + 2 * kv);
    count(w.o, h * q);
    count(w.up, int64_t{up} * h);
    count(w.up_b, up);
    count(w.down, h * inter);
    CpuDecoderLayer& L = layers_[l];
    RETURN_IF_ERROR(PrepareProduct(w.qkv, q + 2 * kv, hidden, L.qkv));
    RETURN_IF_ERROR(PrepareProduct(w.o, hidden, q, L.o));
    RETURN_IF_ERROR(PrepareProduct(w.up, up, hidden, L.up));
    RETURN_IF_ERROR(PrepareProduct(w.down, hidden, inter, L.down));
  }
  count(s_.final_norm_w, h);
  count(s_.final_norm_b, h);
  count(s_.lm_head, int64_t{s_.vocab_size} * h);
  return PrepareProduct(s_.lm_head, s_.vocab_size, hidden, lm_head_);
}

Status CpuDecoder::PrepareProduct(const float* w, int n, int k, CpuDecoderProduct& p) {
  p.w = w;
  p.n = n;
  p.k = k;
  // Host memory is this backend's device memory: the weights are prepared where they are.
  ASSIGN_OR_RETURN(p.prepared, backend_.PrepareLinear(w, n, k, s_.linear_dtype));
  skinny_kernels::MakeSkinnyWeights(w, n, k, s_.linear_dtype == LinearDType::kBFloat16, p.skinny);
  return Status::OK();
}

// Slabs holding every id below `need`; the last slab is cut to `pool_blocks` (the host cache's
// capacity), and grown, its blocks kept, when a larger cache later needs it whole.
Status CpuDecoder::EnsurePool(int need, int pool_blocks) {
  const int cap = std::max(need, pool_blocks);
  for (int i = 0; i * kCpuPoolSlabBlocks < need; ++i) {
    const std::size_t slab = static_cast<std::size_t>(i);
    const int start = i * kCpuPoolSlabBlocks;
    if (slab < slabs_.size() && start + slab_counts_[slab] >= std::min(need, start + kCpuPoolSlabBlocks)) continue;
    const int want = std::min(kCpuPoolSlabBlocks, cap - start);
    const std::size_t floats = static_cast<std::size_t>(want) * block_floats_;
    // Zeros, so a block read before it is written reads the same on every engine.
    std::unique_ptr<float[]> p(new (std::nothrow) float[floats]());
    if (p == nullptr) {
      return ResourceExhausted("cpu decoder: cannot allocate " + std::to_string(floats * sizeof(float)) + " bytes of KV pool");
    }
    pool_bytes_ += static_cast<int64_t>(floats * sizeof(float));
    if (slab < slabs_.size()) {
      const std::size_t old = static_cast<std::size_t>(slab_counts_[slab]) * block_floats_;
      std::memcpy(p.get(), slabs_[slab].get(), old * sizeof(float));
      pool_bytes_ -= static_cast<int64_t>(old * sizeof(float));
      slabs_[slab] = std::move(p);
      slab_counts_[slab] = want;
    } else {
      slabs_.push_back(std::move(p));
      slab_counts_.push_back(want);
    }
  }
  return Status::OK();
}

void CpuDecoder::Attention(std::span<const DeviceStepRow> rows, int layer) {
  const int hd = s_.head_dim, H = s_.num_heads, KV = s_.num_kv_heads;
  const int qkv_w = (H + 2 * KV) * hd;
  constexpr int B = kDeviceKvBlockTokens;
  const std::size_t per_head = static_cast<std::size_t>(B) * static_cast<std::size_t>(hd);
  // RoPE on q and k, then every row's k and v into the pool (a row attends to earlier rows of its
  // own sequence in this step).
  for (std::size_t r = 0; r < rows.size(); ++r) {
    float* row = qkv_.data() + r * static_cast<std::size_t>(qkv_w);
    if (!s_.gpt2) {
      for (int head = 0; head < H + KV; ++head) decoder_kernels::RopeRotateHalf(row + head * hd, hd, s_.inv_freq.data(), rows[r].position);
    }
    float* block = row_kv_[r];
    const int off = rows[r].position % B;
    for (int g = 0; g < KV; ++g) {
      float* k = block + ((static_cast<std::size_t>(layer) * 2 + 0) * static_cast<std::size_t>(KV) + static_cast<std::size_t>(g)) * per_head;
      float* v = block + ((static_cast<std::size_t>(layer) * 2 + 1) * static_cast<std::size_t>(KV) + static_cast<std::size_t>(g)) * per_head;
      std::memcpy(k + off * hd, row + (H + g) * hd, hd * sizeof(float));
      std::memcpy(v + off * hd, row + (H + KV + g) * hd, hd * sizeof(float));
    }
  }
  const bool window = s_.sliding_window > 0 && s_.sliding[static_cast<std::size_t>(layer)] != 0;
  // Rows are independent here (their keys are all in the pool): split them across the threads
  // when there is enough work (long prompts), each with its own score buffer.
  auto rows_in = [&](int r0, int r1) {
    thread_local std::vector<float> scores;
    for (int ri = r0; ri < r1; ++ri) {
      const std::size_t r = static_cast<std::size_t>(ri);
      const DeviceStepRow& row = rows[r];
      const int first = window ? std::max(0, row.position - s_.sliding_window + 1) : 0;
      const std::span<const float* const> blocks(row_blocks_.data() + row_block_at_[r], row_block_at_[r + 1] - row_block_at_[r]);
      decoder_kernels::PagedAttentionRow(qkv_.data() + r * static_cast<std::size_t>(qkv_w), attn_.data() + r * static_cast<std::size_t>(H) * hd,
                                         row.position, first, blocks, layer, H, KV, hd, s_.query_scale, s_.attn_logit_softcap, scores);
    }
  };
  int64_t work = 0;
  for (const DeviceStepRow& row : rows) work += static_cast<int64_t>(row.position + 1) * H * hd;
  skinny_kernels::ParallelFor(static_cast<int>(rows.size()), work > (1 << 18) ? BlasThreads() : 1, rows_in);
}

Status CpuDecoder::Project(const float* x, int m, const CpuDecoderProduct& p, const float* bias, float* y) {
  if (m <= s_.skinny_rows) {
    skinny_kernels::SkinnyLinear(x, m, p.skinny, bias, y, BlasThreads());
    return Status::OK();
  }
  return backend_.Linear(x, *p.prepared, bias, y, m, Activation::kNone);
}

Status CpuDecoder::Step(std::span<const DeviceStepRow> rows, const DeviceBlockTables& tables, std::vector<float>& logits) {
  const int m = static_cast<int>(rows.size());
  if (m == 0) return Status::OK();
  RETURN_IF_ERROR(ValidateDecoderStep("cpu decoder", s_, rows, tables));
  const int max_id = tables.block_ids.empty() ? -1 : *std::max_element(tables.block_ids.begin(), tables.block_ids.end());
  RETURN_IF_ERROR(EnsurePool(max_id + 1, tables.pool_blocks));
  row_blocks_.clear();
  row_block_at_.assign(1, 0);
  row_kv_.clear();
  for (const DeviceStepRow& r : rows) {
    const int32_t* ids = tables.block_ids.data() + tables.offsets[static_cast<std::size_t>(r.table)];
    for (int p = 0; p <= r.position; p += kDeviceKvBlockTokens) row_blocks_.push_back(Block(ids[p / kDeviceKvBlockTokens]));
    row_block_at_.push_back(row_blocks_.size());
    row_kv_.push_back(Block(ids[r.position / kDeviceKvBlockTokens]));
  }
  const int hidden = s_.hidden_size, inter = s_.intermediate_size, hd = s_.head_dim;
  const int H = s_.num_heads, KV = s_.num_kv_heads;
  const bool gpt2 = s_.gpt2;
  const std::size_t mh = static_cast<std::size_t>(m) * hidden;
  x_.resize(mh);
  h_.resize(mh);
  qkv_.resize(static_cast<std::size_t>(m) * (H + 2 * KV) * hd);
  attn_.resize(static_cast<std::size_t>(m) * H * hd);
  act_.resize(static_cast<std::size_t>(m) * (gpt2 ? inter : 2 * inter));
  mlp_.resize(static_cast<std::size_t>(m) * inter);
  const float emb_scale = s_.scale_embeddings ? std::sqrt(static_cast<float>(hidden)) : 1.0f;
  for (int r = 0; r < m; ++r) {
    const float* e = s_.embed + static_cast<std::size_t>(rows[r].token) * hidden;
    float* xr = x_.data() + static_cast<std::size_t>(r) * hidden;
    for (int i = 0; i < hidden; ++i) xr[i] = e[i] * emb_scale;
    if (gpt2) {
      const float* p = s_.positions + static_cast<std::size_t>(rows[r].position) * hidden;
      for (int i = 0; i < hidden; ++i) xr[i] += p[i];
    }
  }
  // `rows` rows of the model's norm (GPT-2: LayerNorm with bias; else RMSNorm).
  auto norm = [&](const float* w, const float* b, const float* in, float* out, int rows) {
    if (gpt2) {
      decoder_kernels::LayerNormRows(in, w, b, out, rows, hidden, s_.norm_eps);
    } else {
      decoder_kernels::RmsNormRows(in, w, out, rows, hidden, s_.norm_eps, s_.norm_plus_one);
    }
  };
  auto add_into_x = [&](const float* y) {
    for (std::size_t i = 0; i < mh; ++i) x_[i] += y[i];
  };
  for (int l = 0; l < s_.num_layers; ++l) {
    const DecoderLayerWeights& W = s_.layers[static_cast<std::size_t>(l)];
    const CpuDecoderLayer& L = layers_[static_cast<std::size_t>(l)];
    norm(W.norm1_w, W.norm1_b, x_.data(), h_.data(), m);
    RETURN_IF_ERROR(Project(h_.data(), m, L.qkv, W.qkv_b, qkv_.data()));
    Attention(rows, l);
    RETURN_IF_ERROR(Project(attn_.data(), m, L.o, W.o_b, h_.data()));
    if (s_.sandwich_norms) norm(W.norm2_w, nullptr, h_.data(), h_.data(), m);
    add_into_x(h_.data());
    norm(s_.sandwich_norms ? W.pre_ff_w : W.norm2_w, W.norm2_b, x_.data(), h_.data(), m);
    RETURN_IF_ERROR(Project(h_.data(), m, L.up, W.up_b, act_.data()));
    decoder_kernels::MlpActivationRows(s_.act, !gpt2, act_.data(), m, inter, mlp_.data());
    RETURN_IF_ERROR(Project(mlp_.data(), m, L.down, W.down_b, h_.data()));
    if (s_.sandwich_norms) norm(W.post_ff_w, nullptr, h_.data(), h_.data(), m);
    add_into_x(h_.data());
  }
  // The final norm and the LM head on the rows that want logits only.
  int n = 0;
  for (int r = 0; r < m; ++r) {
    if (!rows[r].logits) continue;
    std::memmove(x_.data() + static_cast<std::size_t>(n) * hidden, x_.data() + static_cast<std::size_t>(r) * hidden,
                 hidden * sizeof(float));
    ++n;
  }
  if (n == 0) return Status::OK();
  last_.resize(static_cast<std::size_t>(n) * hidden);
  norm(s_.final_norm_w, s_.final_norm_b, x_.data(), last_.data(), n);
  const std::size_t before = logits.size();
  const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(s_.vocab_size);
  logits.resize(before + count);
  float* out = logits.data() + before;
  RETURN_IF_ERROR(Project(last_.data(), n, lm_head_, nullptr, out));
  if (s_.final_logit_softcap > 0) {
    const float cap = s_.final_logit_softcap;
    for (std::size_t i = 0; i < count; ++i) out[i] = cap * std::tanh(out[i] / cap);
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<DeviceDecoder>> MakeCpuDecoder(const DecoderSpec& spec, InferenceBackend& backend) {
  RETURN_IF_ERROR(ValidateDecoderSpec(spec));
  auto decoder = std::make_unique<CpuDecoder>(spec, backend);
  RETURN_IF_ERROR(decoder->Prepare());
  return std::unique_ptr<DeviceDecoder>(std::move(decoder));
}

}  // namespace dfw::cpu_decoder
