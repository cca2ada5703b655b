// Shared fixtures for pipeline tests: shard readers and test-only stages (temp dir and file
// helpers: tests/test_util.h).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dfw/pipeline/finalize.h"
#include "dfw/pipeline/staged_run.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "test_util.h"

namespace dfw::testing {

// Lines of every file starting with `prefix` + "-" (the shards), in shard order.
inline std::vector<std::string> ReadShardLines(const std::string& prefix) {
  std::vector<std::string> files, lines;
  std::filesystem::path p(prefix);
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path())) {
    std::string name = e.path().filename().string();
    if (name.rfind(p.filename().string() + "-", 0) == 0) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    std::istringstream in(ReadFile(f));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  return lines;
}

// Rows collected by TestCollect sinks, by transform name.
struct Collected {
  std::mutex mu;
  std::map<std::string, std::vector<Row>> rows;
  std::map<std::string, std::size_t> largest_message;  // the most rows one Process call received
  static Collected& Get() {
    static Collected c;
    return c;
  }
};

// Test-only sink: appends rows to Collected under its transform name; config `delay_us` makes each
// batch slow (sleep), to force the source to wait on the in-flight limit; `max_message_rows` is
// what it answers to Stage::MaxMessageRows.
class TestCollect final : public Stage {
 public:
  TestCollect(std::string name, int64_t delay_us, int64_t max_message_rows)
      : name_(std::move(name)), delay_us_(delay_us), max_message_rows_(max_message_rows) {}
  Status Process(RowBatch& in, StageOutput&) override {
    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    std::lock_guard<std::mutex> lock(Collected::Get().mu);
    auto& v = Collected::Get().rows[name_];
    for (Row& r : in) v.push_back(std::move(r));
    std::size_t& largest = Collected::Get().largest_message[name_];
    largest = std::max(largest, in.size());
    return Status::OK();
  }
  int64_t MaxMessageRows() const override { return max_message_rows_; }

 private:
  std::string name_;
  int64_t delay_us_;
  int64_t max_message_rows_;
};

inline void RegisterTestStages(StageRegistry& r) {
  StageFactory make = [](const StageConfig& c) -> Result<std::unique_ptr<Stage>> {
    ASSIGN_OR_RETURN(int64_t delay, ConfigInt(c, "delay_us", 0));
    ASSIGN_OR_RETURN(int64_t max_message_rows, ConfigInt(c, "max_message_rows", 0));
    return std::unique_ptr<Stage>(new TestCollect(c.name, delay, max_message_rows));
  };
  (void)r.Register({"TestCollect", make, {"delay_us", "max_message_rows"}, {}, StageTraits{.is_sink = true, .serial = true}});
}

inline StageRegistry TestRegistry() {
  StageRegistry r;
  RegisterBuiltinStages(r);
  RegisterTestStages(r);
  return r;
}

inline Result<PipelineSpec> LoadYaml(const std::string& yaml, const StageRegistry& r) {
  return LoadPipelineString(yaml, r, "p.yaml");
}

// Runs `yaml` in this process (RunAllBundles, fused stages and all) and returns the rows its
// TestCollect sink named "Out" received, as JSON, sorted; checks the run's accounting balances.
inline Result<std::vector<std::string>> RunCollect(const std::string& yaml, RunnerOptions options = {},
                                                   MetricsSnapshot* snapshot = nullptr) {
  TempDir dir;
  StageRegistry registry = TestRegistry();
  ASSIGN_OR_RETURN(PipelineSpec spec, LoadYaml(yaml, registry));
  {
    std::lock_guard<std::mutex> lock(Collected::Get().mu);
    Collected::Get().rows.erase("Out");
  }
  MetricsRegistry metrics;
  ASSIGN_OR_RETURN(RunSummary summary, RunAllBundles(spec, registry, options, dir / "staging", &metrics));
  EXPECT_TRUE(summary.accounting.Balanced()) << summary.accounting.ToString();
  if (snapshot != nullptr) *snapshot = metrics.Snapshot();
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(Collected::Get().mu);
  for (const Row& r : Collected::Get().rows["Out"]) out.push_back(r.ToJson());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dfw::testing
