#include "dfw/report/job_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dfw/job/protocol.h"
#include "dfw/launcher/metrics_report.h"
#include "dfw/report/svg.h"
#include "report/html_check.h"
#include "test_util.h"

namespace dfw::report {
namespace {

namespace fs = std::filesystem;

class JobReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_.path();
  }

  static MetricsSnapshot Bundle(int64_t records, int64_t busy_ms) {
    MetricsSnapshot s;
    s.counters[{kRecordsNamespace, kRecordsCounter}] = records;
    s.counters[{kRecordsNamespace, kBusyMsCounter}] = busy_ms;
    s.counters[{"ReadSamples", "elements_read"}] = records;
    s.counters[{"ReadSamples", "process_bundle_usecs"}] = busy_ms * 200;
    s.counters[{"Classify", "process_bundle_usecs"}] = busy_ms * 700;
    s.counters[{"Classify", "errors"}] = 1;
    s.distributions[{"Classify", "inference_request_batch_size"}] = DistributionData{2, records, 1, records - 1, {}};
    s.distributions[{"Classify", "inference_batch_latency_micro_secs"}] = DistributionData{2, 3000, 1000, 2000, {}};
    return s;
  }

  // A job dir as a two-process run leaves it: job.json, manifest.jsonl, metrics.json.
  std::string MakeJobDir() {
    JobInfo info;
    info.job_id = "dfw-test-1";
    info.bundles = {"b0", "b1", "b2"};
    info.executor = "pipeline";
    info.params["pipeline_path"] = "pipelines/<demo>.yaml";
    auto dir = JobDir::Create(root_.string(), info);
    EXPECT_TRUE(dir.ok()) << dir.status().ToString();
    MetricsReport report(2);
    std::ofstream manifest(root_ / "manifest.jsonl");
    int i = 0;
    for (auto [records, busy] : {std::pair{40, 300}, std::pair{25, 200}, std::pair{35, 250}}) {
      MetricsSnapshot b = Bundle(records, busy);
      report.AddBundle(i % 2, b);
      // b2 is a split's residual (not in job.json's bundles): drawn in its own colour.
      report.AddSpan({i % 2, i == 2 ? "7" : "b" + std::to_string(i), 0.1 + 0.4 * i, 0.4 + 0.4 * i, records});
      if (i == 2) {  // the split that made bundle 7 (work rebalancing): not a commit
        manifest << R"({"primary":"0 0 10 1 in","residual":"7","residual_range":"0 10 20 2 in","split":"b1"})" << "\n";
      }
      manifest << "{\"bundle\":\"b" << i << "\",\"attempt\":" << (i == 1 ? 2 : 1) << ",\"lease\":" << i
               << ",\"metrics\":" << b.ToJson() << "}\n";
      ++i;
    }
    std::ofstream(root_ / "metrics.json") << report.ToJson("dfw-test-1", 3, 1, 1.5);
    std::ofstream(root_ / "gpu_memory.json")
        << R"({"gpu":"nvidia-l4","backend":"emulated","capacity_bytes":25769803776,"planned_peak_bytes":1073741824,)"
        << R"("context_bytes":734003200,"model_bytes":339738624,"workspace_bytes":0,"measured_model_host_bytes":339738624})";
    return root_.string();
  }

  dfw::testing::TempDir tmp_;
  fs::path root_;
};

TEST_F(JobReportTest, TimelineShowsEachCommittedBundleAndResidualsApart) {
  auto data = LoadJobReport(MakeJobDir());
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  ASSERT_EQ(data->metrics.timeline.size(), 3u);
  EXPECT_EQ(data->metrics.timeline[2].bundle, "7");
  EXPECT_DOUBLE_EQ(data->metrics.timeline[1].start_s, 0.5);
  const std::string html = RenderJobReportHtml(*data);
  EXPECT_NE(html.find("bundle 7 (a split&#39;s residual): 0.90-1.20 s, 35 records"), std::string::npos);
  EXPECT_NE(html.find("bundle b1: 0.50-0.80 s, 25 records"), std::string::npos);
}

TEST_F(JobReportTest, PageIsWellFormedAndHasEveryChart) {
  auto data = LoadJobReport(MakeJobDir());
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->commits.size(), 3u);
  EXPECT_EQ(data->commits[1].attempt, 2);
  EXPECT_EQ(data->commits[2].records, 35);
  const std::string html = RenderJobReportHtml(*data);
  EXPECT_EQ(testing::CheckWellFormed(html), "");
  for (const char* id : {"chart-processes", "chart-records", "chart-timeline", "chart-throughput", "chart-stage-time",
                         "chart-batch-size", "chart-latency", "chart-bundles", "chart-errors", "chart-gpu-memory"}) {
    EXPECT_NE(html.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
  }
  EXPECT_NE(html.find("pipelines/&lt;demo&gt;.yaml"), std::string::npos);  // escaped
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // the SVG namespace only
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("<b>100</b>records"), std::string::npos);
}

TEST_F(JobReportTest, ThroughputChartReadsInTheUnitOfTheJobsLength) {
  auto data = LoadJobReport(MakeJobDir());  // a 1.5 s job: 20 intervals of 75 ms
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  const std::string html = RenderJobReportHtml(*data);
  const std::size_t chart = html.find("<svg id=\"chart-throughput\"");
  ASSERT_NE(chart, std::string::npos);
  const std::string svg = html.substr(chart, html.find("</svg>", chart) - chart);
  EXPECT_NE(html.find("in 20 intervals of 75 ms (a bundle counts when it commits)"), std::string::npos);
  EXPECT_EQ(html.find("intervals of 0.00 s"), std::string::npos);
  // Round ticks 500 ms apart under a 1,500 ms axis; none at the odd fifths of the span.
  for (const char* tick : {">0</text>", ">500</text>", ">1000</text>", ">1500</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick << "\n" << svg;
  }
  EXPECT_EQ(svg.find(">300</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("time since the job started (ms)"), std::string::npos);
  EXPECT_NE(svg.find("<title>825-900 ms: "), std::string::npos) << svg;  // the 12th interval's tooltip
}

TEST(ReportDuration, PicksTheUnitThatFitsTheLength) {
  EXPECT_EQ(Duration(0.0123), "12.3 ms");
  EXPECT_EQ(Duration(1.5), "1500 ms");
  EXPECT_EQ(Duration(45), "45 s");
  EXPECT_EQ(Duration(600), "10 min");
  EXPECT_EQ(Duration(3 * 3600), "3 h");
}

TEST_F(JobReportTest, ChartsWithoutTheirMetricsSaySo) {
  const std::string dir = MakeJobDir();
  MetricsReport report(1);
  MetricsSnapshot s;
  s.counters[{kRecordsNamespace, kRecordsCounter}] = 3;
  report.AddBundle(0, s);
  std::ofstream(root_ / "metrics.json") << report.ToJson("dfw-test-1", 1, 0, 0.5);
  fs::remove(root_ / "gpu_memory.json");
  auto data = LoadJobReport(dir);
  ASSERT_TRUE(data.ok());
  const std::string html = RenderJobReportHtml(*data);
  EXPECT_EQ(testing::CheckWellFormed(html), "");
  EXPECT_EQ(html.find("chart-batch-size"), std::string::npos);
  EXPECT_NE(html.find("no inference_request_batch_size distribution"), std::string::npos);
  EXPECT_EQ(html.find("chart-gpu-memory"), std::string::npos);
  EXPECT_NE(html.find("No gpu_memory.json"), std::string::npos);
}

TEST_F(JobReportTest, BadJobDirsAreRefusedWithTheReason) {
  EXPECT_EQ(LoadJobReport((root_ / "missing").string()).status().code(), StatusCode::kInvalidArgument);
  const fs::path plain_dir = root_.string() + "_plain";
  fs::create_directories(plain_dir);
  auto plain = LoadJobReport(plain_dir.string());
  fs::remove_all(plain_dir);
  EXPECT_EQ(plain.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plain.status().message().find("is not a job dir (no job.json"), std::string::npos);

  const std::string dir = MakeJobDir();
  std::ofstream(root_ / "metrics.json", std::ios::trunc) << "{\"job_id\": \"x\", ";
  auto corrupt = LoadJobReport(dir);
  EXPECT_EQ(corrupt.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(corrupt.status().message().find("metrics.json: not valid JSON"), std::string::npos)
      << corrupt.status().message();
  fs::remove(root_ / "metrics.json");
  auto missing = LoadJobReport(dir);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("metrics.json does not exist"), std::string::npos);

  std::ofstream(root_ / "job.json", std::ios::trunc) << "[1,2";
  EXPECT_EQ(LoadJobReport(dir).status().code(), StatusCode::kDataLoss);
}

TEST(HtmlCheck, CatchesWhatItShould) {
  EXPECT_NE(testing::CheckWellFormed("<!DOCTYPE html>\n<html><body><p>x</body></html>"), "");
  EXPECT_NE(testing::CheckWellFormed("<!DOCTYPE html>\n<html><meta charset=\"a\"></html>"), "");
  EXPECT_NE(testing::CheckWellFormed("<!DOCTYPE html>\n<html>a & b</html>"), "");
  EXPECT_EQ(testing::CheckWellFormed("<!DOCTYPE html>\n<html><meta charset=\"a\"/><p>a &amp; b</p></html>"), "");
}

}  // namespace
}  // namespace dfw::report
