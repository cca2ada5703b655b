// The CUDA decoder step: the CPU decoder's step (src/backend/cpu/cpu_decoder.cc) with every piece
// on the GPU — the products through cuBLAS (as CudaBackend's Linear runs them), the rest on
// decoder_kernels.cu — and the KV cache a device pool of blocks addressed by the host's block ids.
#include "decoder_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "decoder_kernels.h"
#include "kernels.h"

namespace dfw::cuda {
namespace decoder_impl {
namespace {

struct DecoderDeviceFree {
  void operator()(void* p) const { (void)cudaFree(p); }  // a destructor cannot report
};
using DecoderDevicePtr = std::unique_ptr<void, DecoderDeviceFree>;

// Device memory that grows (never shrinks) to the largest size asked for.
struct Scratch {
  DecoderDevicePtr p;
  std::size_t bytes = 0;
  float* f() const { return static_cast<float*>(p.get()); }
  int* i() const { return static_cast<int*>(p.get()); }
};

Status Grow(Scratch& s, std::size_t bytes) {
  if (s.bytes >= bytes) return Status::OK();
  s.p.reset();  // free first: the old contents are not kept
  s.bytes = 0;
  void* raw = nullptr;
  DFW_CUDA_CHECK(cudaMalloc(&raw, std::max<std::size_t>(bytes, 1)));
  s.p.reset(raw);
  s.bytes = bytes;
  return Status::OK();
}

// One product's weights: float32, or bfloat16 (then `bf16`).
struct Product {
  DecoderDevicePtr w;
  const void* alias = nullptr;  // not owned: a tied LM head reads the embedding's float32 copy
  int n = 0, k = 0;
  bool bf16 = false;
  const void* data() const { return alias != nullptr ? alias : w.get(); }
};

struct LayerOnDevice {
  DecoderDevicePtr norm1_w, norm1_b, norm2_w, norm2_b, pre_ff_w, post_ff_w;
  Product qkv, o, up, down;
  DecoderDevicePtr qkv_b, o_b, up_b, down_b;
};

GateActivation GateFor(DecoderGateActivation a) {
  switch (a) {
    case DecoderGateActivation::kSilu: return GateActivation::kSilu;
    case DecoderGateActivation::kGeluTanh: return GateActivation::kGeluTanh;
    case DecoderGateActivation::kGelu: return GateActivation::kGelu;
  }
  return GateActivation::kSilu;
}

constexpr int kSlabBlocks = 64;  // pool blocks per device allocation (PagedKvCache's slab size)

class CudaDecoder final : public DeviceDecoder {
 public:
  CudaDecoder(const DecoderSpec& spec, cudaStream_t stream, cublasHandle_t pedantic, cublasHandle_t tensor_math, std::string device)
      : s_(spec), stream_(stream), pedantic_(pedantic), tensor_math_(tensor_math), device_(std::move(device)) {
    // The host pointers are valid only during CreateDecoder: keep none.
    s_.embed = s_.positions = s_.final_norm_w = s_.final_norm_b = s_.lm_head = nullptr;
    s_.layers.clear();
    s_.host_weights_owner.reset();  // the caller frees the host weights once they are uploaded
    block_floats_ = static_cast<long long>(s_.num_layers) * 2 * s_.num_kv_heads * kKvBlockTokens * s_.head_dim;
  }

  Status Upload(const DecoderSpec& spec) {
    const std::size_t h = static_cast<std::size_t>(spec.hidden_size), v = static_cast<std::size_t>(spec.vocab_size);
    ASSIGN_OR_RETURN(embed_, Vector(spec.embed, v * h));
    if (spec.gpt2) {
      ASSIGN_OR_RETURN(positions_, Vector(spec.positions, static_cast<std::size_t>(spec.max_positions) * h));
    }
    ASSIGN_OR_RETURN(final_norm_w_, Vector(spec.final_norm_w, h));
    ASSIGN_OR_RETURN(final_norm_b_, Vector(spec.final_norm_b, h));
    if (!spec.inv_freq.empty()) {
      ASSIGN_OR_RETURN(inv_freq_, Vector(spec.inv_freq.data(), spec.inv_freq.size()));
    }
    const int q = spec.num_heads * spec.head_dim, kv = spec.num_kv_heads * spec.head_dim;
    const int inter = spec.intermediate_size, up = spec.gpt2 ? inter : 2 * inter;
    const int hidden = spec.hidden_size;
    layers_.resize(spec.layers.size());
    for (std::size_t l = 0; l < spec.layers.size(); ++l) {
      const DecoderLayerWeights& w = spec.layers[l];
      LayerOnDevice& d = layers_[l];
      ASSIGN_OR_RETURN(d.norm1_w, Vector(w.norm1_w, h));
      ASSIGN_OR_RETURN(d.norm1_b, Vector(w.norm1_b, h));
      ASSIGN_OR_RETURN(d.norm2_w, Vector(w.norm2_w, h));
      ASSIGN_OR_RETURN(d.norm2_b, Vector(w.norm2_b, h));
      ASSIGN_OR_RETURN(d.pre_ff_w, Vector(w.pre_ff_w, h));
      ASSIGN_OR_RETURN(d.post_ff_w, Vector(w.post_ff_w, h));
      RETURN_IF_ERROR(MakeProduct(w.qkv, q + 2 * kv, hidden, d.qkv));
      ASSIGN_OR_RETURN(d.qkv_b, Vector(w.qkv_b, static_cast<std::size_t>(q + 2 * kv)));
      RETURN_IF_ERROR(MakeProduct(w.o, hidden, q, d.o));
      ASSIGN_OR_RETURN(d.o_b, Vector(w.o_b, h));
      RETURN_IF_ERROR(MakeProduct(w.up, up, hidden, d.up));
      ASSIGN_OR_RETURN(d.up_b, Vector(w.up_b, static_cast<std::size_t>(up)));
      RETURN_IF_ERROR(MakeProduct(w.down, hidden, inter, d.down));
      ASSIGN_OR_RETURN(d.down_b, Vector(w.down_b, h));
    }
    if (spec.lm_head == spec.embed && s_.linear_dtype != LinearDType::kBFloat16) {
      // tie_word_embeddings: the LM head is the embedding matrix, held once.
      lm_head_.n = spec.vocab_size;
      lm_head_.k = hidden;
      lm_head_.alias = embed_.get();
    } else {
      RETURN_IF_ERROR(MakeProduct(spec.lm_head, spec.vocab_size, hidden, lm_head_));
    }
    staging_ = Scratch();  // the float32 copies bfloat16 weights were converted from
    DFW_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return Status::OK();
  }

  Status Step(std::span<const DeviceStepRow> rows, const DeviceBlockTables& tables, std::vector<float>& logits) override;

  int64_t weight_bytes() const override { return weight_bytes_; }
  int64_t kv_pool_bytes() const override { return pool_bytes_; }
  std::string description() const override {
    return "cuda decoder engine on " + device_ + " (" + (s_.linear_dtype == LinearDType::kBFloat16 ? "bfloat16" : "float32") +
           " products, float32 KV cache and attention)";
  }

 private:
  // A float32 vector on the device (nullptr stays nullptr: an absent bias or norm).
  Result<DecoderDevicePtr> Vector(const float* host, std::size_t count) {
    if (host == nullptr) return DecoderDevicePtr();
    void* raw = nullptr;
    DFW_CUDA_CHECK(cudaMalloc(&raw, count * sizeof(float)));
    DecoderDevicePtr p(raw);
    DFW_CUDA_CHECK(cudaMemcpyAsync(p.get(), host, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
    // Pageable host memory: the copy is done (or staged) when this returns; the caller frees the
    // host weights only after CreateDecoder, which synchronises.
    weight_bytes_ += static_cast<int64_t>(count * sizeof(float));
    return p;
  }

  // w [n x k] as float32, or converted to bfloat16 through a float32 staging copy.
  Status MakeProduct(const float* w, int n, int k, Product& out) {
    out.n = n;
    out.k = k;
    const std::size_t count = static_cast<std::size_t>(n) * k;
    if (s_.linear_dtype != LinearDType::kBFloat16) {
      ASSIGN_OR_RETURN(out.w, Vector(w, count));
      return Status::OK();
    }
    RETURN_IF_ERROR(Grow(staging_, count * sizeof(float)));
    DFW_CUDA_CHECK(cudaMemcpyAsync(staging_.p.get(), w, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
    void* raw = nullptr;
    DFW_CUDA_CHECK(cudaMalloc(&raw, count * 2));
    out.w.reset(raw);
    out.bf16 = true;
    DFW_CUDA_CHECK(LaunchToBf16(staging_.f(), out.w.get(), static_cast<long long>(count), stream_));
    weight_bytes_ += static_cast<int64_t>(count * 2);
    return Status::OK();
  }

  // y[m x n] = x[m x k] · wᵀ (+ bias): row-major y is column-major yᵀ = w · xᵀ, as CudaBackend's
  // Gemm and bfloat16 Linear run it.
  Status Project(const float* x, int m, const Product& w, const DecoderDevicePtr& bias, float* y) {
    const float alpha = 1.f, beta = 0.f;
    if (w.bf16) {
      RETURN_IF_ERROR(Grow(x_bf16_, static_cast<std::size_t>(m) * w.k * 2));
      DFW_CUDA_CHECK(LaunchToBf16(x, x_bf16_.p.get(), static_cast<long long>(m) * w.k, stream_));
      DFW_CUDA_CHECK(cublasGemmEx(tensor_math_, CUBLAS_OP_T, CUBLAS_OP_N, w.n, m, w.k, &alpha, w.data(), CUDA_R_16BF, w.k,
                                  x_bf16_.p.get(), CUDA_R_16BF, w.k, &beta, y, CUDA_R_32F, w.n, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
    } else {
      DFW_CUDA_CHECK(cublasSgemm(pedantic_, CUBLAS_OP_T, CUBLAS_OP_N, w.n, m, w.k, &alpha, static_cast<const float*>(w.data()),
                                 w.k, x, w.k, &beta, y, w.n));
    }
    if (bias != nullptr) {
      DFW_CUDA_CHECK(LaunchBiasActivation(y, m, w.n, static_cast<const float*>(bias.get()), Activation::kNone, stream_));
    }
    return Status::OK();
  }

  Status Norm(const DecoderDevicePtr& w, const DecoderDevicePtr& b, const float* in, float* out, int m) {
    const float* wf = static_cast<const float*>(w.get());
    if (s_.gpt2) {
      DFW_CUDA_CHECK(LaunchDecoderLayerNorm(in, wf, static_cast<const float*>(b.get()), out, m, s_.hidden_size, s_.norm_eps, stream_));
    } else {
      DFW_CUDA_CHECK(LaunchDecoderRmsNorm(in, wf, out, m, s_.hidden_size, s_.norm_eps, s_.norm_plus_one, stream_));
    }
    return Status::OK();
  }

  // Slabs holding every block id below `need` (ids are below `pool_blocks`, the host cache's
  // capacity, which cuts the last slab short), and their pointer table on the device.
  Status EnsurePool(int need, int pool_blocks) {
    const int cap = std::max(need, pool_blocks);
    for (int i = 0; i * kSlabBlocks < need; ++i) {
      const std::size_t slab = static_cast<std::size_t>(i);
      const int start = i * kSlabBlocks;
      const int want = std::min(kSlabBlocks, cap - start);
      if (slab < slabs_.size() && start + slab_counts_[slab] >= std::min(need, start + kSlabBlocks)) continue;
      const std::size_t block_bytes = static_cast<std::size_t>(block_floats_) * sizeof(float);
      void* raw = nullptr;
      DFW_CUDA_CHECK(cudaMalloc(&raw, static_cast<std::size_t>(want) * block_bytes));
      DecoderDevicePtr p(raw);
      // Zeros, as the host cache's slabs start: a block read before it is written reads the same.
      DFW_CUDA_CHECK(cudaMemsetAsync(p.get(), 0, static_cast<std::size_t>(want) * block_bytes, stream_));
      pool_bytes_ += static_cast<int64_t>(static_cast<std::size_t>(want) * block_bytes);
      if (slab < slabs_.size()) {
        // A slab cut short for a smaller cache, now needed whole by a larger one: its blocks move.
        const std::size_t old_bytes = static_cast<std::size_t>(slab_counts_[slab]) * block_bytes;
        DFW_CUDA_CHECK(cudaMemcpyAsync(p.get(), slabs_[slab].get(), old_bytes, cudaMemcpyDeviceToDevice, stream_));
        DFW_CUDA_CHECK(cudaStreamSynchronize(stream_));
        pool_bytes_ -= static_cast<int64_t>(old_bytes);
        slabs_[slab] = std::move(p);
        slab_counts_[slab] = want;
      } else {
        slabs_.push_back(std::move(p));
        slab_counts_.push_back(want);
      }
      slab_table_dirty_ = true;
    }
    if (!slab_table_dirty_) return Status::OK();
    slab_ptrs_.clear();
    for (const DecoderDevicePtr& p : slabs_) slab_ptrs_.push_back(static_cast<float*>(p.get()));
    RETURN_IF_ERROR(Grow(slab_table_, slab_ptrs_.size() * sizeof(float*)));
    DFW_CUDA_CHECK(cudaMemcpyAsync(slab_table_.p.get(), slab_ptrs_.data(), slab_ptrs_.size() * sizeof(float*),
                                   cudaMemcpyHostToDevice, stream_));
    slab_table_dirty_ = false;
    return Status::OK();
  }

  DecoderSpec s_;  // sizes and switches; its weight pointers are cleared
  cudaStream_t stream_;
  cublasHandle_t pedantic_, tensor_math_;
  std::string device_;
  long long block_floats_ = 0;
  int64_t weight_bytes_ = 0, pool_bytes_ = 0;

  DecoderDevicePtr embed_, positions_, final_norm_w_, final_norm_b_, inv_freq_;
  std::vector<LayerOnDevice> layers_;
  Product lm_head_;

  std::vector<DecoderDevicePtr> slabs_;
  std::vector<int> slab_counts_;
  std::vector<float*> slab_ptrs_;  // host copy of the slab table (kept until the step's sync)
  Scratch slab_table_;
  bool slab_table_dirty_ = false;

  // Per step: the rows' ints (host, kept until the step's sync, and device), activations.
  std::vector<int> host_ints_;
  Scratch ints_, x_, h_, qkv_, attn_, act_, mlp_, last_, logits_, x_bf16_, staging_;
};

Status CudaDecoder::Step(std::span<const DeviceStepRow> rows, const DeviceBlockTables& tables, std::vector<float>& logits) {
  const int m = static_cast<int>(rows.size());
  if (m == 0) return Status::OK();
  RETURN_IF_ERROR(ValidateDecoderStep("cuda decoder", s_, rows, tables));
  // The ints the kernels read, in one upload: tokens, positions, each row's table start, the
  // logits rows, then every block id.
  host_ints_.assign(static_cast<std::size_t>(3 * m), 0);
  int max_id = -1;
  for (int32_t id : tables.block_ids) max_id = std::max(max_id, static_cast<int>(id));
  int n = 0;
  for (int r = 0; r < m; ++r) {
    const DeviceStepRow& row = rows[static_cast<std::size_t>(r)];
    const int start = tables.offsets[static_cast<std::size_t>(row.table)];
    host_ints_[static_cast<std::size_t>(r)] = row.token;
    host_ints_[static_cast<std::size_t>(m + r)] = row.position;
    host_ints_[static_cast<std::size_t>(2 * m + r)] = start;
  }
  for (int r = 0; r < m; ++r) {
    if (rows[static_cast<std::size_t>(r)].logits) {
      host_ints_.push_back(r);
      ++n;
    }
  }
  const std::size_t ids_at = host_ints_.size();
  host_ints_.insert(host_ints_.end(), tables.block_ids.begin(), tables.block_ids.end());
  RETURN_IF_ERROR(EnsurePool(max_id + 1, tables.pool_blocks));
  RETURN_IF_ERROR(Grow(ints_, host_ints_.size() * sizeof(int)));
  DFW_CUDA_CHECK(cudaMemcpyAsync(ints_.p.get(), host_ints_.data(), host_ints_.size() * sizeof(int), cudaMemcpyHostToDevice, stream_));
  StepRowsView view;
  view.tokens = ints_.i();
  view.positions = ints_.i() + m;
  view.table_start = ints_.i() + 2 * m;
  view.block_ids = ints_.i() + ids_at;
  view.rows = m;
  const int* logit_rows = ints_.i() + 3 * m;
  KvPoolView pool;
  pool.slabs = static_cast<float* const*>(slab_table_.p.get());
  pool.slab_blocks = kSlabBlocks;
  pool.block_floats = block_floats_;
  pool.kv_heads = s_.num_kv_heads;
  pool.head_dim = s_.head_dim;

  const int hidden = s_.hidden_size, inter = s_.intermediate_size, hd = s_.head_dim;
  const int H = s_.num_heads, KV = s_.num_kv_heads;
  const std::size_t rows_n = static_cast<std::size_t>(m);
  RETURN_IF_ERROR(Grow(x_, rows_n * hidden * sizeof(float)));
  RETURN_IF_ERROR(Grow(h_, rows_n * hidden * sizeof(float)));
  RETURN_IF_ERROR(Grow(qkv_, rows_n * (H + 2 * KV) * hd * sizeof(float)));
  RETURN_IF_ERROR(Grow(attn_, rows_n * H * hd * sizeof(float)));
  RETURN_IF_ERROR(Grow(act_, rows_n * (s_.gpt2 ? inter : 2 * inter) * sizeof(float)));
  RETURN_IF_ERROR(Grow(mlp_, rows_n * inter * sizeof(float)));

  if (s_.linear_dtype == LinearDType::kBFloat16) {
    // Sized for the widest product now: a product may still be reading it when the next starts.
    const int widest = std::max({hidden, inter, H * hd});
    RETURN_IF_ERROR(Grow(x_bf16_, rows_n * static_cast<std::size_t>(widest) * 2));
  }
  const float emb_scale = s_.scale_embeddings ? std::sqrt(static_cast<float>(hidden)) : 1.0f;
  DFW_CUDA_CHECK(LaunchDecoderEmbed(static_cast<const float*>(embed_.get()), static_cast<const float*>(positions_.get()), view,
                                    emb_scale, hidden, x_.f(), stream_));
  const long long mh = static_cast<long long>(m) * hidden;
  for (int l = 0; l < s_.num_layers; ++l) {
    const LayerOnDevice& L = layers_[static_cast<std::size_t>(l)];
    RETURN_IF_ERROR(Norm(L.norm1_w, L.norm1_b, x_.f(), h_.f(), m));
    RETURN_IF_ERROR(Project(h_.f(), m, L.qkv, L.qkv_b, qkv_.f()));
    DFW_CUDA_CHECK(LaunchDecoderRopeStoreKv(qkv_.f(), view, static_cast<const float*>(inv_freq_.get()), H, KV, hd, l, pool, stream_));
    const bool window = s_.sliding_window > 0 && s_.sliding[static_cast<std::size_t>(l)] != 0;
    DFW_CUDA_CHECK(LaunchDecoderPagedAttention(qkv_.f(), view, H, KV, hd, l, pool, window ? s_.sliding_window : 0, s_.query_scale,
                                               s_.attn_logit_softcap, attn_.f(), stream_));
    RETURN_IF_ERROR(Project(attn_.f(), m, L.o, L.o_b, h_.f()));
    if (s_.sandwich_norms) RETURN_IF_ERROR(Norm(L.norm2_w, DecoderDevicePtr(), h_.f(), h_.f(), m));
    DFW_CUDA_CHECK(LaunchDecoderAddInto(x_.f(), h_.f(), mh, stream_));
    RETURN_IF_ERROR(Norm(s_.sandwich_norms ? L.pre_ff_w : L.norm2_w, L.norm2_b, x_.f(), h_.f(), m));
    RETURN_IF_ERROR(Project(h_.f(), m, L.up, L.up_b, act_.f()));
    DFW_CUDA_CHECK(LaunchDecoderGate(act_.f(), mlp_.f(), m, inter, !s_.gpt2, GateFor(s_.act), stream_));
    RETURN_IF_ERROR(Project(mlp_.f(), m, L.down, L.down_b, h_.f()));
    if (s_.sandwich_norms) RETURN_IF_ERROR(Norm(L.post_ff_w, DecoderDevicePtr(), h_.f(), h_.f(), m));
    DFW_CUDA_CHECK(LaunchDecoderAddInto(x_.f(), h_.f(), mh, stream_));
  }
  if (n == 0) {
    DFW_CUDA_CHECK(cudaStreamSynchronize(stream_));  // host_ints_ may be reused by the next step
    return Status::OK();
  }
  // The final norm and the LM head on the logits rows only.
  RETURN_IF_ERROR(Grow(last_, static_cast<std::size_t>(n) * hidden * sizeof(float)));
  RETURN_IF_ERROR(Grow(logits_, static_cast<std::size_t>(n) * s_.vocab_size * sizeof(float)));
  DFW_CUDA_CHECK(LaunchDecoderGatherRows(x_.f(), logit_rows, n, hidden, h_.f(), stream_));
  RETURN_IF_ERROR(Norm(final_norm_w_, final_norm_b_, h_.f(), last_.f(), n));
  RETURN_IF_ERROR(Project(last_.f(), n, lm_head_, DecoderDevicePtr(), logits_.f()));
  const long long count = static_cast<long long>(n) * s_.vocab_size;
  if (s_.final_logit_softcap > 0) DFW_CUDA_CHECK(LaunchDecoderSoftcap(logits_.f(), count, s_.final_logit_softcap, stream_));
  const std::size_t before = logits.size();
  logits.resize(before + static_cast<std::size_t>(count));
  DFW_CUDA_CHECK(cudaMemcpyAsync(logits.data() + before, logits_.f(), static_cast<std::size_t>(count) * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_));
  DFW_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return Status::OK();
}

}  // namespace
}  // namespace decoder_impl

Result<std::unique_ptr<DeviceDecoder>> MakeCudaDecoder(const DecoderSpec& spec, cudaStream_t stream, cublasHandle_t pedantic,
                                                       cublasHandle_t tensor_math, std::string device) {
  RETURN_IF_ERROR(ValidateDecoderSpec(spec));
  auto decoder = std::make_unique<decoder_impl::CudaDecoder>(spec, stream, pedantic, tensor_math, std::move(device));
  if (Status st = decoder->Upload(spec); !st.ok()) {
    (void)cudaStreamSynchronize(stream);  // no queued copy may still read the host weights
    return st;
  }
  return std::unique_ptr<DeviceDecoder>(std::move(decoder));
}

}  // namespace dfw::cuda
