// oneDNN matmul primitives for the CPU backend; see dnnl_gemm.h for the contract.
#include "dnnl_gemm.h"

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>

namespace dfw::cpu_dnnl {
namespace {

using dnnl::memory;
using Dims = memory::dims;

// Debian builds oneDNN with OpenMP; its team size is the calling thread's omp_set_num_threads.
// The OpenMP runtime is looked up in the process (the one libdnnl itself loaded: libgomp), rather
// than linked, so that a clang build never pulls in a second OpenMP runtime (libomp) beside it.
struct OmpThreads {
  using Set = void (*)(int);
  using Get = int (*)();
  Set set = nullptr;
  Get get = nullptr;
  OmpThreads() {
    set = reinterpret_cast<Set>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    get = reinterpret_cast<Get>(::dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  }
  void Apply(int threads) const {
    if (set == nullptr || get == nullptr || threads < 1) return;
    if (get() != threads) set(threads);  // per calling thread; cheap when already right
  }
};

const OmpThreads& Omp() {
  static const OmpThreads omp;
  return omp;
}

std::optional<dnnl::algorithm> EltwiseFor(Activation act) {
  switch (act) {
    case Activation::kNone:
      return std::nullopt;
    case Activation::kRelu:
      return dnnl::algorithm::eltwise_relu;
    case Activation::kGelu:
      return dnnl::algorithm::eltwise_gelu_erf;
    case Activation::kGeluTanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::kTanh:
      return dnnl::algorithm::eltwise_tanh;
    case Activation::kSigmoid:
      return dnnl::algorithm::eltwise_logistic;
  }
  return std::nullopt;
}

}  // namespace

// Everything a primitive depends on. Row-major: A is op(A) [m x k] stored with row stride lda
// (transposed: stored [k x m]); batch = 0 is a plain 2-D GEMM, heads = 0 a 3-D batched one.
struct DnnlGemm::Key {
  int m = 0, n = 0, k = 0, batch = 0, heads = 0;
  int lda = 0, ldb = 0, ldc = 0;
  int64_t sa = 0, sb = 0, sc = 0;     // batch strides
  int64_t sha = 0, shb = 0, shc = 0;  // head strides
  bool ta = false, tb = false, bias = false;
  bool blocked = false;  // B in the layout BlockWeights made for [k x n] (format "any")
  Activation act = Activation::kNone;
  float alpha = 1.f, beta = 0.f;
  bool operator==(const Key&) const = default;
};

// (Not in an anonymous namespace: DnnlGemm::Impl, a class with linkage, holds them.)
struct KeyHash {
  std::size_t operator()(const DnnlGemm::Key& k) const {
    std::size_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (int64_t v : {int64_t{k.m}, int64_t{k.n}, int64_t{k.k}, int64_t{k.batch}, int64_t{k.heads}, int64_t{k.lda},
                      int64_t{k.ldb}, int64_t{k.ldc}, k.sa, k.sb, k.sc, k.sha, k.shb, k.shc}) {
      mix(static_cast<uint64_t>(v));
    }
    mix((k.ta ? 1u : 0u) | (k.tb ? 2u : 0u) | (k.bias ? 4u : 0u) | (k.blocked ? 8u : 0u) |
        (static_cast<unsigned>(k.act) << 4));
    mix(std::hash<float>()(k.alpha));
    mix(std::hash<float>()(k.beta));
    return h;
  }
};

struct BlockedWeights::Impl {
  int n = 0, k = 0;
  memory::desc desc;  // the blocked layout of B [k x n]
  memory weights;     // its buffer, allocated by oneDNN (the memory object holds its engine)
  std::size_t bytes = 0;
};

BlockedWeights::BlockedWeights(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlockedWeights::~BlockedWeights() = default;
int BlockedWeights::n() const { return impl_->n; }
int BlockedWeights::k() const { return impl_->k; }
std::size_t BlockedWeights::bytes() const { return impl_->bytes; }

// A created primitive and its memory objects (re-pointed at each call's buffers).
struct Entry {
  DnnlGemm::Key key;
  dnnl::matmul primitive;  // empty when oneDNN refused this key or it was a layout miss
  memory src, wei, bias, dst;
  std::unordered_map<int, memory> args;  // the execute() arguments, built once (memory objects are handles)
};

struct DnnlGemm::Impl {
  DnnlGemmOptions options;
  dnnl::engine engine;
  dnnl::stream stream;
  std::list<Entry> lru;  // most recently used first
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index;
  bool warned = false;  // the first refusal is logged, later ones are not

  // Builds the primitive for `key`; throws dnnl::error when oneDNN refuses. False (nothing built)
  // when key.blocked and the primitive wants another weights layout than `blocked`'s.
  bool Create(Entry& e, const BlockedWeights* blocked) const {
    const Key& k = e.key;
    auto md = [&](int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, int64_t batch_stride,
                  int64_t head_stride) {
      constexpr auto f32 = memory::data_type::f32;
      if (k.heads > 0) {
        return memory::desc(Dims{k.batch, k.heads, rows, cols}, f32,
                            Dims{batch_stride, head_stride, row_stride, col_stride});
      }
      if (k.batch > 0) return memory::desc(Dims{k.batch, rows, cols}, f32, Dims{batch_stride, row_stride, col_stride});
      return memory::desc(Dims{rows, cols}, f32, Dims{row_stride, col_stride});
    };
    // op(A) is [m x k]: stored [m x k] (strides lda, 1) or transposed [k x m] (strides 1, lda).
    const memory::desc a = k.ta ? md(k.m, k.k, 1, k.lda, k.sa, k.sha) : md(k.m, k.k, k.lda, 1, k.sa, k.sha);
    const memory::desc b = k.blocked ? memory::desc(Dims{k.k, k.n}, memory::data_type::f32, memory::format_tag::any)
                           : k.tb    ? md(k.k, k.n, 1, k.ldb, k.sb, k.shb)
                                     : md(k.k, k.n, k.ldb, 1, k.sb, k.shb);
    const memory::desc c = md(k.m, k.n, k.ldc, 1, k.sc, k.shc);
    const memory::desc bias = k.bias ? md(1, k.n, k.n, 1, k.n, k.n) : memory::desc();
    dnnl::primitive_attr attr;
    if (k.alpha != 1.f) attr.set_output_scales(0, {k.alpha});
    dnnl::post_ops ops;
    if (k.beta != 0.f) ops.append_sum(k.beta);
    if (const auto alg = EltwiseFor(k.act)) ops.append_eltwise(1.f, *alg, 0.f, 0.f);
    attr.set_post_ops(ops);
    const auto desc = k.bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c);
    const dnnl::matmul::primitive_desc pd(desc, attr, engine);
    if (k.blocked && (blocked == nullptr || pd.weights_desc() != blocked->impl().desc)) return false;
    e.primitive = dnnl::matmul(pd);
    e.src = memory(a, engine, DNNL_MEMORY_NONE);
    e.wei = memory(k.blocked ? pd.weights_desc() : b, engine, DNNL_MEMORY_NONE);
    e.dst = memory(c, engine, DNNL_MEMORY_NONE);
    if (k.bias) e.bias = memory(bias, engine, DNNL_MEMORY_NONE);
    return true;
  }
};

void ApplyOmpThreads(int threads) { Omp().Apply(threads); }

std::string EffectiveIsaName() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::all: break;
  }
  return "isa 0x" + [] {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%x", static_cast<unsigned>(dnnl::get_effective_cpu_isa()));
    return std::string(buf);
  }();
}

std::string LibraryName() {
  const dnnl_version_t* v = dnnl_version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                             : "other runtime";
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
         " (" + runtime + ")";
}

Result<std::unique_ptr<DnnlGemm>> DnnlGemm::Make(DnnlGemmOptions options) {
  if (!options.threads) return InvalidArgument("DnnlGemm: options.threads is required");
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  try {
    impl->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    impl->stream = dnnl::stream(impl->engine);
  } catch (const dnnl::error& e) {
    return Unavailable(std::string("oneDNN has no CPU engine: ") + e.what());
  }
  return std::unique_ptr<DnnlGemm>(new DnnlGemm(std::move(impl)));
}

DnnlGemm::DnnlGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DnnlGemm::~DnnlGemm() = default;

Result<bool> DnnlGemm::Run(const Key& key, const void* a, const void* b, const void* bias, void* c,
                           const BlockedWeights* blocked) {
  Impl& im = *impl_;
  Entry* e = nullptr;
  if (auto it = im.index.find(key); it != im.index.end()) {
    im.lru.splice(im.lru.begin(), im.lru, it->second);  // iterators stay valid
    e = &*it->second;
  } else {
    if (im.lru.size() >= im.options.max_primitives && !im.lru.empty()) {
      im.index.erase(im.lru.back().key);
      im.lru.pop_back();
    }
    im.lru.push_front(Entry{key, {}, {}, {}, {}, {}, {}});
    im.index.emplace(key, im.lru.begin());
    e = &im.lru.front();
    std::string why;
    if (im.options.refuse_create_for_testing && im.options.refuse_create_for_testing()) {
      why = "refused for testing";
    } else {
      try {
        if (im.Create(*e, blocked)) {
          ++created_;
        } else {
          ++layout_misses_;  // the caller runs nn.Linear's weights; not a refusal, not logged
        }
      } catch (const dnnl::error& err) {
        why = err.what();
      }
    }
    if (!why.empty()) {
      ++refused_;
      e->primitive = dnnl::matmul();
      if (!std::exchange(im.warned, true)) {
        spdlog::warn(
            "oneDNN could not create a matmul for m={} n={} k={} batch={} (trans_a={}, trans_b={}): {}; OpenBLAS "
            "runs this shape (further refusals are not logged)",
            key.m, key.n, key.k, key.batch, key.ta, key.tb, why);
      }
    }
  }
  if (!e->primitive) return false;
  Omp().Apply(im.options.threads());
  try {
    e->src.set_data_handle(const_cast<void*>(a));
    e->wei.set_data_handle(const_cast<void*>(b));
    e->dst.set_data_handle(c);
    if (key.bias) e->bias.set_data_handle(const_cast<void*>(bias));
    if (e->args.empty()) {  // once per entry: no map allocation per GEMM
      e->args = {{DNNL_ARG_SRC, e->src}, {DNNL_ARG_WEIGHTS, e->wei}, {DNNL_ARG_DST, e->dst}};
      if (key.bias) e->args.emplace(DNNL_ARG_BIAS, e->bias);
    }
    e->primitive.execute(im.stream, e->args);
    im.stream.wait();
  } catch (const dnnl::error& err) {
    return Internal(std::string("oneDNN matmul m=") + std::to_string(key.m) + " n=" + std::to_string(key.n) +
                    " k=" + std::to_string(key.k) + " failed to execute: " + err.what());
  }
  return true;
}

Result<bool> DnnlGemm::Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                            const float* b, int ldb, float beta, float* c, int ldc) {
  Key key;
  key.m = m, key.n = n, key.k = k, key.lda = lda, key.ldb = ldb, key.ldc = ldc;
  key.ta = trans_a, key.tb = trans_b, key.alpha = alpha, key.beta = beta;
  return Run(key, a, b, nullptr, c);
}

Result<bool> DnnlGemm::GemmStridedBatched(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                                          const float* a, int lda, int64_t stride_a, const float* b, int ldb,
                                          int64_t stride_b, float beta, float* c, int ldc, int64_t stride_c,
                                          int batch) {
  Key key;
  key.m = m, key.n = n, key.k = k, key.batch = batch, key.lda = lda, key.ldb = ldb, key.ldc = ldc;
  key.sa = stride_a, key.sb = stride_b, key.sc = stride_c;
  key.ta = trans_a, key.tb = trans_b, key.alpha = alpha, key.beta = beta;
  return Run(key, a, b, nullptr, c);
}

Result<bool> DnnlGemm::GemmHeadsBatched(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                                        int lda, int64_t stride_a, int64_t head_stride_a, const float* b, int ldb,
                                        int64_t stride_b, int64_t head_stride_b, float beta, float* c, int ldc,
                                        int64_t stride_c, int64_t head_stride_c, int batch, int heads) {
  Key key;
  key.m = m, key.n = n, key.k = k, key.batch = batch, key.heads = heads, key.lda = lda, key.ldb = ldb, key.ldc = ldc;
  key.sa = stride_a, key.sb = stride_b, key.sc = stride_c;
  key.sha = head_stride_a, key.shb = head_stride_b, key.shc = head_stride_c;
  key.ta = trans_a, key.tb = trans_b, key.alpha = alpha, key.beta = beta;
  return Run(key, a, b, nullptr, c);
}

Result<bool> DnnlGemm::Linear(const float* x, const float* w, const float* bias, float* y, int m, int n, int k,
                              Activation act, bool weights_kn) {
  // w is [n x k] row-major, i.e. op(B) = wᵀ read in place, or (weights_kn) already [k x n].
  Key key;
  key.m = m, key.n = n, key.k = k, key.lda = k, key.ldb = weights_kn ? n : k, key.ldc = n;
  key.tb = !weights_kn, key.bias = bias != nullptr, key.act = act;
  return Run(key, x, w, bias, y);
}

Result<bool> DnnlGemm::Linear(const float* x, const BlockedWeights& w, const float* bias, float* y, int m,
                              Activation act) {
  Key key;
  key.m = m, key.n = w.n(), key.k = w.k(), key.lda = w.k(), key.ldc = w.n();
  key.blocked = true, key.bias = bias != nullptr, key.act = act;
  return Run(key, x, w.impl().weights.get_data_handle(), bias, y, &w);
}

Result<std::shared_ptr<const BlockedWeights>> DnnlGemm::BlockWeights(const float* w, int n, int k) {
  if (w == nullptr || n < 1 || k < 1) return InvalidArgument("BlockWeights: null or empty weights");
  Impl& im = *impl_;
  constexpr auto f32 = memory::data_type::f32;
  // The layout of a product with bias, as the encoders' (checked on oneDNN 2.6.3 at avx512_core:
  // the same layout for 1 to 2,048 rows, with and without bias); a primitive that wants another
  // makes Linear return false for its shape.
  constexpr int kRows = 256;
  auto impl = std::make_unique<BlockedWeights::Impl>();
  impl->n = n, impl->k = k;
  try {
    const memory::desc a(Dims{kRows, k}, f32, memory::format_tag::ab);
    const memory::desc b(Dims{k, n}, f32, memory::format_tag::any);
    const memory::desc bias(Dims{1, n}, f32, memory::format_tag::ab);
    const memory::desc c(Dims{kRows, n}, f32, memory::format_tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, bias, c), im.engine);
    impl->desc = pd.weights_desc();
  } catch (const dnnl::error&) {
    return std::shared_ptr<const BlockedWeights>();  // no matmul for this shape: nothing to lay out for
  }
  const dnnl_memory_desc_t& d = impl->desc.data;
  const std::size_t plain = sizeof(float) * static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
  impl->bytes = impl->desc.get_size();
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks == 0 || impl->bytes > plain + plain / 8) {
    return std::shared_ptr<const BlockedWeights>();
  }
  Omp().Apply(im.options.threads());
  try {
    // w [n x k] row-major is B = wᵀ [k x n] with strides (1, k).
    memory src(memory::desc(Dims{k, n}, f32, Dims{1, k}), im.engine, const_cast<float*>(w));
    impl->weights = memory(impl->desc, im.engine);
    dnnl::reorder(src, impl->weights).execute(im.stream, src, impl->weights);
    im.stream.wait();
  } catch (const dnnl::error& err) {
    return Internal(std::string("oneDNN could not lay out float32 weights ") + std::to_string(n) + " x " +
                    std::to_string(k) + ": " + err.what());
  }
  return std::shared_ptr<const BlockedWeights>(std::make_shared<BlockedWeights>(std::move(impl)));
}

WeightsLayout LinearWeightsLayout() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
    case dnnl::cpu_isa::avx:
    case dnnl::cpu_isa::avx2:
    case dnnl::cpu_isa::avx2_vnni:
      return WeightsLayout::kKn;
    case dnnl::cpu_isa::avx512_core:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx:
      return WeightsLayout::kBlocked;
    default:
      return WeightsLayout::kNk;
  }
}

}  // namespace dfw::cpu_dnnl
