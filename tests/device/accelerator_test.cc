#include "dfw/device/accelerator.h"
#include "test_util.h"

#include <gtest/gtest.h>

namespace dfw::device {
namespace {

using dfw::testing::kGiB;

class FakeGpuProbe : public GpuProbe {
 public:
  explicit FakeGpuProbe(Result<std::vector<GpuInfo>> gpus) : gpus_(std::move(gpus)) {}
  Result<std::vector<GpuInfo>> ListGpus() override { return gpus_; }
  Result<GpuMemoryUsage> MemoryUsage(int) override { return Unavailable("fake"); }

 private:
  Result<std::vector<GpuInfo>> gpus_;
};

const DeclaredAccelerator kT4{"nvidia-tesla-t4", 15 * kGiB, 7, 5};
const GpuInfo kH200{0, "NVIDIA H200", 141 * kGiB, 9, 0};

struct Case {
  const char* name;
  AcceleratorBackend backend;
  bool gpu_visible;
  bool backend_loads;
  bool declared;
  std::optional<Accelerator::Kind> want;  // nullopt = error
  StatusCode error = StatusCode::kOk;
};

TEST(SelectAccelerator, FollowsTheSelectionTable) {
  using K = Accelerator::Kind;
  using B = AcceleratorBackend;
  const Case cases[] = {
      {"auto with a GPU", B::kAuto, true, true, true, K::kCuda},
      {"auto, GPU but no backend library", B::kAuto, true, false, true, K::kEmulated},
      {"auto, no GPU, declared", B::kAuto, false, true, true, K::kEmulated},
      {"auto, no GPU, nothing declared", B::kAuto, false, false, false, K::kNone},
      {"cuda with a GPU", B::kCuda, true, true, false, K::kCuda},
      {"cuda without a GPU", B::kCuda, false, true, true, std::nullopt, StatusCode::kUnavailable},
      {"cuda without the library", B::kCuda, true, false, true, std::nullopt, StatusCode::kUnavailable},
      {"emulated with a GPU present", B::kEmulated, true, true, true, K::kEmulated},
      {"emulated, nothing declared", B::kEmulated, false, false, false, std::nullopt, StatusCode::kFailedPrecondition},
  };
  for (const Case& c : cases) {
    FakeGpuProbe probe(c.gpu_visible ? Result<std::vector<GpuInfo>>(std::vector<GpuInfo>{kH200})
                                     : Result<std::vector<GpuInfo>>(Unavailable("no NVIDIA driver")));
    Status backend = c.backend_loads ? Status::OK() : Unavailable("libdfw_backend_cuda.so not found");
    std::optional<DeclaredAccelerator> declared;
    if (c.declared) declared = kT4;
    Result<Accelerator> a = SelectAccelerator(c.backend, declared, probe, backend);
    if (!c.want) {
      ASSERT_FALSE(a.ok()) << c.name;
      EXPECT_EQ(a.status().code(), c.error) << c.name << ": " << a.status().ToString();
      continue;
    }
    ASSERT_TRUE(a.ok()) << c.name << ": " << a.status().ToString();
    EXPECT_EQ(a->kind, *c.want) << c.name;
    if (a->kind == K::kCuda) {
      EXPECT_EQ(a->name, "NVIDIA H200");
      EXPECT_EQ(a->capacity_bytes, 141 * kGiB);
      EXPECT_EQ(a->max_mps_clients(), 48);
    }
    if (a->kind == K::kEmulated) {
      EXPECT_EQ(a->name, "nvidia-tesla-t4 (emulated)");
      EXPECT_EQ(a->capacity_bytes, 15 * kGiB);
      EXPECT_EQ(a->cc_major, 7);
      EXPECT_EQ(c.backend == B::kAuto, !a->fallback_reason.empty()) << c.name;
    }
  }
}

TEST(SelectAccelerator, AutoFallbackNamesTheReason) {
  FakeGpuProbe probe(Unavailable("no NVIDIA driver: cannot load libcuda.so.1"));
  Result<Accelerator> a = SelectAccelerator(AcceleratorBackend::kAuto, kT4, probe, Status::OK());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->fallback_reason, "no NVIDIA driver: cannot load libcuda.so.1");
  FakeGpuProbe empty(std::vector<GpuInfo>{});
  EXPECT_EQ(SelectAccelerator(AcceleratorBackend::kAuto, kT4, empty, Status::OK())->fallback_reason,
            "the NVIDIA driver reports no GPU");
}

TEST(SelectAccelerator, PreVoltaEmulationTakesSixteenMpsClients) {
  FakeGpuProbe probe(Unavailable("none"));
  DeclaredAccelerator p100{"nvidia-tesla-p100", 16 * kGiB, 6, 0};
  EXPECT_EQ(SelectAccelerator(AcceleratorBackend::kEmulated, p100, probe, Status::OK())->max_mps_clients(), 16);
  p100.memory_bytes = 0;
  EXPECT_EQ(SelectAccelerator(AcceleratorBackend::kEmulated, p100, probe, Status::OK()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ParseAcceleratorBackend, AcceptsTheThreeNamesOnly) {
  EXPECT_EQ(*ParseAcceleratorBackend("auto"), AcceleratorBackend::kAuto);
  EXPECT_EQ(*ParseAcceleratorBackend("cuda"), AcceleratorBackend::kCuda);
  EXPECT_EQ(*ParseAcceleratorBackend("emulated"), AcceleratorBackend::kEmulated);
  Result<AcceleratorBackend> bad = ParseAcceleratorBackend("cudaa");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean 'cuda'"), std::string::npos) << bad.status().message();
}

TEST(SystemGpuProbe, ReportsNoDriverAsUnavailableWithoutCrashing) {
  // On a machine with a GPU this lists it; without a driver it must say why, not abort.
  std::unique_ptr<GpuProbe> probe = MakeSystemGpuProbe();
  Result<std::vector<GpuInfo>> gpus = probe->ListGpus();
  if (gpus.ok()) {
    for (const GpuInfo& g : *gpus) EXPECT_GT(g.total_bytes, 0u) << g.name;
  } else {
    EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
    EXPECT_FALSE(gpus.status().message().empty());
    EXPECT_FALSE(probe->MemoryUsage(0).ok());
  }
}

}  // namespace
}  // namespace dfw::device
