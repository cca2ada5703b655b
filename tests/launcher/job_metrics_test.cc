// The metrics.json schema read back (dfw/metrics/job_metrics.h) against what the launcher writes.
#include "dfw/metrics/job_metrics.h"

#include <gtest/gtest.h>

#include "dfw/launcher/metrics_report.h"

namespace dfw {
namespace {

MetricsSnapshot Bundle(int64_t records, int64_t busy_ms) {
  MetricsSnapshot s;
  s.counters[{kRecordsNamespace, kRecordsCounter}] = records;
  s.counters[{kRecordsNamespace, kBusyMsCounter}] = busy_ms;
  s.distributions[{"Classify", "inference_request_batch_size"}] = DistributionData{2, 40, 8, 32, {}};
  return s;
}

TEST(JobMetrics, ReadsBackWhatTheLauncherWrites) {
  MetricsReport report(2);
  report.AddBundle(0, Bundle(30, 400));
  report.AddBundle(1, Bundle(10, 100));
  report.AddBundle(1, Bundle(5, 100));
  auto m = ParseJobMetrics(report.ToJson("job-1", 3, 1, 2.0));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->job_id, "job-1");
  EXPECT_EQ(m->bundles_committed, 3);
  EXPECT_EQ(m->retries, 1);
  EXPECT_DOUBLE_EQ(m->elapsed_s, 2.0);
  EXPECT_EQ(m->total.CounterOr(kRecordsNamespace, kRecordsCounter), 45);
  ASSERT_EQ(m->processes.size(), 2u);
  EXPECT_EQ(m->processes[1].bundles, 2);
  EXPECT_EQ(m->processes[1].records, 15);
  EXPECT_DOUBLE_EQ(m->processes[0].busy_s, 0.4);
  EXPECT_DOUBLE_EQ(m->processes[0].idle_s, 1.6);
  EXPECT_EQ(m->processes[1].metrics.distributions.at({"Classify", "inference_request_batch_size"}).count, 4);
}

TEST(JobMetrics, CorruptFilesNameTheField) {
  struct Bad {
    const char* text;
    const char* expected;
  };
  for (const Bad& b : {Bad{"{not json", "not valid JSON"}, Bad{"[]", "top level is not an object"},
                       Bad{R"({"job_id":"j","bundles_committed":1,"retries":0,"elapsed_s":1})", "'total' is missing"},
                       Bad{R"({"job_id":"j","bundles_committed":"x","retries":0})", "'bundles_committed' is not a number"},
                       Bad{R"({"job_id":"j","bundles_committed":1,"retries":0,"elapsed_s":1,"total":{"counters":[],"distributions":[]},
                              "processes":[{"index":0}]})",
                           "'processes[0].bundles' is missing"},
                       Bad{R"({"job_id":"j","bundles_committed":1,"retries":0,"elapsed_s":1,"total":{"counters":[],"distributions":[]},
                              "processes":[],"timeline":[{"process":0,"bundle":"0","start_s":2,"end_s":1,"records":3}]})",
                           "'timeline[0].end_s' is before start_s"},
                       Bad{R"({"job_id":"j","bundles_committed":1,"retries":0,"elapsed_s":1,"total":{"counters":[],"distributions":[]},
                              "processes":[],"timeline":{}})",
                           "'timeline' is not a list"}}) {
    auto m = ParseJobMetrics(b.text);
    ASSERT_FALSE(m.ok()) << b.text;
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(m.status().message().find(b.expected), std::string::npos) << m.status().message();
  }
}

TEST(JobMetrics, PrometheusHasTotalsPerProcessSeriesAndRunGauges) {
  MetricsReport report(2);
  report.AddBundle(0, Bundle(30, 400));
  report.AddBundle(1, Bundle(10, 100));
  auto m = ParseJobMetrics(report.ToJson("job-1", 2, 0, 2.0));
  ASSERT_TRUE(m.ok());
  const std::string prom = JobMetricsToPrometheus(*m);
  for (const char* line : {"dfworker_records{job_id=\"job-1\",process=\"all\"} 40\n",
                           "dfworker_records{job_id=\"job-1\",process=\"1\"} 10\n",
                           "dfworker_elapsed_seconds{job_id=\"job-1\"} 2\n",
                           "dfworker_process_idle_seconds{job_id=\"job-1\",process=\"0\"} 1.6\n",
                           "inference_request_batch_size_count{job_id=\"job-1\",process=\"all\",namespace=\"Classify\"} 4\n",
                           "# TYPE dfworker_records counter\n"}) {
    EXPECT_NE(prom.find(line), std::string::npos) << line << "\n" << prom;
  }
}

}  // namespace
}  // namespace dfw
