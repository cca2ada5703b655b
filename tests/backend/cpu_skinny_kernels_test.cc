// The decode step's streaming products (dfw/backend/skinny_kernels.h) against a double-precision
// reference, and their instruction set against the backend's one choice (kernels.h BestIsa).
// CMake runs them again under DFW_CPU_KERNELS=scalar and =avx2.
#include "dfw/backend/skinny_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"

namespace dfw::skinny_kernels {
namespace {

// The streaming kernels against a double-precision reference, for every row-group size and with
// k and n not multiples of the vector width (the tails), float32 and bfloat16 weights, 1 and 2
// threads (the threaded split runs from 64k weights up).
TEST(SkinnyLinear, EqualsTheReferenceProductForEveryShape) {
  for (int threads : {1, 2}) {
    for (bool bf16 : {false, true}) {
      const int n = threads == 1 ? 37 : 1031, k = threads == 1 ? 70 : 83;
      std::vector<float> w(static_cast<std::size_t>(n) * k), bias(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
      for (int j = 0; j < n; ++j) bias[static_cast<std::size_t>(j)] = 0.01f * static_cast<float>(j);
      SkinnyWeights sw;
      MakeSkinnyWeights(w.data(), n, k, bf16, sw);
      EXPECT_EQ(sw.bytes(), static_cast<uint64_t>(n) * k * (bf16 ? 2 : 4));
      for (int m = 1; m <= 11; ++m) {
        std::vector<float> x(static_cast<std::size_t>(m) * k), y(static_cast<std::size_t>(m) * n, -1.0f);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i)));
        SkinnyLinear(x.data(), m, sw, bias.data(), y.data(), threads);
        for (int r = 0; r < m; ++r) {
          for (int j = 0; j < n; ++j) {
            double want = bias[static_cast<std::size_t>(j)];
            for (int i = 0; i < k; ++i) {
              const float wv = w[static_cast<std::size_t>(j) * k + i];
              // bfloat16 weights: the reference uses the rounded weight, so only the sum's order differs.
              uint32_t u;
              std::memcpy(&u, &wv, 4);
              u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
              float rounded;
              std::memcpy(&rounded, &u, 4);
              want += static_cast<double>(x[static_cast<std::size_t>(r) * k + i]) * (bf16 ? rounded : wv);
            }
            ASSERT_NEAR(y[static_cast<std::size_t>(r) * n + j], want, 1e-4)
                << SkinnyIsa() << " m=" << m << " row " << r << " col " << j << " bf16=" << bf16;
          }
        }
      }
    }
  }
}

// One owner of DFW_CPU_KERNELS: the streaming kernels run the instruction set the row kernels run.
TEST(SkinnyLinear, RunsTheBackendsInstructionSet) {
  const std::string want = cpu_kernels::BestIsa() == cpu_kernels::Isa::kAvx512 ? "avx512"
                           : cpu_kernels::BestIsa() == cpu_kernels::Isa::kAvx2  ? "avx2"
                                                                                : "scalar";
  EXPECT_EQ(SkinnyIsa(), want);
}

}  // namespace
}  // namespace dfw::skinny_kernels
