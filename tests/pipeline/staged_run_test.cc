// The one driver of fused stages (RunStagedJob) with an executor of the test's own, and a pipeline
// whose relative paths resolve against a base directory that is not the process's own (what an
// SDK process and a finalize do for a job resumed from another directory: nothing changes the
// working directory).
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dfw/pipeline/job_pipeline.h"
#include "pipeline_test_util.h"

namespace dfw::staged_run_test {
namespace {

using ::dfw::testing::TempDir;

constexpr const char* kTwoStages = R"(
pipeline:
  type: chain
  transforms:
    - type: Create
      config:
        elements: [{k: a, v: 1}, {k: b, v: 2}, {k: a, v: 3}]
    - type: Combine
      config:
        language: python
        group_by: k
        combine:
          v: sum
    - type: TestCollect
      name: Out
)";

// Records the order of what the driver asks and answers like an executor that ran nothing.
class RecordingExecutor final : public StageExecutor {
 public:
  explicit RecordingExecutor(TempDir& dir, int fail_at = -1) : dir_(dir), fail_at_(fail_at) {}
  Status RunStage(int k, int count, const FusedStage& stage, const StageFinalize& finalize) override {
    calls.push_back("run " + std::to_string(k + 1) + "/" + std::to_string(count) + " (" +
                    std::to_string(stage.spec.transforms.size()) + " transforms)");
    if (k == fail_at_) return IoError("stage " + std::to_string(k) + " broke");
    // No bundle committed: the finalize still commits the stage's shuffles and writes its journal.
    Status s = finalize(dir_.path(), dir_ / ("finalize-" + std::to_string(k) + ".json"), MetricsSnapshot{}, {});
    calls.push_back("finalize " + std::to_string(k + 1) + (s.ok() ? " ok" : ": " + s.message()));
    return s;
  }
  std::vector<std::string> calls;

 private:
  TempDir& dir_;
  int fail_at_;
};

Result<std::vector<FusedStage>> Fused(const std::string& yaml, const std::string& committed) {
  StageRegistry registry = testing::TestRegistry();
  ASSIGN_OR_RETURN(PipelineSpec spec, testing::LoadYaml(yaml, registry));
  FuseOptions fuse;
  fuse.partitions = 4;
  fuse.committed_dir = [committed](int) { return committed; };
  return FuseStages(spec, fuse);
}

TEST(RunStagedJob, RunsEveryStageInOrderEachFinalizedBeforeTheNext) {
  TempDir dir;
  auto stages = Fused(kTwoStages, dir.path());
  ASSERT_TRUE(stages.ok()) << stages.status().ToString();
  ASSERT_EQ(stages->size(), 2u);
  RecordingExecutor executor(dir);
  ASSERT_TRUE(RunStagedJob(*stages, executor).ok());
  EXPECT_THAT(executor.calls, ::testing::ElementsAre("run 1/2 (2 transforms)", "finalize 1 ok",
                                                     "run 2/2 (2 transforms)", "finalize 2 ok"));
  // FinalizeStage ran: stage 1's Combine shuffle is committed (its index written), and each stage
  // has its finalize journal.
  EXPECT_TRUE(std::filesystem::exists(dir / "Combine/shuffle.index"));
  EXPECT_TRUE(std::filesystem::exists(dir / "finalize-0.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "finalize-1.json"));
}

TEST(RunStagedJob, AFailingStageStopsTheRunBeforeTheNextStarts) {
  TempDir dir;
  auto stages = Fused(kTwoStages, dir.path());
  ASSERT_TRUE(stages.ok()) << stages.status().ToString();
  RecordingExecutor executor(dir, /*fail_at=*/0);
  Status s = RunStagedJob(*stages, executor);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("stage 0 broke"));
  EXPECT_THAT(executor.calls, ::testing::ElementsAre("run 1/2 (2 transforms)"));
}

// A working directory that is not the job's: the pipeline's relative input and output paths
// resolve against the base directory given at load, for the read, the commit and the finalize.
TEST(BaseDir, RelativeInputsAndOutputsResolveAgainstTheBaseDirectoryNotTheProcesssOwn) {
  TempDir job_cwd, elsewhere;
  job_cwd.Write("in/rows.jsonl", "{\"id\": 1}\n{\"id\": 2}\n{\"id\": 3}\n");
  const std::string yaml = R"(
pipeline:
  type: chain
  source: {type: ReadFromJson, config: {path: in/*.jsonl}}
  transforms:
    - type: MapToFields
      config: {language: python, fields: {id: id, twice: "id * 2"}}
  sink: {type: WriteToJson, config: {path: out/rows, file_name_suffix: .jsonl}}
)";
  StageRegistry registry = testing::TestRegistry();
  auto spec = LoadPipelineString(yaml, registry, "p.yaml", job_cwd.path());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const std::filesystem::path here = std::filesystem::current_path();
  ASSERT_NE(here.string(), job_cwd.path());
  ASSERT_FALSE(std::filesystem::exists(here / "in" / "rows.jsonl")) << "the test needs a cwd without in/";
  MetricsRegistry metrics;
  auto summary = RunAllBundles(*spec, registry, RunnerOptions{}, elsewhere / "staging", &metrics);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->accounting.read, 3);
  EXPECT_THAT(testing::ReadShardLines(job_cwd / "out/rows"),
              ::testing::ElementsAre(R"({"id":1,"twice":2})", R"({"id":2,"twice":4})", R"({"id":3,"twice":6})"));
  EXPECT_FALSE(std::filesystem::exists(here / "out" / "rows-00000-of-00001.jsonl")) << "written in the process's cwd";
}

TEST(BaseDir, WithoutABaseDirectoryPathsStayAsWritten) {
  StageConfig c;
  EXPECT_EQ(ResolveConfigPath(c, "in/x.jsonl"), "in/x.jsonl");
  c.base_dir = "/jobs/cwd";
  EXPECT_EQ(ResolveConfigPath(c, "in/x.jsonl"), "/jobs/cwd/in/x.jsonl");
  EXPECT_EQ(ResolveConfigPath(c, "/abs/x.jsonl"), "/abs/x.jsonl");
  EXPECT_EQ(ResolveConfigPath(c, ""), "");
}

TEST(BaseDir, AJobRecordedInThisDirectoryLoadsWithoutOneAndAnotherDirectoryIsTheBase) {
  JobInfo job;
  EXPECT_EQ(JobBaseDir(job), "") << "no record: this directory";
  job.params["cwd"] = std::filesystem::current_path().string();
  EXPECT_EQ(JobBaseDir(job), "") << "recorded here: paths as written (messages name them so)";
  job.params["cwd"] = "/some/where/else";
  EXPECT_EQ(JobBaseDir(job), "/some/where/else");
  job.params["pipeline_yaml"] = "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [{a: 1}]}\n"
                                "    - type: WriteToJson\n      config: {path: out/x}\n";
  job.params["pipeline_path"] = "p.yaml";
  StageRegistry registry = testing::TestRegistry();
  auto spec = LoadJobPipeline(job, registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  for (const TransformSpec& t : spec->transforms) EXPECT_EQ(t.config.base_dir, "/some/where/else") << t.config.name;
}

}  // namespace
}  // namespace dfw::staged_run_test
