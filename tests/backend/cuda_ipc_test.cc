// Device memory shared between processes (InferenceBackend::ExportBuffer/ImportBuffer), as model
// hosts share a GPU copy of their weights with SDK processes: a parent uploads a known pattern with
// the CUDA backend and exports the allocation; a fresh process (this test binary, re-executed with a
// filter that runs only the child half) opens the handle, copies the bytes back and compares. The
// child must be a new process image: CUDA cannot be used in a child forked after the parent
// initialised it. Without a CUDA GPU the CUDA half skips with the reason.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "dfw/backend/backend.h"
#include "dfw/backend/registry.h"
#include "dfw/common/strings.h"

namespace dfw {
namespace {

constexpr const char* kHandleEnv = "DFW_TEST_CUDA_IPC_HANDLE";
constexpr std::size_t kFloats = 1 << 18;  // 1 MiB

std::vector<float> Pattern() {
  std::vector<float> v(kFloats);
  for (std::size_t i = 0; i < kFloats; ++i) v[i] = static_cast<float>(i % 4099) * 0.25f - 17.0f;
  return v;
}

TEST(CudaIpc, CpuBackendNeitherExportsNorImports) {
  std::unique_ptr<InferenceBackend> cpu = MakeCpuBackend();
  auto buffer = cpu->Allocate(64);
  ASSERT_TRUE(buffer.ok());
  Result<std::string> handle = cpu->ExportBuffer(**buffer);
  EXPECT_EQ(handle.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(handle.status().message().find("cpu backend"), std::string::npos) << handle.status().message();
  EXPECT_EQ(cpu->ImportBuffer(std::string(64, 'x'), 64).status().code(), StatusCode::kUnimplemented);
}

// The child half: runs only when the parent below set kHandleEnv.
TEST(CudaIpc, ChildOpensTheHandle) {
  const char* hex = std::getenv(kHandleEnv);
  if (hex == nullptr) GTEST_SKIP() << "runs only as the child of ParentExportsChildProcessReadsTheSameBytes";
  auto cuda = CreateBackend("cuda");
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  std::optional<std::string> handle = HexDecode(hex);
  ASSERT_TRUE(handle.has_value());
  EXPECT_EQ((*cuda)->ImportBuffer(handle->substr(1), kFloats * 4).status().code(), StatusCode::kInvalidArgument)
      << "a handle of the wrong size is refused";
  auto opened = (*cuda)->ImportBuffer(*handle, kFloats * sizeof(float));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::vector<float> back(kFloats, 0.f);
  ASSERT_TRUE((*cuda)->CopyToHost(back.data(), (*opened)->data(), kFloats * sizeof(float)).ok());
  EXPECT_EQ(back, Pattern());
}

TEST(CudaIpc, ParentExportsChildProcessReadsTheSameBytes) {
  if (std::getenv(kHandleEnv) != nullptr) GTEST_SKIP() << "the child process runs ChildOpensTheHandle only";
  auto cuda = CreateBackend("cuda");
  if (!cuda.ok()) GTEST_SKIP() << "backend 'cuda' unavailable: " << cuda.status().ToString();
  const std::vector<float> pattern = Pattern();
  auto weights = (*cuda)->UploadWeights(pattern.data(), pattern.size() * sizeof(float));
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  Result<std::string> handle = (*cuda)->ExportBuffer(**weights);
  ASSERT_TRUE(handle.ok()) << handle.status().ToString();
  ASSERT_FALSE(handle->empty());

  const std::string env = std::string(kHandleEnv) + "=" + HexEncode(*handle);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::putenv(const_cast<char*>(env.c_str()));
    const char* argv[] = {"/proc/self/exe", "--gtest_filter=CudaIpc.ChildOpensTheHandle", nullptr};
    ::execv("/proc/self/exe", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child could not open the handle or read different bytes (its output is above)";
}

}  // namespace
}  // namespace dfw
