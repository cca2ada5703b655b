// OpenBLAS is loaded on first use (src/backend/cpu/openblas_api.h): checked in a fresh process (a
// death test in the "threadsafe" style re-runs this binary for the one test), whose mapped
// objects say whether the library is there.
#include <gtest/gtest.h>
#include <link.h>

#include <cstdlib>
#include <cstring>

#include "dfw/backend/registry.h"
#include "backend/cpu/openblas_api.h"

namespace dfw {
namespace {

bool OpenBlasMapped() {
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "openblas") != nullptr) {
          *static_cast<bool*>(data) = true;
        }
        return 0;
      },
      &found);
  return found;
}

// Exit codes name the first check that failed.
[[noreturn]] void LoadOnFirstUse() {
  if (OpenBlasMapped() || cpu_blas::Loaded()) std::_Exit(10);  // mapped at start-up
  if (!SetBlasThreads(1).ok()) std::_Exit(11);
  if (OpenBlasMapped() || cpu_blas::Loaded()) std::_Exit(12);  // setting the pool size loads nothing
  if (BlasThreads() != 1) std::_Exit(13);                      // the remembered size, applied at the load
  if (!OpenBlasMapped() || !cpu_blas::Loaded()) std::_Exit(14);
  Result<const cpu_blas::OpenBlasApi*> api = cpu_blas::OpenBlas();
  if (!api.ok()) std::_Exit(15);
  // A product through the resolved cblas_sgemm: [1 2; 3 4] x [5; 6] = [17; 39].
  const float a[4] = {1, 2, 3, 4}, b[2] = {5, 6};
  float c[2] = {0, 0};
  (*api)->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 1, 2, 1.f, a, 2, b, 1, 0.f, c, 1);
  if (c[0] != 17.f || c[1] != 39.f) std::_Exit(16);
  if (!SetBlasThreads(2).ok() || BlasThreads() != 2) std::_Exit(17);  // after the load: applied at once
  std::_Exit(0);
}

TEST(OpenBlasApi, LoadsOnFirstUseAndAppliesTheRememberedPoolSize) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(LoadOnFirstUse(), ::testing::ExitedWithCode(0), "");
}

TEST(OpenBlasApi, CalledTwiceGivesTheSameApi) {
  Result<const cpu_blas::OpenBlasApi*> a = cpu_blas::OpenBlas(), b = cpu_blas::OpenBlas();
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE((*a)->get_corename(), nullptr);
  EXPECT_TRUE(cpu_blas::Loaded());
}

}  // namespace
}  // namespace dfw
