// bfloat16 and int8 Linear layers on oneDNN; see dnnl_lowp.h for the scheme.
#include "dnnl_lowp.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "dnnl_gemm.h"
#include "lowp_kernels.h"

namespace dfw::cpu_dnnl {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// Rows of the product the weights layout is chosen for (oneDNN's blocked layout depends on the ISA
// and on n and k, not on m; every other m reuses it).
constexpr int kLayoutRows = 256;
constexpr std::size_t kMaxPrimitives = 256;
// The most rows one primitive runs (LowpMatmul::Run cuts larger products into chunks of it), and
// the quantum every primitive's row count is a multiple of (a chunk's last rows are padded to it).
constexpr int kChunkRows = 512;
constexpr int kRowQuantum = 32;

class LowpWeights final : public PreparedLinear {
 public:
  LowpWeights(LinearDType d, const float* w, int n, int k) : PreparedLinear(d, w, n, k) {}
  std::size_t bytes() const override {
    return desc.get_size() + col_scale.size() * sizeof(float) + col_sum.size() * sizeof(int32_t);
  }
  memory::desc desc;  // oneDNN's blocked layout of the converted weights
  memory weights;     // owns them
  std::vector<float> col_scale;   // int8: w[j][*] ≈ q[j][*] * col_scale[j]
  std::vector<int32_t> col_sum;   // int8: Σ q[j][*], for the activations' zero points
  int act_top = 255;              // int8: activations quantised to 0..act_top (255, or 127)
};

// Where u8·s8 pair sums saturate at int16 (no VNNI: oneDNN's kernels multiply the activations
// (u8) by the weights (s8) with vpmaddubsw, which adds the products of the input features 2i and
// 2i+1 in int16; 2 × 255 × 127 > 32767) every int8 product must keep those pairs within 32,767.
// A pair of opposite signs always does (255 × 127); a same-signed pair does when its two weights
// come to at most kPairSumTop = 128 steps (255 × 128 = 32,640). So the weights are quantised per
// output channel with that pair bound (cpu_lowp::QuantizeWeightRows, pair_top): the channel's scale
// is raised only as far as its largest same-signed pair needs, about 7.6 bits' worth on BERT's
// weights (norm error 0.0097 against 0.0076 at 8 bits and 0.0154 at 7, all-MiniLM-L6-v2's
// projections; docs/precision.md), and the activations keep their 8 bits. A layer where the bound
// costs more than kWeightBitError of the weights' norm beyond their 8-bit error (pairs of large
// same-signed weights in most channels) keeps 8-bit weights and takes 7-bit activations instead
// (0..127: 127 × 127 × 2 < 32767), whose per-row error measured 0.016-0.041 on the same model.
// (That the kernels pair features 2i and 2i+1 is checked by Int8ProductsAtTheExtremesAreExact,
// which ctest runs with oneDNN capped at AVX2.)
constexpr int kPairSumTop = 128;
constexpr double kWeightBitError = 0.02;

// w[n x k] → int8 per output channel (cpu_lowp::QuantizeWeightRows). With `error`, returns
// ||q·scale - w|| / ||w|| (0 without: that pass over doubles is only for the reduced-range choice).
double QuantizeWeights(cpu_kernels::Isa isa, const float* w, int n, int k, int pair_top, int8_t* q, float* scale,
                       int32_t* sum, bool error) {
  cpu_lowp::QuantizeWeightRows(isa, w, n, k, 127.f, q, scale, sum, pair_top);
  if (!error) return 0.0;
  double err = 0, norm = 0;
  for (int j = 0; j < n; ++j) {
    for (int p = 0; p < k; ++p) {
      const std::size_t i = static_cast<std::size_t>(j) * k + p;
      const double d = static_cast<double>(q[i]) * scale[j] - w[i];
      err += d * d;
      norm += static_cast<double>(w[i]) * w[i];
    }
  }
  return norm > 0 ? std::sqrt(err / norm) : 0.0;
}

std::optional<dnnl::algorithm> PostOp(Activation act) {
  switch (act) {
    case Activation::kNone: return std::nullopt;
    case Activation::kRelu: return dnnl::algorithm::eltwise_relu;
    case Activation::kGelu: return dnnl::algorithm::eltwise_gelu_erf;
    case Activation::kGeluTanh: return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::kTanh: return dnnl::algorithm::eltwise_tanh;
    case Activation::kSigmoid: return dnnl::algorithm::eltwise_logistic;
  }
  return std::nullopt;
}

}  // namespace

// (Not in the anonymous namespace: LowpMatmul::Impl, a class with linkage, holds these.)
struct Key {
  LinearDType dtype = LinearDType::kBFloat16;
  int m = 0, n = 0, k = 0;
  bool bias = false;
  Activation act = Activation::kNone;
  bool operator==(const Key&) const = default;
};

struct LowpKeyHash {
  std::size_t operator()(const Key& k) const {
    std::size_t h = 1469598103934665603ull;
    for (uint64_t v : {uint64_t(k.dtype), uint64_t(k.m), uint64_t(k.n), uint64_t(k.k), uint64_t(k.bias),
                       uint64_t(k.act)}) {
      h = (h ^ v) * 1099511628211ull;
    }
    return h;
  }
};

struct LowpEntry {
  Key key;
  dnnl::matmul primitive;  // empty when oneDNN refused the key
};

struct LowpMatmul::Impl {
  std::function<int()> threads;
  bool reduce_range = false;
  cpu_kernels::Isa isa = cpu_kernels::Isa::kScalar;
  dnnl::engine engine;
  dnnl::stream stream;
  std::list<LowpEntry> lru;  // most recently used first
  std::unordered_map<Key, std::list<LowpEntry>::iterator, LowpKeyHash> index;
  std::vector<uint16_t> x_bf16;
  std::vector<uint8_t> x_u8;
  std::vector<int32_t> acc, row_zp;
  std::vector<float> row_scale;
  std::vector<unsigned char> tail_in, tail_out;  // a chunk's last rows, padded to kRowQuantum
  bool warned = false;

  // Throws dnnl::error when oneDNN refuses.
  dnnl::matmul::primitive_desc Pd(const Key& k, const memory::desc& weights) const {
    const bool bf16 = k.dtype == LinearDType::kBFloat16;
    const memory::desc src({k.m, k.k}, bf16 ? dt::bf16 : dt::u8, tag::ab);
    const memory::desc dst({k.m, k.n}, bf16 ? dt::f32 : dt::s32, tag::ab);
    dnnl::primitive_attr attr;
    if (bf16) {
      dnnl::post_ops ops;
      if (const auto alg = PostOp(k.act)) ops.append_eltwise(1.f, *alg, 0.f, 0.f);
      attr.set_post_ops(ops);
    }
    if (bf16 && k.bias) {
      const memory::desc bias({1, k.n}, dt::f32, tag::ab);
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, bias, dst), attr, engine);
    }
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, engine);
  }

  LowpEntry& Find(const Key& key, const memory::desc& weights) {
    if (auto it = index.find(key); it != index.end()) {
      lru.splice(lru.begin(), lru, it->second);
      return *it->second;
    }
    if (lru.size() >= kMaxPrimitives) {
      index.erase(lru.back().key);
      lru.pop_back();
    }
    lru.push_front(LowpEntry{key, {}});
    index.emplace(key, lru.begin());
    LowpEntry& e = lru.front();
    try {
      e.primitive = dnnl::matmul(Pd(key, weights));
    } catch (const dnnl::error& err) {
      if (!std::exchange(warned, true)) {
        spdlog::warn("oneDNN could not create a {} matmul for m={} n={} k={}: {}; float32 runs this shape "
                     "(further refusals are not logged)",
                     LinearDTypeName(key.dtype), key.m, key.n, key.k, err.what());
      }
    }
    return e;
  }
};

Result<std::unique_ptr<LowpMatmul>> LowpMatmul::Make(std::function<int()> threads, bool reduce_range_int8,
                                                     cpu_kernels::Isa isa) {
  if (!threads) return InvalidArgument("LowpMatmul: threads is required");
  auto impl = std::make_unique<Impl>();
  impl->threads = std::move(threads);
  impl->reduce_range = reduce_range_int8;
  impl->isa = isa;
  try {
    impl->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    impl->stream = dnnl::stream(impl->engine);
  } catch (const dnnl::error& e) {
    return Unavailable(std::string("oneDNN has no CPU engine: ") + e.what());
  }
  return std::unique_ptr<LowpMatmul>(new LowpMatmul(std::move(impl)));
}

int Int8ActivationTop(const PreparedLinear& w) {
  const auto* lw = dynamic_cast<const LowpWeights*>(&w);
  return lw != nullptr && lw->dtype() == LinearDType::kInt8 ? lw->act_top : 0;
}

LowpMatmul::LowpMatmul(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LowpMatmul::~LowpMatmul() = default;

Result<std::unique_ptr<PreparedLinear>> LowpMatmul::Prepare(const float* w, int n, int k, LinearDType dtype) {
  if (dtype == LinearDType::kFloat32) return InvalidArgument("LowpMatmul: float32 is not a reduced precision");
  Impl& im = *impl_;
  const bool bf16 = dtype == LinearDType::kBFloat16;
  auto out = std::make_unique<LowpWeights>(dtype, w, n, k);
  std::vector<int8_t> q;
  if (!bf16) {  // per output channel, symmetric
    q.resize(static_cast<std::size_t>(n) * k);
    out->col_scale.resize(n);
    out->col_sum.resize(n);
    auto quantize = [&](int pair_top, bool error) {
      return QuantizeWeights(im.isa, w, n, k, pair_top, q.data(), out->col_scale.data(), out->col_sum.data(), error);
    };
    // Reduced range: pair-bounded weights unless the bound costs too much (the error it adds to
    // the 8-bit one, in quadrature), then 8-bit weights and 7-bit activations.
    bool pair_bound = false;
    if (im.reduce_range) {
      const double e8 = quantize(0, true), ep = quantize(kPairSumTop, true);
      pair_bound = std::sqrt(std::max(0.0, ep * ep - e8 * e8)) <= kWeightBitError;
    }
    if (!pair_bound) quantize(0, false);
    out->act_top = im.reduce_range && !pair_bound ? 127 : 255;
  }
  try {
    Key layout;
    layout.dtype = dtype, layout.m = kLayoutRows, layout.n = n, layout.k = k;
    const auto pd = im.Pd(layout, memory::desc({k, n}, bf16 ? dt::bf16 : dt::s8, tag::any));
    last_impl_ = pd.impl_info_str();
    if (last_impl_.rfind("ref", 0) == 0) {
      return Unimplemented("oneDNN has only its reference kernel (" + last_impl_ + ") for a " +
                           std::string(LinearDTypeName(dtype)) + " matmul on this CPU (oneDNN ISA " +
                           EffectiveIsaName() + ")");
    }
    out->desc = pd.weights_desc();
    out->weights = memory(out->desc, im.engine);
    // The plain weights as oneDNN's [k x n] operand: wᵀ read in place (strides 1, k).
    memory plain(memory::desc({k, n}, bf16 ? dt::f32 : dt::s8, memory::dims{1, k}), im.engine,
                 bf16 ? const_cast<float*>(w) : static_cast<void*>(q.data()));
    ApplyOmpThreads(im.threads());
    dnnl::reorder(plain, out->weights).execute(im.stream, plain, out->weights);
    im.stream.wait();
  } catch (const dnnl::error& e) {
    return Unimplemented("oneDNN cannot make a " + std::string(LinearDTypeName(dtype)) + " matmul for n=" +
                         std::to_string(n) + " k=" + std::to_string(k) + " on this CPU (oneDNN ISA " +
                         EffectiveIsaName() + "): " + e.what());
  }
  return std::unique_ptr<PreparedLinear>(std::move(out));
}

Result<LowpMatmul::Ran> LowpMatmul::Run(const float* x, const PreparedLinear& prepared, const float* bias, float* y,
                                        int m, Activation act) {
  const auto* w = dynamic_cast<const LowpWeights*>(&prepared);
  if (w == nullptr) return InvalidArgument("Linear: weights were not prepared by this CPU backend");
  Impl& im = *impl_;
  const int n = w->n(), k = w->k();
  const bool bf16 = w->dtype() == LinearDType::kBFloat16;
  Key key;
  key.dtype = w->dtype(), key.n = n, key.k = k;
  key.bias = bf16 && bias != nullptr;
  key.act = bf16 ? act : Activation::kNone;
  // Every primitive is made for one m, and making one (oneDNN's JIT) costs far more than running
  // it on a few hundred rows: products are run kChunkRows rows at a time, so the m a text model's
  // batches take (sub-batches x their padded length) come down to a few primitives per layer shape.
  key.m = std::min(m, kChunkRows) / kRowQuantum * kRowQuantum;
  if (key.m == 0) key.m = kRowQuantum;
  if (!im.Find(key, w->desc).primitive) return Ran{};
  const std::size_t mk = static_cast<std::size_t>(m) * k, mn = static_cast<std::size_t>(m) * n;
  if (bf16) {
    if (im.x_bf16.size() < mk) im.x_bf16.resize(mk);
    cpu_lowp::ToBf16(im.isa, x, im.x_bf16.data(), mk);
  } else {
    if (im.x_u8.size() < mk) im.x_u8.resize(mk);
    if (im.acc.size() < mn) im.acc.resize(mn);
    if (im.row_scale.size() < static_cast<std::size_t>(m)) {
      im.row_scale.resize(m);
      im.row_zp.resize(m);
    }
    cpu_lowp::QuantizeRowsU8(im.isa, x, m, k, im.x_u8.data(), im.row_scale.data(), im.row_zp.data(), w->act_top);
  }
  try {
    ApplyOmpThreads(im.threads());
    // One primitive run: `rows` rows from `src` (converted activations) into `dst` (y, or the int8
    // accumulators), both row-major.
    auto run = [&](int rows, const void* src, void* dst) -> bool {
      key.m = rows;
      LowpEntry& e = im.Find(key, w->desc);
      if (!e.primitive) return false;
      const memory::desc src_md({rows, k}, bf16 ? dt::bf16 : dt::u8, tag::ab);
      const memory::desc dst_md({rows, n}, bf16 ? dt::f32 : dt::s32, tag::ab);
      std::unordered_map<int, memory> args;
      args.emplace(DNNL_ARG_WEIGHTS, w->weights);
      args.emplace(DNNL_ARG_SRC, memory(src_md, im.engine, const_cast<void*>(src)));
      args.emplace(DNNL_ARG_DST, memory(dst_md, im.engine, dst));
      if (key.bias) {
        args.emplace(DNNL_ARG_BIAS, memory(memory::desc({1, n}, dt::f32, tag::ab), im.engine, const_cast<float*>(bias)));
      }
      e.primitive.execute(im.stream, args);
      return true;
    };
    const std::size_t in_bytes = bf16 ? 2 : 1, out_bytes = 4;  // bf16 or u8 in; f32 or s32 out
    auto* in = bf16 ? static_cast<unsigned char*>(static_cast<void*>(im.x_bf16.data())) : im.x_u8.data();
    auto* out = bf16 ? static_cast<unsigned char*>(static_cast<void*>(y)) : static_cast<unsigned char*>(static_cast<void*>(im.acc.data()));
    for (int row0 = 0; row0 < m; row0 += kChunkRows) {
      const int rows = std::min(kChunkRows, m - row0);
      // The chunk's rows in whole quanta straight into the output; the last few (fewer than a
      // quantum) padded to one quantum through scratch, so every primitive has a row count that is
      // a multiple of kRowQuantum: a handful per layer shape, made once, whatever the batches.
      const int whole = rows / kRowQuantum * kRowQuantum, tail = rows - whole;
      const std::size_t xo = static_cast<std::size_t>(row0) * k, yo = static_cast<std::size_t>(row0) * n;
      if (whole > 0 && !run(whole, in + xo * in_bytes, out + yo * out_bytes)) return Ran{};  // the caller runs float32
      if (tail > 0) {
        const std::size_t q_in = static_cast<std::size_t>(kRowQuantum) * k * in_bytes;
        const std::size_t q_out = static_cast<std::size_t>(kRowQuantum) * n * out_bytes;
        if (im.tail_in.size() < q_in) im.tail_in.resize(q_in);
        if (im.tail_out.size() < q_out) im.tail_out.resize(q_out);
        const std::size_t tail_in = static_cast<std::size_t>(tail) * k * in_bytes;
        std::memcpy(im.tail_in.data(), in + (xo + static_cast<std::size_t>(whole) * k) * in_bytes, tail_in);
        std::memset(im.tail_in.data() + tail_in, 0, q_in - tail_in);  // finite padding rows (zeros)
        if (!run(kRowQuantum, im.tail_in.data(), im.tail_out.data())) return Ran{};
        std::memcpy(out + (yo + static_cast<std::size_t>(whole) * n) * out_bytes, im.tail_out.data(),
                    static_cast<std::size_t>(tail) * n * out_bytes);
      }
    }
    im.stream.wait();
  } catch (const dnnl::error& err) {
    return Internal("oneDNN " + std::string(LinearDTypeName(w->dtype())) + " matmul m=" + std::to_string(m) +
                    " n=" + std::to_string(n) + " k=" + std::to_string(k) + " failed to execute: " + err.what());
  }
  if (!bf16) {
    cpu_lowp::DequantizeRows(im.isa, im.acc.data(), m, n, im.row_scale.data(), im.row_zp.data(), w->col_scale.data(),
                             w->col_sum.data(), bias, y);
  }
  return Ran{true, !bf16 && act != Activation::kNone};
}

}  // namespace dfw::cpu_dnnl
