// The tenants run's GPU-memory monitor over a real ledger file (the emulated GPU's source).
#include "tenant_runs/tenants_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace dfw {
namespace tenants_memory_test {

namespace fs = std::filesystem;

class TenantMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("dfw_tmem_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    path_ = (dir_ / "gpu_memory.ledger").string();
    auto ledger = device::MemoryLedger::Create(path_, "nvidia-l4 (emulated)", uint64_t{1} << 30);
    ASSERT_TRUE(ledger.ok()) << ledger.status().message();
    ASSERT_TRUE(ledger->SetTenantBudget("a", 1000).ok());
    ASSERT_TRUE(ledger->SetTenantBudget("b", 100000).ok());
    ledger_.emplace(std::move(*ledger));
  }
  void TearDown() override { fs::remove_all(dir_); }
  TenantMemoryMonitor Monitor() {
    auto source = MakeLedgerMemorySource(path_);
    EXPECT_TRUE(source.ok()) << source.status().message();
    return TenantMemoryMonitor(std::move(*source), {{"a", 1000}, {"b", 100000}});
  }
  fs::path dir_;
  std::string path_;
  std::optional<device::MemoryLedger> ledger_;
};

TEST_F(TenantMemoryTest, SamplesAreAttributedToTenantsWithATimelineAndPeaks) {
  TenantMemoryMonitor m = Monitor();
  m.Sample();  // nothing held yet
  ASSERT_TRUE(ledger_->Allocate({::getpid(), "a/sdk-0", std::nullopt, "a"}, 400).ok());
  m.Sample();
  m.Sample();  // unchanged: no new point
  ASSERT_TRUE(ledger_->Free(::getpid(), 300).ok());
  m.Sample();
  nlohmann::json a = m.TenantJson("a");
  EXPECT_EQ(a["gpu_memory_sampled_peak_bytes"], 400);
  ASSERT_EQ(a["gpu_memory_timeline"].size(), 3u) << a.dump();
  EXPECT_EQ(a["gpu_memory_timeline"][0][1], 0);
  EXPECT_EQ(a["gpu_memory_timeline"][1][1], 400);
  EXPECT_EQ(a["gpu_memory_timeline"][2][1], 100);
  EXPECT_LE(a["gpu_memory_timeline"][1][0].get<double>(), a["gpu_memory_timeline"][2][0].get<double>());
  EXPECT_EQ(a["gpu_memory_process_peaks"]["sdk-0"], 400) << a.dump();
  nlohmann::json b = m.TenantJson("b");
  EXPECT_EQ(b["gpu_memory_sampled_peak_bytes"], 0);
  EXPECT_EQ(b["gpu_memory_timeline"].size(), 1u) << "b never held anything: one point";
  EXPECT_EQ(m.SamplingJson()["samples"], 4);
  EXPECT_FALSE(m.warned("a"));
  const std::string prom = m.Prometheus({{"dfworker_tenant_processes_borrowed", "lent", {{"a", 2}}}});
  EXPECT_NE(prom.find("dfworker_tenant_gpu_memory_peak_bytes{tenant=\"a\"} 400"), std::string::npos) << prom;
  EXPECT_NE(prom.find("dfworker_tenant_gpu_memory_budget_bytes{tenant=\"b\"} 100000"), std::string::npos) << prom;
  EXPECT_NE(prom.find("dfworker_tenant_processes_borrowed{tenant=\"a\"} 2"), std::string::npos) << prom;
}

TEST_F(TenantMemoryTest, PassingNinetyPercentOfTheBudgetWarnsOnce) {
  TenantMemoryMonitor m = Monitor();
  ASSERT_TRUE(ledger_->Allocate({::getpid(), "a/sdk-0", std::nullopt, "a"}, 900).ok());
  m.Sample();
  EXPECT_FALSE(m.warned("a")) << "exactly 90% is not past it";
  ASSERT_TRUE(ledger_->Allocate({::getpid(), "a/sdk-0", std::nullopt, "a"}, 50).ok());
  ::testing::internal::CaptureStderr();
  m.Sample();
  m.Sample();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(m.warned("a"));
  EXPECT_FALSE(m.warned("b"));
  EXPECT_EQ(err.find("tenant 'a' holds"), err.rfind("tenant 'a' holds")) << "once:\n" << err;
  EXPECT_NE(err.find("over 90% of its budget"), std::string::npos) << err;
}

TEST(TenantMemorySource, NvmlPerPidIsNotWrittenAndSaysSo) {
  auto source = MakeNvmlMemorySource();
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(source.status().message().find("NVML"), std::string::npos);
  TenantMemoryMonitor m(nullptr, {{"a", 1}}, source.status().message());
  m.Sample();
  EXPECT_TRUE(m.TenantJson("a").empty());
  EXPECT_TRUE(m.SamplingJson()["source"].is_null());
}

}  // namespace tenants_memory_test
}  // namespace dfw
