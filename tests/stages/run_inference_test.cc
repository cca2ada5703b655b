// The RunInference stage on the default model: one PredictionResult per good row, exact Beam
// metrics, error rows for the planted bad inputs, whole-batch dead letters, config errors.
#include <gtest/gtest.h>

#include <set>

#include <mutex>

#include "record/expression_test_util.h"
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <thread>
#include <nlohmann/json.hpp>

#include "dfw/inference/model_handler.h"
#include "dfw/stages/config_yaml.h"
#include "dfw/stages/stage.h"

namespace dfw {
namespace {

const std::string kModelDir = std::string(DFW_SOURCE_DIR) + "/pipelines/models/breast_cancer_mlp";


RowBatch SampleRows() {
  RowBatch rows;
  std::ifstream in(kModelDir + "/sample.jsonl");
  for (std::string line; std::getline(in, line);) rows.push_back(testing::ValueFromJson(nlohmann::ordered_json::parse(line)).as_row());
  return rows;
}

StageConfig Config(const std::string& yaml, bool error_handling, MetricsRegistry* metrics) {
  StageConfig c;
  c.name = "Classify";
  c.type = "RunInference";
  c.config = ConfigNodeFromYaml(YAML::Load(yaml));
  c.file = "test.yaml";
  c.line = 1;
  c.column = 1;
  if (error_handling) c.error_output = "errors";
  c.run.metrics = metrics;
  return c;
}

std::string HandlerYaml(const std::string& extra) {
  return "inference_tag: prediction\nmodel_handler:\n  type: MlpModelHandlerSafetensors\n  config:\n"
         "    model_path: " + kModelDir + "\n    input_field: features\n" + extra;
}

Result<std::unique_ptr<Stage>> MakeStage(const StageConfig& c) {
  StageRegistry registry;
  RegisterRunInference(registry);
  const StageTypeInfo* info = registry.Find("RunInference");
  if (info == nullptr) return Internal("RunInference not registered");
  EXPECT_FALSE(info->traits.serial);  // overlapping calls are bounded by the lanes instead
  EXPECT_TRUE(info->traits.can_fail_per_record);
  return info->factory(c);
}

TEST(RunInferenceStage, OnePredictionResultPerRowErrorsForBadRowsAndExactMetrics) {
  MetricsRegistry metrics;
  StageConfig c = Config(HandlerYaml("    min_batch_size: 16\n    max_batch_size: 16\n"), true, &metrics);
  auto stage = MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch rows = SampleRows();
  ASSERT_EQ(rows.size(), 147u);  // 143 held-out rows + 4 planted bad rows
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  // Two incoming batches, as the graph would deliver them.
  RowBatch first(rows.begin(), rows.begin() + 100), second(rows.begin() + 100, rows.end());
  ASSERT_TRUE((*stage)->Process(first, out).ok());
  ASSERT_TRUE((*stage)->Process(second, out).ok());
  ASSERT_TRUE((*stage)->FinishBundle(out).ok());

  ASSERT_EQ(out.main().size(), 143u);
  int correct = 0;
  for (const Row& row : out.main()) {
    const Value* pr = row.Find("prediction");
    ASSERT_NE(pr, nullptr);
    ASSERT_TRUE(pr->is_row());
    EXPECT_EQ(*pr->as_row().Find("example"), *row.Find("features"));
    EXPECT_EQ(pr->as_row().Find("model_id")->as_string(), kModelDir);
    const List& p = pr->as_row().Find("inference")->as_list();
    ASSERT_EQ(p.size(), 2u);
    EXPECT_NEAR(p[0].as_float() + p[1].as_float(), 1.0, 1e-6);
    const std::string predicted = p[1].as_float() > p[0].as_float() ? "benign" : "malignant";
    correct += predicted == row.Find("label")->as_string();
  }
  EXPECT_EQ(correct, 137);  // 0.9580 × 143, the accuracy recorded in PROVENANCE.md

  ASSERT_EQ(out.errors().size(), 4u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"bad-short", "expected a list of 30 numbers, got a list of 29"},
      {"bad-string", "element 5 is str \"n/a\", expected a number"},
      {"bad-missing", "input field 'features' is missing"},
      {"bad-null", "expected a list of 30 numbers, got None"},
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const Row& err = out.errors()[i];
    EXPECT_EQ(err.Find("element")->as_row().Find("id")->as_string(), expected[i].first);
    EXPECT_NE(err.Find("msg")->as_string().find(expected[i].second), std::string::npos) << err.Find("msg")->as_string();
  }

  const MetricsSnapshot snap = metrics.Snapshot();
  EXPECT_EQ(snap.CounterOr("RunInference", "num_inferences"), 143);
  EXPECT_EQ(snap.CounterOr("RunInference", "failed_batches_counter"), 0);
  const DistributionData& sizes = snap.distributions.at({"RunInference", "inference_request_batch_size"});
  EXPECT_EQ(sizes.count, 9);  // 8 full batches of 16 + the partial batch of 15 at bundle end
  EXPECT_EQ(sizes.sum, 143);
  EXPECT_EQ(sizes.max, 16);
  EXPECT_EQ(sizes.min, 15);
  const DistributionData& bytes = snap.distributions.at({"RunInference", "inference_request_batch_byte_size"});
  EXPECT_EQ(bytes.sum, 143 * 30 * 4);
  EXPECT_EQ(snap.distributions.at({"RunInference", "inference_batch_latency_micro_secs"}).count, 9);
  const DistributionData& model_bytes = snap.distributions.at({"RunInference", "model_byte_size"});
  EXPECT_EQ(model_bytes.count, 1);
  EXPECT_EQ(model_bytes.sum, (30 * 32 + 32 + 32 * 16 + 16 + 16 * 2 + 2) * 4);
  EXPECT_EQ(snap.distributions.at({"RunInference", "load_model_latency_milli_secs"}).count, 1);
}

// Lanes: Process calls from several threads at once, each on its own model and batcher; every row
// comes out once with its own prediction, and the metrics count every batch of every lane.
TEST(RunInferenceStage, LanesRunConcurrentCallsAndLoseNothing) {
  MetricsRegistry metrics;
  StageConfig c = Config(HandlerYaml("    min_batch_size: 8\n    max_batch_size: 8\n"), true, &metrics);
  c.run.inference_lanes = 3;
  auto stage = MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  EXPECT_EQ((*stage)->MaxConcurrentCalls(), 3);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  RowBatch rows = SampleRows();  // 143 good + 4 bad
  // Reference predictions from a one-lane stage, by id.
  MetricsRegistry ref_metrics;
  StageConfig rc = Config(HandlerYaml(""), true, &ref_metrics);
  auto ref = MakeStage(rc);
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ((*ref)->MaxConcurrentCalls(), 1);
  StageOutput ref_out(&rc);
  RowBatch ref_rows = rows;
  ASSERT_TRUE((*ref)->StartBundle(BundleContext{}).ok());
  ASSERT_TRUE((*ref)->Process(ref_rows, ref_out).ok());
  ASSERT_TRUE((*ref)->FinishBundle(ref_out).ok());
  std::map<std::string, Value> want;
  for (const Row& r : ref_out.main()) want[r.Find("id")->as_string()] = *r.Find("prediction")->as_row().Find("inference");
  ASSERT_EQ(want.size(), 143u);

  // Three threads, each feeding slices of 7 rows (batches of 8 straddle the calls).
  constexpr int kThreads = 3;
  std::vector<StageOutput> outs(kThreads, StageOutput(&c));
  std::vector<Status> status(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t begin = 7 * t; begin < rows.size() && status[t].ok(); begin += 7 * kThreads) {
        RowBatch slice(rows.begin() + begin, rows.begin() + std::min(rows.size(), begin + 7));
        status[t] = (*stage)->Process(slice, outs[t]);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const Status& st : status) ASSERT_TRUE(st.ok()) << st.ToString();
  StageOutput tail(&c);
  ASSERT_TRUE((*stage)->FinishBundle(tail).ok());
  outs.push_back(std::move(tail));

  std::map<std::string, int> seen;
  std::size_t errors = 0;
  for (StageOutput& o : outs) {
    errors += o.errors().size();
    for (const Row& r : o.main()) {
      const std::string id = r.Find("id")->as_string();
      ++seen[id];
      ASSERT_TRUE(want.count(id)) << id;
      // Batches differ from the reference's (sizes, neighbours), so BLAS rounding may differ a little.
      const List& got = r.Find("prediction")->as_row().Find("inference")->as_list();
      const List& ref_p = want[id].as_list();
      ASSERT_EQ(got.size(), ref_p.size()) << id;
      for (std::size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k].as_float(), ref_p[k].as_float(), 1e-5) << id;
    }
  }
  EXPECT_EQ(seen.size(), 143u);
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(errors, 4u);
  const MetricsSnapshot snap = metrics.Snapshot();
  EXPECT_EQ(snap.CounterOr("RunInference", "num_inferences"), 143);
  EXPECT_EQ(snap.distributions.at({"RunInference", "inference_request_batch_size"}).sum, 143);
  // One load reported (the lanes share the mmapped weights).
  EXPECT_EQ(snap.distributions.at({"RunInference", "model_byte_size"}).count, 1);
}

TEST(RunInferenceStage, OneLaneForGpuModelsAndPinnedBlasThreads) {
  MetricsRegistry metrics;
  for (const std::string& extra : {std::string("    device: GPU\n"), std::string("    blas_threads: 1\n")}) {
    StageConfig c = Config(HandlerYaml(extra), true, &metrics);
    c.run.inference_lanes = 4;
    auto stage = MakeStage(c);
    ASSERT_TRUE(stage.ok()) << stage.status().ToString();
    EXPECT_EQ((*stage)->MaxConcurrentCalls(), 1) << extra;
  }
}

TEST(RunInferenceStage, BadRowWithoutErrorHandlingFailsTheBundle) {
  MetricsRegistry metrics;
  StageConfig c = Config(HandlerYaml(""), false, &metrics);
  auto stage = MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch rows = SampleRows();
  RowBatch bad(rows.end() - 4, rows.end());
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  Status s = (*stage)->Process(bad, out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("expected a list of 30 numbers, got a list of 29"), std::string::npos) << s.message();
}

TEST(RunInferenceStage, AdaptiveBatchingRampsWithinOneBundle) {
  MetricsRegistry metrics;
  StageConfig c = Config(HandlerYaml("    max_batch_size: 64\n"), true, &metrics);
  auto stage = MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch rows = SampleRows();
  rows.resize(143);
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  ASSERT_TRUE((*stage)->Process(rows, out).ok());
  ASSERT_TRUE((*stage)->FinishBundle(out).ok());
  EXPECT_EQ(out.main().size(), 143u);
  const auto snap = metrics.Snapshot();
  const DistributionData& sizes = snap.distributions.at({"RunInference", "inference_request_batch_size"});
  EXPECT_EQ(sizes.sum, 143);
  EXPECT_EQ(sizes.min, 1);  // the ramp starts at min_batch_size (1)
  EXPECT_LE(sizes.max, 64);
  EXPECT_GT(sizes.max, 2);  // and grows (1, 1, 2, 4, …)
}

// A handler type that exists only in this test binary: its model fails every batch that holds an
// example equal to the configured `poison` value (a test-only way to make run_inference fail).
class PoisonModel final : public Model {
 public:
  explicit PoisonModel(Value poison) : poison_(std::move(poison)) {}
  Status CheckExample(const Value& example) const override {
    return example.is_number() ? Status::OK() : InvalidArgument("expected a number, got " + example.ToJson());
  }
  Status RunInference(std::span<const Value* const> batch, std::vector<Value>& predictions) override {
    for (const Value* v : batch) {
      if (*v == poison_) return Internal("device lost while running " + v->ToJson());
    }
    for (const Value* v : batch) predictions.push_back(Value::Float(*v->AsNumber() * 2));
    return Status::OK();
  }
  int64_t GetNumBytes(std::span<const Value* const> batch) const override { return 8 * static_cast<int64_t>(batch.size()); }
  int64_t byte_size() const override { return 0; }
  std::string_view device() const override { return "cpu"; }

 private:
  Value poison_;
};

class PoisonHandler final : public ModelHandler {
 public:
  explicit PoisonHandler(ModelHandlerOptions o) : ModelHandler(std::move(o)) {}
  Result<std::unique_ptr<Model>> LoadModel(const ModelProcessContext&) const override {
    const Value* poison = options().extra.Find("poison");
    return std::unique_ptr<Model>(new PoisonModel(poison ? *poison : Value()));
  }
  std::string_view type() const override { return "TestPoisonHandler"; }
};

void RegisterPoisonHandler() {
  static const Status registered = RegisterModelHandlerType(
      {"TestPoisonHandler", {"poison"}, [](ModelHandlerOptions o) -> Result<std::unique_ptr<ModelHandler>> {
         return std::unique_ptr<ModelHandler>(new PoisonHandler(std::move(o)));
       }});
  ASSERT_TRUE(registered.ok()) << registered.ToString();
}

const char kPoisonYaml[] =
    "model_handler:\n  type: TestPoisonHandler\n  config: {model_path: unused, input_field: x, poison: 13,"
    " min_batch_size: 4, max_batch_size: 4}\n";

RowBatch Numbered(int n) {
  RowBatch rows;
  for (int i = 0; i < n; ++i) {
    Row r;
    r.Append("x", Value::Int(i));
    rows.push_back(std::move(r));
  }
  return rows;
}

TEST(RunInferenceStage, FailingBatchGoesToTheErrorOutputAsItsRowsAndCountsOnce) {
  RegisterPoisonHandler();
  MetricsRegistry metrics;
  StageConfig c = Config(kPoisonYaml, true, &metrics);
  auto stage = MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch rows = Numbered(18);  // batches [0..3] [4..7] [8..11] [12..15] (holds 13) [16, 17]
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  ASSERT_TRUE((*stage)->Process(rows, out).ok());
  ASSERT_TRUE((*stage)->FinishBundle(out).ok());

  ASSERT_EQ(out.main().size(), 14u);
  for (const Row& row : out.main()) {
    const int64_t x = row.Find("x")->as_int();
    EXPECT_TRUE(x < 12 || x > 15) << x;
    EXPECT_DOUBLE_EQ(row.Find("inference")->as_row().Find("inference")->as_float(), 2.0 * x);
  }
  ASSERT_EQ(out.errors().size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    const Row& err = out.errors()[i];
    EXPECT_EQ(err.Find("element")->as_row().Find("x")->as_int(), 12 + static_cast<int64_t>(i));
    EXPECT_EQ(err.Find("msg")->as_string(), "RunInference: inference failed for a batch of 4 rows: device lost while running 13");
    EXPECT_EQ(err.Find("transform")->as_string(), "Classify");
  }
  const MetricsSnapshot snap = metrics.Snapshot();
  EXPECT_EQ(snap.CounterOr("RunInference", "failed_batches_counter"), 1);
  EXPECT_EQ(snap.CounterOr("RunInference", "num_inferences"), 14);
  EXPECT_EQ(snap.distributions.at({"RunInference", "inference_request_batch_size"}).count, 5);
}

TEST(RunInferenceStage, FailingBatchWithoutErrorHandlingFailsTheBundleNamingTheTransform) {
  RegisterPoisonHandler();
  MetricsRegistry metrics;
  StageConfig c = Config(kPoisonYaml, false, &metrics);
  auto stage = MakeStage(c);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  RowBatch rows = Numbered(16);
  StageOutput out(&c);
  ASSERT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  Status s = (*stage)->Process(rows, out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(c.Where()), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Classify"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("inference failed for a batch of 4 rows: device lost while running 13"), std::string::npos)
      << s.message();
  EXPECT_EQ(out.main().size(), 12u);  // the three good batches before it were emitted
  EXPECT_EQ(metrics.Snapshot().CounterOr("RunInference", "failed_batches_counter"), 1);
}

TEST(RunInferenceStage, RegisteringAHandlerTypeTwiceIsAnError) {
  RegisterPoisonHandler();
  Status s = RegisterModelHandlerType({"TestPoisonHandler", {}, [](ModelHandlerOptions) -> Result<std::unique_ptr<ModelHandler>> {
                                         return InvalidArgument("unused");
                                       }});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'TestPoisonHandler' is registered twice"), std::string::npos) << s.message();
}

struct ConfigErrorCase {
  const char* name;
  std::string yaml;
  const char* message;
};

TEST(RunInferenceStage, ConfigErrorsNameTheProblem) {
  const std::vector<ConfigErrorCase> cases = {
      {"UnknownHandler", "model_handler: {type: MlpHandler, config: {model_path: x, input_field: f}}",
       "unknown model_handler type 'MlpHandler'"},
      {"MissingModel", "model_handler: {type: MlpModelHandlerSafetensors, config: {model_path: /nonexistent/m, input_field: f}}",
       "/nonexistent/m"},
      {"MisspelledKey", HandlerYaml("    max_batch_sise: 8\n"), "unknown config key 'max_batch_sise' (did you mean 'max_batch_size'?)"},
      {"BadBounds", HandlerYaml("    min_batch_size: 8\n    max_batch_size: 4\n"), "min_batch_size 8 is greater than max_batch_size 4"},
      {"BadDevice", HandlerYaml("    device: TPU\n"), "'TPU' is not allowed; allowed: CPU, GPU"},
      {"BadHandlerKey", "model_handler: {type: MlpModelHandlerSafetensors, conf: {}}", "unknown key 'conf'"},
      {"IntAsString", HandlerYaml("    max_batch_size: lots\n"), "'max_batch_size' must be an integer"},
      {"ZeroBlasThreads", HandlerYaml("    blas_threads: 0\n"), "'blas_threads': 0 must be >= 1"},
      {"ZeroBatchWeight", HandlerYaml("    max_batch_weight: 0\n"), "'max_batch_weight': 0 must be >= 1"},
  };
  for (const auto& tc : cases) {
    StageConfig c = Config(tc.yaml, true, nullptr);
    auto stage = MakeStage(c);
    ASSERT_FALSE(stage.ok()) << tc.name;
    EXPECT_EQ(stage.status().code(), StatusCode::kInvalidArgument) << tc.name;
    EXPECT_NE(stage.status().message().find(tc.message), std::string::npos) << tc.name << ": " << stage.status().message();
    EXPECT_NE(stage.status().message().find("test.yaml:1:1"), std::string::npos) << tc.name << ": " << stage.status().message();
  }
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

// Beam's own handler types are valid Beam YAML: refused by name (kUnimplemented, exit 2 at load),
// with the reason and what dfworker runs instead, never "unknown type".
TEST(RunInferenceStage, BeamHandlerTypesAreRefusedByNameWithWhatIsSupported) {
  struct Case {
    std::string yaml;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"model_handler: {type: VertexAIModelHandlerJSON, config: {endpoint_id: '1', project: p, location: l, "
       "preprocess: {callable: 'lambda x: x.text'}}}",
       "remote Vertex AI endpoint"},
      {"model_handler: {type: HuggingFaceModelHandlerTensor, config: {model_uri: m}}", "runs transformers models in Python"},
      {"model_handler: {type: PytorchModelHandlerTensor, config: {state_dict_path: p}}", "pickled PyTorch"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.yaml);
    auto stage = MakeStage(Config(tc.yaml, false, nullptr));
    ASSERT_FALSE(stage.ok());
    EXPECT_EQ(stage.status().code(), StatusCode::kUnimplemented);
    const std::string& m = stage.status().message();
    EXPECT_NE(m.find("is valid Beam YAML but not supported by dfworker"), std::string::npos) << m;
    EXPECT_NE(m.find(tc.reason), std::string::npos) << m;
    EXPECT_NE(m.find("Supported: HuggingFacePipelineModelHandler"), std::string::npos) << m;
    EXPECT_NE(m.find("MlpModelHandlerSafetensors"), std::string::npos) << m;
    EXPECT_NE(m.find("SentenceTransformerEmbeddings"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace run_inference_weights_test {

// A handler type of this test binary whose examples weigh their own value and whose batches are
// cut from a sorted window of 8 rows: every batch it runs is recorded.
struct SeenBatches {
  std::mutex mu;
  std::vector<std::vector<int64_t>> batches;
};
SeenBatches& Seen() {
  static SeenBatches s;
  return s;
}

class WeighedModel final : public Model {
 public:
  Status CheckExample(const Value& example) const override {
    return example.is_int() ? Status::OK() : InvalidArgument("expected an integer");
  }
  Status RunInference(std::span<const Value* const> batch, std::vector<Value>& predictions) override {
    std::vector<int64_t> seen;
    for (const Value* v : batch) {
      seen.push_back(v->as_int());
      predictions.push_back(Value::Int(v->as_int()));
    }
    std::lock_guard lock(Seen().mu);
    Seen().batches.push_back(std::move(seen));
    return Status::OK();
  }
  int64_t ElementWeight(const Value& example) const override { return example.as_int(); }
  int64_t GetNumBytes(std::span<const Value* const> batch) const override { return static_cast<int64_t>(batch.size()); }
  int64_t byte_size() const override { return 0; }
  std::string_view device() const override { return "cpu"; }
};

class WeighedHandler final : public ModelHandler {
 public:
  explicit WeighedHandler(ModelHandlerOptions o) : ModelHandler(std::move(o)) {}
  Result<std::unique_ptr<Model>> LoadModel(const ModelProcessContext&) const override {
    return std::unique_ptr<Model>(new WeighedModel());
  }
  int64_t SortWindow() const override { return 8; }
  std::string_view type() const override { return "TestWeighedHandler"; }
};

std::vector<std::vector<int64_t>> RunWeighed(const std::string& batching, const std::vector<int64_t>& values) {
  static const Status registered = RegisterModelHandlerType(
      {"TestWeighedHandler", {}, [](ModelHandlerOptions o) -> Result<std::unique_ptr<ModelHandler>> {
         return std::unique_ptr<ModelHandler>(new WeighedHandler(std::move(o)));
       }});
  EXPECT_TRUE(registered.ok()) << registered.ToString();
  {
    std::lock_guard lock(Seen().mu);
    Seen().batches.clear();
  }
  StageConfig c;
  c.name = "Weigh";
  c.type = "RunInference";
  c.config = ConfigNodeFromYaml(YAML::Load("model_handler:\n  type: TestWeighedHandler\n  config: {model_path: unused, input_field: x, " +
                                           batching + "}\n"));
  c.file = "test.yaml";
  c.line = c.column = 1;
  c.run.inference_lanes = 1;
  StageRegistry registry;
  RegisterRunInference(registry);
  auto stage = registry.Find("RunInference")->factory(c);
  EXPECT_TRUE(stage.ok()) << stage.status().ToString();
  if (!stage.ok()) return {};
  RowBatch rows;
  for (int64_t v : values) {
    Row r;
    r.Append("x", Value::Int(v));
    rows.push_back(std::move(r));
  }
  StageOutput out(&c);
  EXPECT_TRUE((*stage)->StartBundle(BundleContext{}).ok());
  EXPECT_TRUE((*stage)->Process(rows, out).ok());
  EXPECT_TRUE((*stage)->FinishBundle(out).ok());
  EXPECT_EQ(out.main().size(), values.size());  // every row out once, whatever the order
  std::multiset<int64_t> in(values.begin(), values.end()), got;
  for (const Row& row : out.main()) got.insert(row.Find("x")->as_int());
  EXPECT_EQ(got, in);
  std::lock_guard lock(Seen().mu);
  return Seen().batches;
}

// A handler with a sort window gets batches cut from its rows sorted by weight, at the batch size
// the pipeline set (here 4, the "natural" small one), not in arrival order.
TEST(RunInferenceStage, BatchesOfASortingHandlerAreCutFromRowsSortedByWeight) {
  const auto batches = RunWeighed("min_batch_size: 4, max_batch_size: 4", {9, 1, 7, 3, 8, 2, 6, 4, 5, 10});
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{1, 2, 3, 4}, {6, 7, 8, 9}, {5, 10}}));
}

// max_batch_weight as Beam spells it: no batch above it, a heavier row alone.
TEST(RunInferenceStage, MaxBatchWeightCapsEveryBatch) {
  const auto batches = RunWeighed("max_batch_size: 100, min_batch_size: 100, max_batch_weight: 10",
                                  {9, 1, 7, 3, 8, 2, 6, 4, 12, 5});
  int64_t rows = 0;
  for (const auto& b : batches) {
    int64_t sum = 0;
    for (int64_t v : b) sum += v;
    rows += static_cast<int64_t>(b.size());
    EXPECT_TRUE(sum <= 10 || b.size() == 1) << sum;
    EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
  }
  EXPECT_EQ(rows, 10);
}

}  // namespace run_inference_weights_test
}  // namespace dfw
