// The shared GEMM calibration file: its text form, and that a process given a cache path reads a
// plan another process measured instead of measuring again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "backend/cpu/gemm_plan.h"
#include "dfw/backend/registry.h"
#include "test_util.h"

namespace dfw::cpu_gemm {
namespace {

TEST(GemmPlanCache, TextRoundTripsAndAnythingElseIsRefused) {
  GemmPlan p;
  p.threads = 2;
  p.onednn_large = false;
  p.onednn_batched = true;
  p.openblas_large_gflops = 88.9;
  p.onednn_large_gflops = 54.25;
  p.openblas_batched_gflops = 45.7;
  p.onednn_batched_gflops = 65.7;
  p.onednn_small = true;
  p.onednn_small_gflops = 3.5;
  auto back = DecodePlan(EncodePlan(p));
  ASSERT_TRUE(back.has_value()) << EncodePlan(p);
  EXPECT_EQ(back->threads, 2);
  EXPECT_FALSE(back->onednn_large);
  EXPECT_TRUE(back->onednn_batched);
  EXPECT_DOUBLE_EQ(back->onednn_large_gflops, 54.25);
  EXPECT_TRUE(back->onednn_small);
  EXPECT_DOUBLE_EQ(back->onednn_small_gflops, 3.5);
  EXPECT_TRUE(back->from_cache);
  for (const char* bad : {"", "dfw-gemm-plan 2 1 0 1 1 1 1 1", "dfw-gemm-plan 1 1 0 1 1 1 1 1",
                          "dfw-gemm-plan 2 1 0 1 2 1 1 1 1 1 1", "dfw-gemm-plan 1 0 0 1 1 1 1 1", "dfw-gemm-plan 1 1 2 1 1 1 1 1",
                          "dfw-gemm-plan 1 1 0 1 1 1 1", "dfw-gemm-plan 1 1 0 1 1 1 1 1 extra", "other 1 1 0 1 1 1 1 1"}) {
    EXPECT_FALSE(DecodePlan(bad).has_value()) << bad;
  }
}

TEST(GemmPlanCache, APlanInTheCacheIsReadNotMeasured) {
  const dfw::testing::TempDir tmp;
  const std::filesystem::path dir = tmp.path();
  const std::string base = (dir / "gemm_plan").string();
  // A thread count no other test of this binary asks for, so the process has no plan for it yet.
  constexpr int kThreads = 7;
  GemmPlan theirs;
  theirs.threads = kThreads;
  theirs.onednn_large = true;
  theirs.openblas_large_gflops = 12.5;
  theirs.onednn_large_gflops = 123.5;
  std::ofstream(base + "-t7") << EncodePlan(theirs) << "\n";
  SetCpuGemmPlanCache(base);
  const GemmPlan& got = CalibratedPlan(kThreads);
  SetCpuGemmPlanCache("");
  EXPECT_TRUE(got.from_cache);
  EXPECT_TRUE(got.onednn_large);
  EXPECT_DOUBLE_EQ(got.onednn_large_gflops, 123.5);
  EXPECT_NE(got.Describe().find("by another process"), std::string::npos) << got.Describe();
}

TEST(GemmPlan, AnSseEraOpenBlasCoreIsGenericOnlyOnACpuWithAvx2) {
  for (const char* core : {"Prescott", "Nehalem", "Core2", "Penryn", "Atom", "Opteron_SSE3", ""}) {
    EXPECT_TRUE(IsGenericCoreFor(core, true)) << core;
    EXPECT_FALSE(IsGenericCoreFor(core, false)) << core;
  }
  for (const char* core : {"Haswell", "SkylakeX", "Cooperlake", "Zen", "SapphireRapids"}) {
    EXPECT_FALSE(IsGenericCoreFor(core, true)) << core;
  }
}

TEST(GemmPlan, AGenericOpenBlasIsNeverChosen) {
  if (!OpenBlasIsGeneric()) GTEST_SKIP() << "OpenBLAS runs a core of its own for this CPU";
  const GemmPlan& plan = CalibratedPlan(1);
  if (!plan.error.empty()) GTEST_SKIP() << "oneDNN unavailable: " << plan.error;
  EXPECT_TRUE(plan.onednn_large && plan.onednn_batched && plan.onednn_small) << plan.Describe();
  EXPECT_NE(plan.Describe().find("is generic"), std::string::npos) << plan.Describe();
  // Nor timed: its figures stay 0, oneDNN's are measured.
  EXPECT_EQ(plan.openblas_large_gflops, 0.0);
  EXPECT_EQ(plan.openblas_batched_gflops, 0.0);
  EXPECT_EQ(plan.openblas_small_gflops, 0.0);
  EXPECT_GT(plan.onednn_large_gflops, 0.0);
  EXPECT_NE(plan.Describe().find("OpenBLAS not timed"), std::string::npos) << plan.Describe();
}

}  // namespace
}  // namespace dfw::cpu_gemm
