#include "dfw/report/tenants_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "report/html_check.h"

namespace dfw::report {
namespace {

namespace fs = std::filesystem;

class TenantsReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("dfw_trep_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(dir_ / "tenants_report.json") << text; }
  fs::path dir_;
};

TEST_F(TenantsReportTest, ShowsEachTenantsMemoryOverTimeAndTheBorrowing) {
  Write(R"J({"borrowing": [{"at_s": 0.4, "tenant": "large", "after": "small", "processes_before": 1, "processes_after": 3}],
  "gpu_memory_sampling": {"source": "ledger (emulated GPU)", "interval_ms": 100, "samples": 7, "failed_reads": 0},
  "tenants": {
    "small": {"ended": "exited with code 0", "success": true, "processes_guaranteed": 2, "processes_borrowed": 0,
              "processes_started": 2, "gpu_memory_peak_bytes": 1024, "gpu_memory_budget_bytes": 4096,
              "gpu_memory_timeline": [[0.0, 0], [0.2, 1024], [0.5, 0]]},
    "large": {"ended": "exited with code 1", "success": false, "processes_guaranteed": 1, "processes_borrowed": 2,
              "processes_started": 3, "gpu_memory_peak_bytes": 3000, "gpu_memory_budget_bytes": 4096,
              "gpu_memory_timeline": [[0.0, 0], [0.3, 3000], [1.5, 0]]}}})J");
  ASSERT_TRUE(IsTenantsJobDir(dir_.string()));
  auto html = RenderTenantsReportHtml(dir_.string());
  ASSERT_TRUE(html.ok()) << html.status().message();
  EXPECT_EQ(testing::CheckWellFormed(*html), "");
  EXPECT_NE(html->find("id=\"chart-tenant-memory-small\""), std::string::npos);
  EXPECT_NE(html->find("id=\"chart-tenant-memory-large\""), std::string::npos);
  EXPECT_NE(html->find("stroke-dasharray"), std::string::npos) << "the budget line";
  EXPECT_NE(html->find("1 -&gt; 3"), std::string::npos) << "the borrowing event";
  EXPECT_NE(html->find("(FAILED)"), std::string::npos);
  EXPECT_NE(html->find("tenants/large/report.html"), std::string::npos);
}

TEST_F(TenantsReportTest, SaysWhyNothingWasSampledAndRefusesAForeignFile) {
  Write(R"J({"tenants": {"a": {"ended": "exited with code 0", "success": true}},
  "gpu_memory_sampling": {"source": null, "why": "per-process GPU memory from NVML is not implemented"}})J");
  auto html = RenderTenantsReportHtml(dir_.string());
  ASSERT_TRUE(html.ok()) << html.status().message();
  EXPECT_EQ(testing::CheckWellFormed(*html), "");
  EXPECT_NE(html->find("Not sampled: per-process GPU memory from NVML is not implemented"), std::string::npos);
  EXPECT_NE(html->find("No tenant borrowed"), std::string::npos);
  Write("[1, 2]");
  auto bad = RenderTenantsReportHtml(dir_.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("tenants_report.json"), std::string::npos);
  fs::remove(dir_ / "tenants_report.json");
  EXPECT_FALSE(IsTenantsJobDir(dir_.string()));
}

}  // namespace
}  // namespace dfw::report
