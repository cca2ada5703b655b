// DFW_CUDA_UNAVAILABLE: `dfworker run` tells its processes that the plan has no usable GPU, and
// CreateBackend("cuda") answers without probing (no library load, no driver call).
#include <gtest/gtest.h>
#include <stdlib.h>

#include "dfw/backend/registry.h"

namespace dfw {
namespace {

TEST(CudaUnavailableEnv, AnswersUnavailableWithTheReasonWithoutTryingTheLibrary) {
  // A library path that would fail differently ("does not export ...") if it were tried.
  ::setenv("DFW_CUDA_BACKEND_PATH", "libopenblas.so.0", 1);
  ::setenv(kCudaUnavailableEnv, "no accelerator is declared for this worker", 1);
  auto cuda = CreateBackend("cuda");
  ::unsetenv(kCudaUnavailableEnv);
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(cuda.status().message(), "CUDA backend not used: no accelerator is declared for this worker");
  // An empty value is no reason: the library is tried as usual.
  ::setenv(kCudaUnavailableEnv, "", 1);
  auto tried = CreateBackend("cuda");
  ::unsetenv(kCudaUnavailableEnv);
  ::unsetenv("DFW_CUDA_BACKEND_PATH");
  ASSERT_FALSE(tried.ok());
  EXPECT_NE(tried.status().message().find("does not export"), std::string::npos) << tried.status().message();
}

TEST(CudaUnavailableEnv, LeavesTheCpuBackendAlone) {
  ::setenv(kCudaUnavailableEnv, "no GPU", 1);
  auto cpu = CreateBackend("cpu");
  ::unsetenv(kCudaUnavailableEnv);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((*cpu)->name(), "cpu");
}

}  // namespace
}  // namespace dfw
