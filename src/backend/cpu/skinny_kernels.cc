// The decode step's streaming products (dfw/backend/skinny_kernels.h): scalar, AVX2 + FMA and
// AVX-512 versions, the one that runs chosen by the backend's BestIsa (kernels.h).
#include "dfw/backend/skinny_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "kernels.h"

namespace dfw::skinny_kernels {
namespace {

using cpu_kernels::Isa;

// bfloat16 to float (exact: the top 16 bits of a float).
inline float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t F32ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return static_cast<uint16_t>((u >> 16) | ((u & 0xffffu) ? 0x40u : 0u));  // inf / nan
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Rows [j0, j1) of y for rows [r0, r0 + g) of x (g <= kSkinnyGroup). One template per weight type.
template <typename W>
void ScalarRows(const float* x, int g, const W* w, int k, int j0, int j1, float* y, int ldy, const float* bias) {
  for (int j = j0; j < j1; ++j) {
    const W* wr = w + static_cast<std::size_t>(j) * k;
    for (int r = 0; r < g; ++r) {
      const float* xr = x + static_cast<std::size_t>(r) * k;
      float acc = 0;
      for (int i = 0; i < k; ++i) {
        if constexpr (std::is_same_v<W, float>) {
          acc += xr[i] * wr[i];
        } else {
          acc += xr[i] * BFloat16ToFloat(wr[i]);
        }
      }
      y[static_cast<std::size_t>(r) * ldy + j] = acc + (bias != nullptr ? bias[j] : 0.0f);
    }
  }
}

// The vector part's sum plus the elements past the last full vector, [full, k).
template <typename W>
inline float FinishRow(float s, const float* xr, const W* wr, int full, int k) {
  for (int i = full; i < k; ++i) {
    if constexpr (std::is_same_v<W, float>) {
      s += xr[i] * wr[i];
    } else {
      s += xr[i] * BFloat16ToFloat(wr[i]);
    }
  }
  return s;
}

#define DFW_SKINNY_AVX512 __attribute__((target("avx512f")))
#define DFW_SKINNY_AVX2 __attribute__((target("avx2,fma")))

DFW_SKINNY_AVX512 inline __m512 Load16(const float* p) { return _mm512_loadu_ps(p); }
DFW_SKINNY_AVX512 inline __m512 Load16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  // The masked forms (all lanes) rather than the plain ones, whose "undefined" pass-through GCC 12
  // reports as maybe-uninitialized.
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, h), 16));
}

DFW_SKINNY_AVX512 inline float Sum16(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float s = 0;
  for (float x : t) s += x;
  return s;
}

// G rows of x at a time, G a constant so the accumulators stay in registers (GCC 12 keeps a
// runtime-sized array of them on the stack).
template <typename W, int G>
DFW_SKINNY_AVX512 void Avx512Rows(const float* x, const W* w, int k, int j0, int j1, float* y, int ldy, const float* bias) {
  const int full = k / 16 * 16;
  for (int j = j0; j < j1; ++j) {
    const W* wr = w + static_cast<std::size_t>(j) * k;
    __m512 acc[G];
#pragma GCC unroll 8
    for (int r = 0; r < G; ++r) acc[r] = _mm512_setzero_ps();
    for (int i = 0; i < full; i += 16) {
      const __m512 wv = Load16(wr + i);
#pragma GCC unroll 8
      for (int r = 0; r < G; ++r) acc[r] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + static_cast<std::size_t>(r) * k + i), acc[r]);
    }
    const float b = bias != nullptr ? bias[j] : 0.0f;
#pragma GCC unroll 8
    for (int r = 0; r < G; ++r) {
      y[static_cast<std::size_t>(r) * ldy + j] = FinishRow(Sum16(acc[r]), x + static_cast<std::size_t>(r) * k, wr, full, k) + b;
    }
  }
}

DFW_SKINNY_AVX2 inline __m256 Load8(const float* p) { return _mm256_loadu_ps(p); }
DFW_SKINNY_AVX2 inline __m256 Load8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
DFW_SKINNY_AVX2 inline float Sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

template <typename W, int G>
DFW_SKINNY_AVX2 void Avx2Rows(const float* x, const W* w, int k, int j0, int j1, float* y, int ldy, const float* bias) {
  const int full = k / 8 * 8;
  for (int j = j0; j < j1; ++j) {
    const W* wr = w + static_cast<std::size_t>(j) * k;
    __m256 acc[G];
#pragma GCC unroll 8
    for (int r = 0; r < G; ++r) acc[r] = _mm256_setzero_ps();
    for (int i = 0; i < full; i += 8) {
      const __m256 wv = Load8(wr + i);
#pragma GCC unroll 8
      for (int r = 0; r < G; ++r) acc[r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + static_cast<std::size_t>(r) * k + i), acc[r]);
    }
    const float b = bias != nullptr ? bias[j] : 0.0f;
#pragma GCC unroll 8
    for (int r = 0; r < G; ++r) {
      y[static_cast<std::size_t>(r) * ldy + j] = FinishRow(Sum8(acc[r]), x + static_cast<std::size_t>(r) * k, wr, full, k) + b;
    }
  }
}

template <typename W, int G>
void RowsG(Isa isa, const float* x, const W* w, int k, int j0, int j1, float* y, int ldy, const float* bias) {
  switch (isa) {
    case Isa::kAvx512: return Avx512Rows<W, G>(x, w, k, j0, j1, y, ldy, bias);
    case Isa::kAvx2: return Avx2Rows<W, G>(x, w, k, j0, j1, y, ldy, bias);
    case Isa::kScalar: return ScalarRows(x, G, w, k, j0, j1, y, ldy, bias);
  }
}

template <typename W>
void Rows(Isa isa, const float* x, int g, const W* w, int k, int j0, int j1, float* y, int ldy, const float* bias) {
  switch (g) {
    case 1: return RowsG<W, 1>(isa, x, w, k, j0, j1, y, ldy, bias);
    case 2: return RowsG<W, 2>(isa, x, w, k, j0, j1, y, ldy, bias);
    case 3: return RowsG<W, 3>(isa, x, w, k, j0, j1, y, ldy, bias);
    case 4: return RowsG<W, 4>(isa, x, w, k, j0, j1, y, ldy, bias);
    case 5: return RowsG<W, 5>(isa, x, w, k, j0, j1, y, ldy, bias);
    case 6: return RowsG<W, 6>(isa, x, w, k, j0, j1, y, ldy, bias);
    case 7: return RowsG<W, 7>(isa, x, w, k, j0, j1, y, ldy, bias);
    default: return RowsG<W, 8>(isa, x, w, k, j0, j1, y, ldy, bias);
  }
}

// One arena per thread count, kept: making one per call would cost more than a small product.
tbb::task_arena& Arena(int threads) {
  thread_local int made_for = 0;
  thread_local std::unique_ptr<tbb::task_arena> arena;
  if (arena == nullptr || made_for != threads) {
    arena = std::make_unique<tbb::task_arena>(threads);
    made_for = threads;
  }
  return *arena;
}

}  // namespace

void MakeSkinnyWeights(const float* w, int n, int k, bool to_bf16, SkinnyWeights& out) {
  out.n = n;
  out.k = k;
  out.f32 = w;
  out.bf16.clear();
  if (to_bf16) {
    out.bf16.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
    for (std::size_t i = 0; i < out.bf16.size(); ++i) out.bf16[i] = F32ToBf16(w[i]);
  }
}

void SkinnyLinear(const float* x, int m, const SkinnyWeights& w, const float* bias, float* y, int threads) {
  const Isa isa = cpu_kernels::BestIsa();
  const int n = w.n, k = w.k;
  auto run = [&](int j0, int j1) {
    for (int r0 = 0; r0 < m; r0 += kSkinnyGroup) {
      const int g = std::min(kSkinnyGroup, m - r0);
      const float* xg = x + static_cast<std::size_t>(r0) * k;
      float* yg = y + static_cast<std::size_t>(r0) * n;
      if (w.bf16.empty()) {
        Rows(isa, xg, g, w.f32, k, j0, j1, yg, n, bias);
      } else {
        Rows(isa, xg, g, w.bf16.data(), k, j0, j1, yg, n, bias);
      }
    }
  };
  // Below ~64k weights a second thread costs more than it saves.
  if (threads <= 1 || static_cast<int64_t>(n) * k < (1 << 16)) {
    run(0, n);
    return;
  }
  const int chunks = threads * 4;
  const int step = (n + chunks - 1) / chunks;
  Arena(threads).execute([&] {
    tbb::parallel_for(tbb::blocked_range<int>(0, chunks, 1), [&](const tbb::blocked_range<int>& r) {
      for (int c = r.begin(); c < r.end(); ++c) {
        const int j0 = c * step, j1 = std::min(n, j0 + step);
        if (j0 < j1) run(j0, j1);
      }
    }, tbb::static_partitioner());
  });
}

void ParallelFor(int n, int threads, const std::function<void(int, int)>& fn) {
  if (threads <= 1 || n <= 1) {
    fn(0, n);
    return;
  }
  Arena(threads).execute([&] {
    tbb::parallel_for(tbb::blocked_range<int>(0, n), [&](const tbb::blocked_range<int>& r) { fn(r.begin(), r.end()); });
  });
}

const char* SkinnyIsa() {
  switch (cpu_kernels::BestIsa()) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kScalar: return "scalar";
  }
  return "scalar";
}

}  // namespace dfw::skinny_kernels
