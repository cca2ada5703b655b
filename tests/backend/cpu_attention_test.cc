// The AVX-512 attention kernels (attention_kernels.h) against the OpenBLAS reference on the
// encoder's layouts: Q·Kᵀ and P·V over batch x heads, strided in a fused QKV buffer, with row and
// column tails; and that the default path takes them with one BLAS thread.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/attention_kernels.h"
#include "dfw/backend/cpu_isa.h"
#include "dfw/backend/registry.h"

namespace dfw {
namespace cpu_attention_test {

std::vector<float> Random(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

struct Shape {
  int batch, heads, seq, dh;
};

TEST(CpuAttentionKernels, ScoresAndContextMatchOpenBlas) {
  if (!DetectCpuIsa().avx512f) GTEST_SKIP() << "this CPU has no AVX-512F";
  auto reference = MakeCpuBackend(CpuGemmPath::kOpenBlas);
  for (const Shape& s : {Shape{2, 3, 5, 32}, Shape{3, 12, 75, 32}, Shape{1, 2, 130, 64}, Shape{2, 1, 17, 20},
                         Shape{1, 1, 1, 1}}) {
    SCOPED_TRACE(std::to_string(s.batch) + "x" + std::to_string(s.heads) + " seq " + std::to_string(s.seq) + " dh " +
                 std::to_string(s.dh));
    const int h = s.heads * s.dh, h3 = 3 * h;
    const int64_t seq_stride = int64_t{s.seq} * h3, head_score = int64_t{s.seq} * s.seq;
    const int64_t score_stride = head_score * s.heads;
    const std::vector<float> qkv = Random(std::size_t(s.batch) * s.seq * h3, 1);
    std::vector<float> want(std::size_t(score_stride) * s.batch), got(want.size(), 7.f);
    ASSERT_TRUE(reference->GemmHeadsBatched(false, true, s.seq, s.seq, s.dh, 0.5f, qkv.data(), h3, seq_stride, s.dh,
                                            qkv.data() + h, h3, seq_stride, s.dh, 0.f, want.data(), s.seq, score_stride,
                                            head_score, s.batch, s.heads)
                    .ok());
    std::vector<float> scratch;
    cpu_attention::ScoresQkT({s.seq, s.seq, s.dh, 0.5f, qkv.data(), h3, seq_stride, s.dh, qkv.data() + h, h3, seq_stride,
                              s.dh, got.data(), s.seq, score_stride, head_score, s.batch, s.heads},
                             scratch);
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << i;
    // Context: P [seq x seq] per head times the V slice, into [tokens x h] with heads dh apart.
    const std::vector<float> p = Random(want.size(), 2);
    std::vector<float> ctx_want(std::size_t(s.batch) * s.seq * h), ctx_got(ctx_want.size(), 7.f);
    const int64_t ctx_stride = int64_t{s.seq} * h;
    ASSERT_TRUE(reference->GemmHeadsBatched(false, false, s.seq, s.dh, s.seq, 1.f, p.data(), s.seq, score_stride,
                                            head_score, qkv.data() + 2 * h, h3, seq_stride, s.dh, 0.f, ctx_want.data(), h,
                                            ctx_stride, s.dh, s.batch, s.heads)
                    .ok());
    cpu_attention::ContextPv({s.seq, s.dh, s.seq, 1.f, p.data(), s.seq, score_stride, head_score, qkv.data() + 2 * h, h3,
                              seq_stride, s.dh, ctx_got.data(), h, ctx_stride, s.dh, s.batch, s.heads},
                             scratch);
    for (std::size_t i = 0; i < ctx_want.size(); ++i) {
      ASSERT_NEAR(ctx_got[i], ctx_want[i], 1e-4f * (1 + std::fabs(ctx_want[i]))) << i;
    }
  }
}

TEST(CpuAttentionKernels, TakeOnlyWhatTheyImplement) {
  EXPECT_TRUE(cpu_attention::ScoresFit(false, true, 32, 0.f));
  EXPECT_FALSE(cpu_attention::ScoresFit(false, true, 65, 0.f));  // a head wider than 64
  EXPECT_FALSE(cpu_attention::ScoresFit(false, true, 32, 1.f));  // accumulating into C
  EXPECT_FALSE(cpu_attention::ScoresFit(true, true, 32, 0.f));
  EXPECT_TRUE(cpu_attention::ContextFit(false, false, 64, 0.f));
  EXPECT_FALSE(cpu_attention::ContextFit(false, false, 65, 0.f));
  EXPECT_FALSE(cpu_attention::ContextFit(false, true, 32, 0.f));
}

TEST(CpuAttentionKernels, TheDefaultPathWithOneThreadMatchesTheReference) {
  if (!DetectCpuIsa().avx512f) GTEST_SKIP() << "this CPU has no AVX-512F";
  const int before = BlasThreads();
  ASSERT_TRUE(SetBlasThreads(1).ok());
  auto backend = MakeCpuBackend();
  auto reference = MakeCpuBackend(CpuGemmPath::kOpenBlas);
  const int seq = 33, dh = 32, heads = 4, batch = 2, h = heads * dh, h3 = 3 * h;
  const std::vector<float> qkv = Random(std::size_t(batch) * seq * h3, 3);
  const int64_t ss = int64_t{seq} * h3, hs = int64_t{seq} * seq, bs = hs * heads;
  std::vector<float> want(std::size_t(bs) * batch), got(want.size());
  for (auto* be : {reference.get(), backend.get()}) {
    ASSERT_TRUE(be->GemmHeadsBatched(false, true, seq, seq, dh, 1.f, qkv.data(), h3, ss, dh, qkv.data() + h, h3, ss, dh,
                                     0.f, be == backend.get() ? got.data() : want.data(), seq, bs, hs, batch, heads)
                    .ok());
  }
  ASSERT_TRUE(SetBlasThreads(before).ok());
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << i;
}

}  // namespace cpu_attention_test
}  // namespace dfw
