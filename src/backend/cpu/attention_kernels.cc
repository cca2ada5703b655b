// AVX-512 kernels for attention's batched products; see attention_kernels.h. The tile loops are
// unrolled (pragmas) so that the accumulators stay in registers: GCC 12 otherwise keeps them in a
// stack array and each FMA waits on a store.
#include "attention_kernels.h"

#include <algorithm>
#include <cstring>

#include "fast_math.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define DFW_AVX512 __attribute__((target("avx512f")))
#endif

namespace dfw::cpu_attention {

bool ScoresFit(bool trans_a, bool trans_b, int k, float beta) {
  return !trans_a && trans_b && k >= 1 && k <= kMaxHeadDim && beta == 0.f;
}
bool ContextFit(bool trans_a, bool trans_b, int n, float beta) {
  return !trans_a && !trans_b && n >= 1 && n <= kMaxHeadDim && beta == 0.f;
}

#ifdef DFW_AVX512
namespace {

DFW_AVX512 inline __mmask16 TailMask(int cols) {
  return cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << cols) - 1u);
}

// R rows of C, 64 columns from j0 (kt: k x ld_kt, zero-padded to a multiple of 16 columns).
template <int R>
DFW_AVX512 void ScoresTile(const float* a, int lda, const float* kt, int ld_kt, int k, float alpha, float* c, int ldc,
                           int j0, int n) {
  __m512 acc[R][4];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 16
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  const int vecs = std::min(4, (n - j0 + 15) / 16);
  for (int d = 0; d < k; ++d) {
    const float* row = kt + static_cast<std::size_t>(d) * ld_kt + j0;
    __m512 kv[4];
    #pragma GCC unroll 16
    for (int v = 0; v < 4; ++v) kv[v] = v < vecs ? _mm512_loadu_ps(row + 16 * v) : _mm512_setzero_ps();
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 q = _mm512_set1_ps(a[static_cast<std::size_t>(r) * lda + d]);
      #pragma GCC unroll 16
      for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_fmadd_ps(q, kv[v], acc[r][v]);
    }
  }
  const __m512 s = _mm512_set1_ps(alpha);
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float* out = c + static_cast<std::size_t>(r) * ldc + j0;
    #pragma GCC unroll 16
    for (int v = 0; v < vecs; ++v) {
      _mm512_mask_storeu_ps(out + 16 * v, TailMask(n - j0 - 16 * v), _mm512_mul_ps(acc[r][v], s));
    }
  }
}

DFW_AVX512 void ScoresOne(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int m, int n, int k,
                          float alpha, std::vector<float>& kt) {
  const int ld_kt = (n + 15) / 16 * 16 + 64;  // room for a whole 4-vector tile past the last column
  kt.assign(static_cast<std::size_t>(k) * ld_kt, 0.f);
  for (int j = 0; j < n; ++j) {
    const float* brow = b + static_cast<std::size_t>(j) * ldb;
    for (int d = 0; d < k; ++d) kt[static_cast<std::size_t>(d) * ld_kt + j] = brow[d];
  }
  for (int j0 = 0; j0 < n; j0 += 64) {
    int i = 0;
    for (; i + 4 <= m; i += 4) {
      ScoresTile<4>(a + static_cast<std::size_t>(i) * lda, lda, kt.data(), ld_kt, k, alpha,
                    c + static_cast<std::size_t>(i) * ldc, ldc, j0, n);
    }
    for (; i < m; ++i) {
      ScoresTile<1>(a + static_cast<std::size_t>(i) * lda, lda, kt.data(), ld_kt, k, alpha,
                    c + static_cast<std::size_t>(i) * ldc, ldc, j0, n);
    }
  }
}

// R rows of C (n <= 64 columns: NV vectors).
template <int R, int NV>
DFW_AVX512 void ContextTile(const float* a, int lda, const float* b, int ldb, int k, float alpha, float* c, int ldc,
                            int n) {
  __m512 acc[R][NV];
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  __mmask16 mask[NV];
  #pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) mask[v] = TailMask(n - 16 * v);
  for (int j = 0; j < k; ++j) {
    const float* brow = b + static_cast<std::size_t>(j) * ldb;
    __m512 bv[NV];
    #pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_maskz_loadu_ps(mask[v], brow + 16 * v);
    #pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 p = _mm512_set1_ps(a[static_cast<std::size_t>(r) * lda + j]);
      #pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(p, bv[v], acc[r][v]);
    }
  }
  const __m512 s = _mm512_set1_ps(alpha);
  #pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      _mm512_mask_storeu_ps(c + static_cast<std::size_t>(r) * ldc + 16 * v, TailMask(n - 16 * v),
                            _mm512_mul_ps(acc[r][v], s));
    }
  }
}

// Rows per tile: 16 accumulators (FMA latency x ports) whatever the head width.
template <int NV>
DFW_AVX512 void ContextOne(const float* a, int lda, const float* b, int ldb, float* c, int ldc, int m, int n, int k,
                           float alpha) {
  constexpr int kRows = NV <= 2 ? 8 : 4;
  int i = 0;
  for (; i + kRows <= m; i += kRows) {
    ContextTile<kRows, NV>(a + static_cast<std::size_t>(i) * lda, lda, b, ldb, k, alpha,
                           c + static_cast<std::size_t>(i) * ldc, ldc, n);
  }
  for (; i + 4 <= m; i += 4) {
    ContextTile<4, NV>(a + static_cast<std::size_t>(i) * lda, lda, b, ldb, k, alpha, c + static_cast<std::size_t>(i) * ldc,
                       ldc, n);
  }
  for (; i < m; ++i) {
    ContextTile<1, NV>(a + static_cast<std::size_t>(i) * lda, lda, b, ldb, k, alpha, c + static_cast<std::size_t>(i) * ldc,
                       ldc, n);
  }
}

}  // namespace

void ScoresQkT(const Batched& p, std::vector<float>& scratch) {
  const cpu_math::FlushDenormalsScope ftz;
  for (int bi = 0; bi < p.batch; ++bi) {
    for (int h = 0; h < p.heads; ++h) {
      ScoresOne(p.a + bi * p.stride_a + h * p.head_stride_a, p.lda, p.b + bi * p.stride_b + h * p.head_stride_b, p.ldb,
                p.c + bi * p.stride_c + h * p.head_stride_c, p.ldc, p.m, p.n, p.k, p.alpha, scratch);
    }
  }
}

void ContextPv(const Batched& p, std::vector<float>& scratch) {
  const cpu_math::FlushDenormalsScope ftz;
  const int nv = (p.n + 15) / 16, ldv = 16 * nv;
  scratch.resize(static_cast<std::size_t>(p.k) * ldv);
  for (int bi = 0; bi < p.batch; ++bi) {
    for (int h = 0; h < p.heads; ++h) {
      const float* a = p.a + bi * p.stride_a + h * p.head_stride_a;
      const float* b = p.b + bi * p.stride_b + h * p.head_stride_b;
      float* c = p.c + bi * p.stride_c + h * p.head_stride_c;
      // V's rows are a fused-QKV row apart (4.5 KiB for MiniLM): read in place, the tiles thrash a
      // few L1 sets and the TLB; packed, they stay in L1.
      for (int j = 0; j < p.k; ++j) {
        std::memcpy(scratch.data() + static_cast<std::size_t>(j) * ldv, b + static_cast<std::size_t>(j) * p.ldb,
                    sizeof(float) * p.n);
      }
      const float* v = scratch.data();
      switch (nv) {
        case 1: ContextOne<1>(a, p.lda, v, ldv, c, p.ldc, p.m, p.n, p.k, p.alpha); break;
        case 2: ContextOne<2>(a, p.lda, v, ldv, c, p.ldc, p.m, p.n, p.k, p.alpha); break;
        case 3: ContextOne<3>(a, p.lda, v, ldv, c, p.ldc, p.m, p.n, p.k, p.alpha); break;
        default: ContextOne<4>(a, p.lda, v, ldv, c, p.ldc, p.m, p.n, p.k, p.alpha); break;
      }
    }
  }
}
#else
void ScoresQkT(const Batched&, std::vector<float>&) {}
void ContextPv(const Batched&, std::vector<float>&) {}
#endif

}  // namespace dfw::cpu_attention
