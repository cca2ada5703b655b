#include "dfw/metrics/prometheus.h"

#include <gtest/gtest.h>

namespace dfw {
namespace {

TEST(Prometheus, CountersKeepBeamNamesWithTheNamespaceAsALabel) {
  MetricsSnapshot s;
  s.counters[{"Classify", "num_inferences"}] = 5720;
  s.counters[{"dfworker", "records"}] = 5724;
  PrometheusWriter w;
  w.AddSnapshot(s, {{"job_id", "j1"}});
  const std::string text = w.Text();
  EXPECT_NE(text.find("# TYPE num_inferences counter\nnum_inferences{job_id=\"j1\",namespace=\"Classify\"} 5720\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE dfworker_records counter\ndfworker_records{job_id=\"j1\"} 5724\n"), std::string::npos)
      << text;
}

TEST(Prometheus, DistributionsAreSummariesWithMinAndMaxGauges) {
  MetricsSnapshot s;
  s.distributions[{"Classify", "inference_batch_latency_micro_secs"}] = DistributionData{4, 100, 10, 40, {}};
  PrometheusWriter w;
  w.AddSnapshot(s, {});
  const std::string text = w.Text();
  for (const char* line : {"# TYPE inference_batch_latency_micro_secs summary\n",
                           "inference_batch_latency_micro_secs_sum{namespace=\"Classify\"} 100\n",
                           "inference_batch_latency_micro_secs_count{namespace=\"Classify\"} 4\n",
                           "# TYPE inference_batch_latency_micro_secs_min gauge\n",
                           "inference_batch_latency_micro_secs_min{namespace=\"Classify\"} 10\n",
                           "inference_batch_latency_micro_secs_max{namespace=\"Classify\"} 40\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

TEST(Prometheus, NamesAreSanitisedAndLabelValuesEscaped) {
  EXPECT_EQ(PrometheusWriter::SanitizeName("a.b-c d"), "a_b_c_d");
  EXPECT_EQ(PrometheusWriter::SanitizeName("9lives"), "_9lives");
  PrometheusWriter w;
  w.Add("x", "gauge", "h", {{"path", "a\"b\\c\nd"}}, 1.5);
  EXPECT_NE(w.Text().find("x{path=\"a\\\"b\\\\c\\nd\"} 1.5\n"), std::string::npos) << w.Text();
}

TEST(Prometheus, EveryFamilyHasHelpAndTypeOnceBeforeItsSamples) {
  MetricsSnapshot a, b;
  a.counters[{"S", "n"}] = 1;
  b.counters[{"S", "n"}] = 2;
  PrometheusWriter w;
  w.AddSnapshot(a, {{"process", "0"}});
  w.AddSnapshot(b, {{"process", "1"}});
  EXPECT_EQ(w.Text(),
            "# HELP n Beam counter n\n# TYPE n counter\nn{process=\"0\",namespace=\"S\"} 1\n"
            "n{process=\"1\",namespace=\"S\"} 2\n");
}

}  // namespace
}  // namespace dfw
