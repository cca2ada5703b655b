// Bundle planning, staged commits, sharded names, and run failures that name the file and line.
#include <gmock/gmock.h>

#include <atomic>
#include <set>

#include <fmt/format.h>

#include "dfw/device/memory_ledger.h"
#include "dfw/stages/config.h"
#include "dfw/stages/sink.h"
#include "pipeline_test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using dfw::testing::ReadFile;
using testing::ReadShardLines;
using testing::TempDir;

Result<RunSummary> RunYaml(const std::string& yaml, const std::string& staging, RunnerOptions options = {}) {
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(yaml, registry);
  if (!spec.ok()) return spec.status();
  MetricsRegistry metrics;
  return RunAllBundles(*spec, registry, options, staging, &metrics);
}

TEST(PlanBundles, CutsAtLineBoundariesCoveringTheFileWithStableIds) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 300; ++i) text += fmt::format("{{\"i\": {}}}\n", i);
  testing::WriteFile(dir / "a.jsonl", text);
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(fmt::format("pipeline:\n  type: chain\n  source: {{type: ReadFromJson, config: {{path: '{}'}}}}\n"
                                            "  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n",
                                            dir / "*.jsonl", dir / "out/o"),
                                registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  MetricsRegistry metrics;
  RunnerOptions options;
  options.bundle_bytes = 500;
  auto runner = PipelineRunner::Make(*spec, registry, options, &metrics);
  ASSERT_TRUE(runner.ok());
  auto first = (*runner)->PlanBundles();
  auto second = (*runner)->PlanBundles();
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_GT(first->size(), 3u);
  ASSERT_EQ(first->size(), second->size());
  int64_t expect_begin = 0, expect_line = 1;
  for (std::size_t k = 0; k < first->size(); ++k) {
    const Bundle& b = (*first)[k];
    EXPECT_EQ(b.id, static_cast<int64_t>(k));
    EXPECT_EQ(b.split.begin, (*second)[k].split.begin);
    EXPECT_EQ(b.split.begin, expect_begin);
    EXPECT_EQ(b.split.first_line, expect_line);
    EXPECT_EQ(text[b.split.end - 1], '\n');  // cut right after a record
    expect_line += std::count(text.begin() + b.split.begin, text.begin() + b.split.end, '\n');
    expect_begin = b.split.end;
  }
  EXPECT_EQ(expect_begin, static_cast<int64_t>(text.size()));
}

TEST(PlanBundles, CsvSplitsNeverCutInsideAQuotedNewline) {
  TempDir dir;
  std::string text = "id,note\n";
  for (int i = 0; i < 200; ++i) text += fmt::format("{},\"two\nlines, \"\"quoted\"\"\"\n", i);
  testing::WriteFile(dir / "a.csv", text);
  TempDir out;
  auto summary = RunYaml(fmt::format("pipeline:\n  type: chain\n  source: {{type: ReadFromCsv, config: {{path: '{}'}}}}\n"
                                     "  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n",
                                     dir / "a.csv", out / "o"),
                         out / "staging", RunnerOptions{.bundle_bytes = 300});
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_GT(summary->bundles, 5);
  std::vector<std::string> lines = ReadShardLines(out / "o");
  ASSERT_EQ(lines.size(), 200u);
  EXPECT_EQ(lines[7], "{\"id\":7,\"note\":\"two\\nlines, \\\"quoted\\\"\"}");
  EXPECT_TRUE(summary->accounting.Balanced()) << summary->accounting.ToString();
}

// ReadFromJson(input) → WriteToJson(output).
std::string JsonToJson(const std::string& input, const std::string& output) {
  return fmt::format("pipeline:\n  type: chain\n  source: {{type: ReadFromJson, config: {{path: '{}'}}}}\n"
                     "  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n",
                     input, output);
}

// Job-sized plans (RunnerOptions::bundle_bytes = 0): the input is cut for the SDK processes.
Result<std::vector<Bundle>> PlanJobSized(const std::string& yaml, int processes) {
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(yaml, registry);
  if (!spec.ok()) return spec.status();
  MetricsRegistry metrics;
  RunnerOptions options;
  options.sdk_processes = processes;
  ASSIGN_OR_RETURN(auto runner, PipelineRunner::Make(*spec, registry, options, &metrics));
  return runner->PlanBundles();
}

TEST(PlanBundles, JobSizedCutsAOneMegabyteFileForEveryOneOfEightProcesses) {
  TempDir dir;
  std::string text;
  while (text.size() < (1u << 20)) text += fmt::format("{{\"i\": {}, \"pad\": \"{}\"}}\n", text.size(), std::string(40, 'x'));
  testing::WriteFile(dir / "a.jsonl", text);
  auto bundles = PlanJobSized(JsonToJson(dir / "a.jsonl", dir / "out/o"), 8);
  ASSERT_TRUE(bundles.ok()) << bundles.status().ToString();
  EXPECT_GE(bundles->size(), 8u) << "every SDK process gets a bundle";
  int64_t expect_begin = 0, expect_line = 1;
  for (const Bundle& b : *bundles) {
    EXPECT_EQ(b.split.begin, expect_begin);
    EXPECT_EQ(b.split.first_line, expect_line);
    EXPECT_EQ(text[b.split.end - 1], '\n');
    if (b.split.end != static_cast<int64_t>(text.size())) {
      EXPECT_GE(b.split.end - b.split.begin, kMinBundleBytes);
    }
    expect_line += std::count(text.begin() + b.split.begin, text.begin() + b.split.end, '\n');
    expect_begin = b.split.end;
  }
  EXPECT_EQ(expect_begin, static_cast<int64_t>(text.size()));
}

// A text model makes the rows costly: the job is cut into twice the bundles, down to a 16 KiB
// floor; an MLP's rows stay cheap (RowCostOf, job/bundle_size.h).
TEST(PlanBundles, ATextModelsRowsAreCostlyAndCutFiner) {
  const std::string src = DFW_SOURCE_DIR;
  auto spec_of = [&](const std::string& handler) {
    return fmt::format(
        "pipeline:\n  type: chain\n  source: {{type: ReadFromJson, config: {{path: '{}/testdata/tiny_bert/sentences.jsonl'}}}}\n"
        "  transforms:\n    - type: RunInference\n      config:\n        model_handler: {}\n"
        "  sink: {{type: WriteToJson, config: {{path: /tmp/unused}}}}\n",
        src, handler);
  };
  StageRegistry registry = testing::TestRegistry();
  auto text = testing::LoadYaml(spec_of(fmt::format("{{type: SentenceEmbeddingHandler, config: {{model_path: '{}/testdata/tiny_bert', input_field: text}}}}", src)), registry);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(RowCostOf(*text), RowCost::kCostly);
  auto mlp = testing::LoadYaml(spec_of(fmt::format("{{type: MlpModelHandlerSafetensors, config: {{model_path: '{}/pipelines/models/breast_cancer_mlp', input_field: features}}}}", src)), registry);
  ASSERT_TRUE(mlp.ok()) << mlp.status().ToString();
  EXPECT_EQ(RowCostOf(*mlp), RowCost::kCheap);
  auto plain = testing::LoadYaml(JsonToJson("/tmp/a.jsonl", "/tmp/o"), registry);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(RowCostOf(*plain), RowCost::kCheap);
  // 200 KiB of input for 2 processes: 16 bundles of ~12.5 KiB would be under the floor, so 16 KiB
  // ones (13) for the text model, against 64 KiB ones (4) for cheap rows.
  TempDir dir;
  std::string lines;
  while (lines.size() < (200u << 10)) lines += fmt::format("{{\"text\": \"sentence {}\", \"pad\": \"{}\"}}\n", lines.size(), std::string(60, 'x'));
  testing::WriteFile(dir / "s.jsonl", lines);
  SourcePlan costly, cheap;
  for (auto [yaml, out] : {std::pair{spec_of(fmt::format("{{type: SentenceEmbeddingHandler, config: {{model_path: '{}/testdata/tiny_bert', input_field: text}}}}", src)), &costly},
                           std::pair{JsonToJson(dir / "s.jsonl", dir / "out/o"), &cheap}}) {
    const std::string at = "'" + src + "/testdata/tiny_bert/sentences.jsonl'";
    if (const std::size_t p = yaml.find(at); p != std::string::npos) yaml.replace(p, at.size(), "'" + (dir / "s.jsonl") + "'");
    auto spec = testing::LoadYaml(yaml, registry);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    auto plan = PlanSourceBundles(*spec, registry, 2);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    *out = std::move(*plan);
  }
  EXPECT_EQ(costly.target.bytes, kMinCostlyRowBundleBytes);
  EXPECT_EQ(cheap.target.bytes, kMinBundleBytes);
  EXPECT_GE(costly.bundles.size(), 12u);
  EXPECT_LE(cheap.bundles.size(), 4u);
}

TEST(PlanBundles, JobSizedKeepsASmallFileOneBundle) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 300; ++i) text += fmt::format("{{\"i\": {}}}\n", i);  // ~3 KB
  testing::WriteFile(dir / "a.jsonl", text);
  auto bundles = PlanJobSized(JsonToJson(dir / "a.jsonl", dir / "out/o"), 8);
  ASSERT_TRUE(bundles.ok()) << bundles.status().ToString();
  EXPECT_EQ(bundles->size(), 1u);
}

// The job's size comes from the files' sizes; only a file over the target by more than a quarter
// is cut (at line ends, its ranges numbered from their first line), a file a little over it stays
// one bundle, and every byte of every file is in exactly one bundle.
TEST(PlanBundles, JobSizedCutsOnlyTheFilesWellOverTheTarget) {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> files;  // name, text
  for (auto [name, bytes] : {std::pair{"a.jsonl", 40u << 10}, std::pair{"b.jsonl", 210u << 10},
                             std::pair{"c.jsonl", 300u << 10}, std::pair{"d.jsonl", 1u << 20}}) {
    std::string text;
    while (text.size() < bytes) text += fmt::format("{{\"i\": {}, \"pad\": \"{}\"}}\n", text.size(), std::string(30, 'x'));
    testing::WriteFile(dir / name, text);
    files.emplace_back(dir / name, std::move(text));
  }
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(JsonToJson(dir / "*.jsonl", dir / "out/o"), registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto plan = PlanSourceBundles(*spec, registry, 2);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const int64_t target = plan->target.bytes;
  int64_t total = 0;
  for (const auto& [path, text] : files) total += static_cast<int64_t>(text.size());
  EXPECT_EQ(target, std::max(kMinBundleBytes, (total + plan->target.desired_bundles - 1) / plan->target.desired_bundles));
  int cut_files = 0, over_but_whole = 0;
  for (const auto& [path, text] : files) {
    const auto size = static_cast<int64_t>(text.size());
    std::vector<SourceSplit> ranges;
    for (const Bundle& b : plan->bundles) {
      if (b.split.path == path) ranges.push_back(b.split);
    }
    ASSERT_FALSE(ranges.empty()) << path;
    if (size <= UncutRangeLimit(target)) {
      ASSERT_EQ(ranges.size(), 1u) << path << " (" << size << " bytes, target " << target << ") stays whole";
      EXPECT_EQ(ranges[0].begin, 0);
      EXPECT_EQ(ranges[0].end, size);
      if (size > target) ++over_but_whole;
      continue;
    }
    ++cut_files;
    EXPECT_GE(ranges.size(), 2u) << path;
    int64_t begin = 0, line = 1;
    for (const SourceSplit& r : ranges) {
      EXPECT_EQ(r.begin, begin) << path;
      EXPECT_EQ(r.first_line, line) << path;
      EXPECT_EQ(text[static_cast<std::size_t>(r.end - 1)], '\n') << path;
      if (r.end != size) {
        EXPECT_GE(r.end - r.begin, target) << path;
      }
      line += std::count(text.begin() + r.begin, text.begin() + r.end, '\n');
      begin = r.end;
    }
    EXPECT_EQ(begin, size) << path;
  }
  EXPECT_GE(cut_files, 1) << "the 1 MiB file is cut";
  EXPECT_LE(cut_files, 3) << "the 40 KiB file is never cut";
  EXPECT_EQ(over_but_whole, 1) << "the 210 KiB file is over the target (~194 KiB) by less than a quarter";
}

TEST(PlanBundles, JobSizedCsvBundlesKeepQuotedNewlinesAndEveryRow) {
  TempDir dir;
  std::string text = "id,note\n";
  for (int i = 0; i < 6000; ++i) text += fmt::format("{},\"two\nlines, \"\"quoted\"\" {}\"\n", i, std::string(50, 'y'));
  testing::WriteFile(dir / "a.csv", text);  // ~480 KB
  TempDir out;
  RunnerOptions options;
  options.sdk_processes = 4;
  auto summary = RunYaml(fmt::format("pipeline:\n  type: chain\n  source: {{type: ReadFromCsv, config: {{path: '{}'}}}}\n"
                                     "  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n",
                                     dir / "a.csv", out / "o"),
                         out / "staging", options);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_GT(summary->bundles, 4);
  std::vector<std::string> lines = ReadShardLines(out / "o");
  ASSERT_EQ(lines.size(), 6000u);
  for (const std::string& line : lines) ASSERT_THAT(line, HasSubstr("\"note\":\"two\\nlines, \\\"quoted\\\" y"));
  EXPECT_TRUE(summary->accounting.Balanced()) << summary->accounting.ToString();
}

TEST(PlanBundles, JobSizedCutsCreateByElementCountAndRunsEveryElementOnce) {
  std::string yaml = "pipeline:\n  type: chain\n  source:\n    type: Create\n    config:\n      elements: [";
  for (int i = 0; i < 1000; ++i) yaml += (i ? ", " : "") + std::to_string(i);
  yaml += "]\n";
  TempDir out;
  auto bundles = PlanJobSized(yaml + fmt::format("  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n", out / "o"), 2);
  ASSERT_TRUE(bundles.ok()) << bundles.status().ToString();
  ASSERT_EQ(bundles->size(), 4u);  // 1000 elements, 256 per bundle (the floor)
  EXPECT_EQ((*bundles)[0].split.begin, 0);
  EXPECT_EQ((*bundles)[3].split.end, 1000);
  RunnerOptions options;
  options.sdk_processes = 2;
  auto summary = RunYaml(yaml + fmt::format("  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n", out / "o"), out / "staging", options);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  std::vector<std::string> lines = ReadShardLines(out / "o");
  ASSERT_EQ(lines.size(), 1000u);
  std::set<std::string> unique(lines.begin(), lines.end());
  EXPECT_EQ(unique.size(), 1000u);
  EXPECT_EQ(unique.count("{\"element\":999}"), 1u);
}

TEST(FinalizeOutputs, UsesBeamShardNamesAndKeepsEmptyShards) {
  TempDir dir;
  testing::WriteFile(dir / "a.txt", "x\ny\n");
  testing::WriteFile(dir / "b.txt", "");  // empty file: no bundle
  testing::WriteFile(dir / "c.txt", "z\n");
  auto summary = RunYaml(fmt::format("pipeline:\n  type: chain\n  source: {{type: ReadFromText, config: {{path: '{}'}}}}\n"
                                     "  transforms:\n    - {{type: Filter, config: {{keep: 'line > \"x\"'}}, name: F}}\n"
                                     "  sink: {{type: WriteToText, config: {{path: '{}', file_name_suffix: .txt}}}}\n",
                                     dir / "*.txt", dir / "out/lines"),
                         dir / "staging");
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->bundles, 2);
  EXPECT_EQ(ReadFile(dir / "out/lines-00000-of-00002.txt"), "y\n");
  EXPECT_EQ(ReadFile(dir / "out/lines-00001-of-00002.txt"), "z\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "staging/WriteToText/bundle-0.done"));  // moved
}

TEST(FinalizeOutputs, MissingCommitIsAFailedPrecondition) {
  StageRegistry registry = testing::TestRegistry();
  TempDir dir;
  auto spec = testing::LoadYaml(fmt::format("pipeline:\n  type: chain\n  source: {{type: Create, config: {{elements: [1]}}}}\n"
                                            "  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n", dir / "o"),
                                registry);
  ASSERT_TRUE(spec.ok());
  Status s = FinalizeOutputs(*spec, dir / "staging", {0, 1}, "");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("bundle 0 has no committed output"));
}

TEST(RunFailures, RecordErrorWithoutErrorHandlingNamesFileAndLine) {
  TempDir dir;
  testing::WriteFile(dir / "in.jsonl", "{\"a\": 1}\n{\"a\": 2}\n{\"a\": \n{\"a\": 4}\n");
  auto summary = RunYaml(fmt::format("pipeline:\n  type: chain\n  source: {{type: ReadFromJson, config: {{path: '{}'}}}}\n"
                                     "  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n",
                                     dir / "in.jsonl", dir / "out/o"),
                         dir / "staging");
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(summary.status().message(), HasSubstr(fmt::format("line 3 of '{}'", dir / "in.jsonl")));
  EXPECT_THAT(summary.status().message(), HasSubstr("malformed JSON"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out/o-00000-of-00001"));  // nothing committed
}

TEST(RunFailures, GlobMatchingNothingIsNotFound) {
  TempDir dir;
  auto summary = RunYaml(fmt::format("pipeline:\n  type: chain\n  source: {{type: ReadFromJson, config: {{path: '{}'}}}}\n"
                                     "  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n",
                                     dir / "nothing-*.jsonl", dir / "o"),
                         dir / "staging");
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(summary.status().message(), HasSubstr("matches no files"));
}

TEST(RunFailures, UnwritableOutputPathFailsBeforeReading) {
  TempDir dir;
  testing::WriteFile(dir / "file", "not a directory");
  auto summary = RunYaml(fmt::format("pipeline:\n  type: chain\n  source: {{type: Create, config: {{elements: [1]}}}}\n"
                                     "  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n",
                                     dir / "file/sub/o"),
                         dir / "staging");
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kIoError);
  EXPECT_THAT(summary.status().message(), HasSubstr("cannot create output directory"));
}

// A stage with N lanes of state (as RunInference's CPU models): at most N overlapping Process calls.
// Records the largest message it was given.
class LanedStage final : public Stage {
 public:
  explicit LanedStage(int lanes) : lanes_(lanes) {}
  Status Process(RowBatch& in, StageOutput& out) override {
    std::size_t seen = largest_message.load();
    while (in.size() > seen && !largest_message.compare_exchange_weak(seen, in.size())) {
    }
    for (Row& r : in) out.Emit(std::move(r));
    return Status::OK();
  }
  int MaxConcurrentCalls() const override { return lanes_; }
  static inline std::atomic<std::size_t> largest_message{0};

 private:
  int lanes_;
};

// Messages are cut smaller (256 rows) whenever some stage runs as several lanes, whatever its type,
// so that one bundle still reaches every lane; otherwise they keep the runner's batch size.
TEST(RunnerMessages, AStageWithLanesGetsMessagesOfAtMost256Rows) {
  TempDir dir;
  std::string lines;
  for (int i = 0; i < 1000; ++i) lines += fmt::format("{{\"i\": {}}}\n", i);
  testing::WriteFile(dir / "in.jsonl", lines);
  for (int lanes : {1, 2}) {
    StageRegistry registry = testing::TestRegistry();
    StageFactory make = [](const StageConfig& c) -> Result<std::unique_ptr<Stage>> {
      ASSIGN_OR_RETURN(int64_t n, ConfigInt(c, "lanes", 1));
      return std::unique_ptr<Stage>(new LanedStage(static_cast<int>(n)));
    };
    ASSERT_TRUE(registry.Register({"TestLanes", make, {"lanes"}, {}, StageTraits{}}).ok());
    auto spec = testing::LoadYaml(
        fmt::format("pipeline:\n  type: chain\n  source: {{type: ReadFromJson, config: {{path: '{}'}}}}\n"
                    "  transforms:\n    - {{type: TestLanes, config: {{lanes: {}}}}}\n"
                    "  sink: {{type: WriteToJson, config: {{path: '{}'}}}}\n",
                    dir / "in.jsonl", lanes, dir / fmt::format("out{}/o", lanes)),
        registry);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    LanedStage::largest_message = 0;
    MetricsRegistry metrics;
    RunnerOptions options;
    options.threads = 2;
    ASSERT_EQ(options.batch_size, 1024u);
    auto summary = RunAllBundles(*spec, registry, options, dir / fmt::format("staging{}", lanes), &metrics);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_EQ(summary->accounting.written, 1000);
    if (lanes == 1) {
      EXPECT_EQ(LanedStage::largest_message.load(), 1000u) << "one lane: the whole 1000-row bundle in one message";
    } else {
      EXPECT_EQ(LanedStage::largest_message.load(), 256u) << "lanes: messages of at most 256 rows";
    }
  }
}


// The SDK process's model context is an explicit runner option that reaches every model load: the
// runner passes it to each stage (StageRunContext), RunInference to ModelHandler::LoadModel. Here
// it names an emulated device's ledger; without it the same pipeline charges nothing.
TEST(PipelineRunner, TheModelProcessContextInTheOptionsReachesEveryModelLoad) {
  TempDir dir;
  const std::string model_dir = std::string(DFW_SOURCE_DIR) + "/pipelines/models/breast_cancer_mlp";
  const std::string ledger_path = dir / "ledger";
  auto ledger = device::MemoryLedger::Create(ledger_path, "nvidia-l4 (emulated)", 64 * testing::kMiB);
  ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
  StageRegistry registry = testing::TestRegistry();
  auto spec = testing::LoadYaml(fmt::format("pipeline:\n  type: chain\n  transforms:\n"
                                            "    - {{type: Create, config: {{elements: [{{features: [1.0]}}]}}}}\n"
                                            "    - type: RunInference\n      config:\n        model_handler:\n"
                                            "          type: MlpModelHandlerSafetensors\n"
                                            "          config: {{model_path: '{}', input_field: features}}\n",
                                            model_dir),
                                registry);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto charged_to = [&](const std::string& name) -> uint64_t {
    auto snap = ledger->Snapshot();
    EXPECT_TRUE(snap.ok());
    uint64_t bytes = 0;
    for (const device::LedgerEntry& e : snap->entries) bytes += e.name == name ? e.allocated_bytes : 0;
    return bytes;
  };

  MetricsRegistry metrics;
  RunnerOptions plain;
  plain.inference_lanes = 1;
  auto without = PipelineRunner::Make(*spec, registry, plain, &metrics);
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  EXPECT_EQ(ledger->Snapshot()->used_bytes, 0u) << "no context: the model loads privately and charges nothing";

  RunnerOptions options = plain;
  options.model_process = {ledger_path, "", "sdk-5", 5, std::nullopt};
  auto with = PipelineRunner::Make(*spec, registry, options, &metrics);
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  const uint64_t weights = charged_to("sdk-5");
  EXPECT_GT(weights, 0u) << "the model's weights are charged under the context's client name";
  EXPECT_EQ(ledger->Snapshot()->used_bytes, weights);
  with->reset();
  EXPECT_EQ(charged_to("sdk-5"), 0u) << "released with the runner's models";
}


// A stage whose rows are expensive asks for small messages (Stage::MaxMessageRows): the source then
// hands a bundle out in pieces of at most that many rows, and nothing is lost; without the ask the
// same bundle arrives in messages of up to RunnerOptions::batch_size rows.
TEST(PipelineRunner, AStagesMaxMessageRowsCapsWhatTheSourceHandsOutPerMessage) {
  auto run = [](const std::string& name, int max_message_rows) -> std::size_t {
    std::string elements;
    for (int i = 0; i < 500; ++i) elements += (i ? ", " : "") + std::to_string(i);
    TempDir out;
    auto summary = RunYaml(fmt::format("pipeline:\n  type: chain\n  transforms:\n"
                                       "    - {{type: Create, config: {{elements: [{}]}}}}\n"
                                       "    - {{type: TestCollect, name: {}, config: {{max_message_rows: {}}}}}\n",
                                       elements, name, max_message_rows),
                           out / "staging");
    EXPECT_TRUE(summary.ok()) << summary.status().ToString();
    std::lock_guard<std::mutex> lock(testing::Collected::Get().mu);
    EXPECT_EQ(testing::Collected::Get().rows[name].size(), 500u) << name;
    return testing::Collected::Get().largest_message[name];
  };
  EXPECT_LE(run("Capped", 7), 7u);
  EXPECT_GT(run("Uncapped", 0), 7u) << "without the ask a message carries more rows";
}

}  // namespace
}  // namespace dfw
