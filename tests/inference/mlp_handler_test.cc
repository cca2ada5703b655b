// The MLP handler against a naive reference (loops in double), for several shapes, activations and
// weight dtypes; model/config disagreements; per-example checks; Beam's sharing rule.
#include "dfw/inference/mlp_handler.h"

#include <gtest/gtest.h>

#include <limits>

#include <cmath>
#include <random>

#include "dfw/backend/cpu_isa.h"
#include "dfw/backend/registry.h"
#include "inference/weights/dtype_convert.h"
#include "inference/mlp_test_util.h"

namespace dfw {
namespace {

using testing_util::F32Bytes;
using testing_util::RawTensor;
using testing_util::SafetensorsBytes;
using testing_util::TempDir;
using testing_util::WriteFile;

// Exactly representable values for each dtype, so the reference sees the same weights.
float RandomWeight(std::mt19937& rng, const std::string& dtype) {
  // k / 2^p with |k| <= 2^p fits F16's 11-bit and BF16's 8-bit significands exactly.
  if (dtype == "F16") return static_cast<float>(std::uniform_int_distribution<int>(-1024, 1024)(rng)) / 1024.0f;
  if (dtype == "BF16") return static_cast<float>(std::uniform_int_distribution<int>(-128, 128)(rng)) / 128.0f;
  return std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
}

std::string Encode(const std::vector<float>& v, const std::string& dtype) {
  if (dtype == "F32") return testing_util::F32Bytes(v);
  std::string out;
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t h;
    if (dtype == "BF16") {
      h = static_cast<uint16_t>(bits >> 16);
    } else if (f == 0.0f) {
      h = static_cast<uint16_t>((bits >> 16) & 0x8000);
    } else {  // normal, exactly representable (see RandomWeight)
      const uint32_t exp = ((bits >> 23) & 0xff) - 127 + 15;
      h = static_cast<uint16_t>(((bits >> 16) & 0x8000) | (exp << 10) | ((bits & 0x7fffff) >> 13));
    }
    out.append(reinterpret_cast<const char*>(&h), 2);
  }
  return out;
}

struct Layer {
  int out;
  const char* act;
};

struct MlpCase {
  const char* name;
  int input_dim;
  std::vector<Layer> layers;
  bool softmax;
  const char* dtype;
  int batch;
};

void PrintTo(const MlpCase& c, std::ostream* os) { *os << c.name; }

double Act(const std::string& a, double x) {
  if (a == "relu") return x > 0 ? x : 0;
  if (a == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  if (a == "gelu_new") return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  if (a == "tanh") return std::tanh(x);
  if (a == "sigmoid") return 1 / (1 + std::exp(-x));
  return x;
}

// Writes a model dir for `c`; returns the float weights for the reference.
struct Written {
  std::vector<std::vector<float>> w, b;
};

Written WriteModel(const MlpCase& c, const std::string& dir) {
  std::mt19937 rng(123);
  Written out;
  std::vector<RawTensor> tensors;
  std::string cfg = R"({"model_type":"mlp","input_dim":)" + std::to_string(c.input_dim) + R"(,"layers":[)";
  int in = c.input_dim;
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    const std::string name = "l" + std::to_string(i);
    std::vector<float> w(c.layers[i].out * in), b(c.layers[i].out);
    for (float& x : w) x = RandomWeight(rng, c.dtype);
    for (float& x : b) x = RandomWeight(rng, c.dtype);
    tensors.push_back({name + ".weight", c.dtype, {c.layers[i].out, in}, Encode(w, c.dtype)});
    tensors.push_back({name + ".bias", c.dtype, {c.layers[i].out}, Encode(b, c.dtype)});
    out.w.push_back(w);
    out.b.push_back(b);
    cfg += (i ? "," : "") + std::string(R"({"name":")") + name + R"(","out_features":)" +
           std::to_string(c.layers[i].out) + R"(,"activation":")" + c.layers[i].act + "\"}";
    in = c.layers[i].out;
  }
  cfg += std::string(R"(],"output":")") + (c.softmax ? "softmax" : "none") + "\"}";
  WriteFile(dir + "/config.json", cfg);
  WriteFile(dir + "/model.safetensors", SafetensorsBytes(tensors));
  return out;
}

// `dtype` unset is auto, which may choose a reduced precision (held to 1e-3, not to the 1e-5 of the
// float32 numerics below): those pass float32.
std::unique_ptr<ModelHandler> MakeHandler(const std::string& dir, const char* dtype = nullptr) {
  ModelHandlerOptions o;
  o.model_path = dir;
  o.input_field = "x";
  if (dtype != nullptr) o.extra.Append("dtype", Value::String(dtype));
  auto h = MakeModelHandler(kMlpHandlerType, o);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return h.ok() ? std::move(h).value() : nullptr;
}

class MlpNumerics : public ::testing::TestWithParam<MlpCase> {};

TEST_P(MlpNumerics, MatchesNaiveLoopsWithin1e5Relative) {
  const MlpCase& c = GetParam();
  TempDir dir;
  Written wts = WriteModel(c, dir.path());
  auto handler = MakeHandler(dir.path(), "float32");
  ASSERT_NE(handler, nullptr);
  auto model = handler->LoadModel({});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->device(), "cpu");
  EXPECT_EQ((*model)->LoadFigures(), (std::vector<std::pair<std::string, int64_t>>{{"linear_dtype_bits", 32}}));

  std::mt19937 rng(7);
  std::vector<Value> examples;
  for (int r = 0; r < c.batch; ++r) {
    List xs;
    for (int j = 0; j < c.input_dim; ++j) {
      // Mix ints and floats: both are numbers.
      xs.push_back(j % 5 == 0 ? Value::Int(std::uniform_int_distribution<int>(-3, 3)(rng))
                              : Value::Float(std::uniform_real_distribution<double>(-2, 2)(rng)));
    }
    examples.push_back(Value::FromList(std::move(xs)));
  }
  std::vector<const Value*> batch;
  for (const Value& v : examples) batch.push_back(&v);
  // Run twice with different batch sizes: the reused workspace must not leak state.
  std::vector<Value> preds;
  ASSERT_TRUE((*model)->RunInference(std::span(batch).first(1), preds).ok());
  preds.clear();
  ASSERT_TRUE((*model)->RunInference(batch, preds).ok());
  ASSERT_EQ(preds.size(), batch.size());
  EXPECT_EQ((*model)->GetNumBytes(batch), int64_t{c.batch} * c.input_dim * 4);

  for (int r = 0; r < c.batch; ++r) {
    std::vector<double> x;
    for (const Value& v : examples[r].as_list()) x.push_back(static_cast<float>(*v.AsNumber()));
    for (std::size_t l = 0; l < c.layers.size(); ++l) {
      const int in = static_cast<int>(x.size()), out = c.layers[l].out;
      std::vector<double> y(out);
      for (int o = 0; o < out; ++o) {
        double acc = wts.b[l][o];
        for (int i = 0; i < in; ++i) acc += double(wts.w[l][o * in + i]) * x[i];
        y[o] = Act(c.layers[l].act, acc);
      }
      x = y;
    }
    if (c.softmax) {
      double mx = *std::max_element(x.begin(), x.end()), sum = 0;
      for (double& v : x) sum += (v = std::exp(v - mx));
      for (double& v : x) v /= sum;
    }
    const List& got = preds[r].as_list();
    ASSERT_EQ(got.size(), x.size());
    for (std::size_t j = 0; j < x.size(); ++j) {
      EXPECT_NEAR(got[j].as_float(), x[j], 1e-5 * std::max(1.0, std::fabs(x[j]))) << "row " << r << " output " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, MlpNumerics,
    ::testing::Values(MlpCase{"TinyReluSoftmaxF32", 3, {{4, "relu"}, {2, "none"}}, true, "F32", 5},
                      MlpCase{"WideGeluF32", 30, {{64, "gelu"}, {64, "gelu_new"}, {3, "none"}}, true, "F32", 37},
                      MlpCase{"TanhRegressorF32", 8, {{16, "tanh"}, {1, "linear"}}, false, "F32", 9},
                      MlpCase{"SigmoidF16", 13, {{32, "sigmoid"}, {5, "none"}}, true, "F16", 17},
                      MlpCase{"ReluBF16", 64, {{128, "relu"}, {32, "relu"}, {10, "none"}}, true, "BF16", 33},
                      MlpCase{"SingleLayerF16", 4, {{6, "none"}}, false, "F16", 1},
                      MlpCase{"ReluF32Deep", 64, {{128, "relu"}, {32, "relu"}, {10, "none"}}, true, "F32", 33},
                      MlpCase{"ReluBF16Small", 4, {{3, "relu"}}, false, "BF16", 2}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(MlpHandler, ExampleChecksNameTheProblem) {
  TempDir dir;
  WriteModel(MlpCase{"m", 3, {{2, "relu"}}, false, "F32", 1}, dir.path());
  auto handler = MakeHandler(dir.path());
  ASSERT_NE(handler, nullptr);
  auto model = handler->LoadModel({});
  ASSERT_TRUE(model.ok());
  struct Bad {
    Value v;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {Value::String("1,2,3"), "expected a list of 3 numbers, got str"},
      {Value::FromList({Value::Int(1), Value::Int(2)}), "expected a list of 3 numbers, got a list of 2"},
      {Value::FromList({Value::Int(1), Value::String("x"), Value::Int(2)}), "element 1 is str \"x\", expected a number"},
      {Value::FromList({Value::Int(1), Value(), Value::Int(2)}), "element 1 is None null, expected a number"},
      {Value::FromList({Value::Bool(true), Value::Int(1), Value::Int(2)}), "element 0 is bool"},
  };
  for (const Bad& b : bad) {
    Status s = (*model)->CheckExample(b.v);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(b.message), std::string::npos) << s.message();
  }
  EXPECT_TRUE((*model)->CheckExample(Value::FromList({Value::Int(1), Value::Float(2.5), Value::Int(-3)})).ok());
}

struct Disagreement {
  const char* name;
  std::string config;
  std::vector<RawTensor> tensors;
  const char* message;
};

TEST(MlpHandler, ConfigAndWeightsDisagreeingIsALoadError) {
  const std::string f8(8, '\0'), f24(24, '\0');
  const std::string cfg = R"({"model_type":"mlp","input_dim":3,"layers":[{"name":"fc","out_features":2}]})";
  const std::vector<Disagreement> cases = {
      {"MissingBias", cfg, {{"fc.weight", "F32", {2, 3}, f24}}, "weights have no tensor 'fc.bias' (expected shape [2])"},
      {"WrongShape", cfg, {{"fc.weight", "F32", {3, 2}, f24}, {"fc.bias", "F32", {2}, f8}},
       "tensor 'fc.weight' has shape [3, 2] but config.json implies [2, 3]"},
      {"IntDtype", cfg, {{"fc.weight", "I32", {2, 3}, f24}, {"fc.bias", "F32", {2}, f8}},
       "has dtype I32; the MLP handler supports F32, F16, BF16"},
      {"UnknownActivation", R"({"model_type":"mlp","input_dim":3,"layers":[{"name":"fc","out_features":2,"activation":"rellu"}]})",
       {}, "unknown activation 'rellu' (did you mean 'relu'?)"},
      {"WrongType", R"({"model_type":"bert","input_dim":3,"layers":[]})", {}, "this handler supports 'mlp'"},
      {"LabelsCount", R"({"model_type":"mlp","input_dim":3,"layers":[{"name":"fc","out_features":2}],"labels":["a"]})",
       {}, "1 labels for 2 outputs"},
      {"UnknownKey", R"({"model_type":"mlp","input_dim":3,"layer":[]})", {}, "unknown key 'layer' (did you mean 'layers'?)"},
      {"NotJson", "{", {}, "not valid JSON"},
  };
  for (const Disagreement& c : cases) {
    TempDir dir;
    WriteFile((dir / "config.json"), c.config);
    WriteFile((dir / "model.safetensors"), SafetensorsBytes(c.tensors));
    ModelHandlerOptions o;
    o.model_path = dir.path();
    o.input_field = "x";
    auto h = MakeModelHandler(kMlpHandlerType, o);
    ASSERT_FALSE(h.ok()) << c.name;
    EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(h.status().message().find(c.message), std::string::npos) << c.name << ": " << h.status().message();
  }
}

TEST(MlpHandler, WeightsThatAreAllNanAreRefusedWhenTheModelLoads) {
  // 143 identical predictions and exit 0 was what an all-NaN model gave before.
  TempDir dir;
  WriteFile((dir / "config.json"), R"({"model_type":"mlp","input_dim":3,"layers":[{"name":"fc","out_features":2}]})");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  WriteFile((dir / "model.safetensors"),
            SafetensorsBytes({{"fc.weight", "F32", {2, 3}, F32Bytes({nan, nan, nan, nan, nan, nan})},
                              {"fc.bias", "F32", {2}, F32Bytes({0, 0})}}));
  ModelHandlerOptions o;
  o.model_path = dir.path();
  o.input_field = "x";
  o.device = "CPU";
  auto h = MakeModelHandler(kMlpHandlerType, o);
  ASSERT_TRUE(h.ok()) << "the dry run reads headers only: " << h.status().ToString();
  auto model = (*h)->LoadModel({});
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("tensor 'fc.weight' [2, 3] has a non-finite value (NaN or Inf) at flat index 0"),
            std::string::npos)
      << model.status().ToString();
}

// The run-time precision check (precision_monitor.h) on the MLP handler.
std::unique_ptr<ModelHandler> MakeCheckedHandler(const std::string& dir, const char* dtype, int64_t every, double max_diff) {
  ModelHandlerOptions o;
  o.model_path = dir;
  o.input_field = "x";
  o.extra.Append("dtype", Value::String(dtype));
  o.extra.Append("precision_check_every", Value::Int(every));
  o.extra.Append("max_prob_diff", Value::Float(max_diff));
  auto h = MakeModelHandler(kMlpHandlerType, o);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return h.ok() ? std::move(h).value() : nullptr;
}

std::vector<Value> RandomExamples(int rows, int dim, int seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::vector<Value> out;
  for (int r = 0; r < rows; ++r) {
    List xs;
    for (int j = 0; j < dim; ++j) xs.push_back(Value::Float(normal(rng)));
    out.push_back(Value::FromList(std::move(xs)));
  }
  return out;
}

int64_t FigureSum(const std::vector<std::pair<std::string, int64_t>>& figures, const std::string& name, int* count = nullptr) {
  int64_t sum = 0;
  int n = 0;
  for (const auto& [k, v] : figures) {
    if (k == name) sum += v, ++n;
  }
  if (count != nullptr) *count = n;
  return sum;
}

// A bound no reduced dtype keeps (1e-12): the first checked batch moves int8 to bfloat16, the next
// bfloat16 to float32; from then on the model computes exactly what a float32 handler computes.
TEST(MlpHandler, ARunTimeCheckOutsideTheBoundMovesTheModelToSaferDTypes) {
  const CpuIsa isa = DetectCpuIsa();
  if (!CheckLinearDTypeOn(isa, LinearDType::kInt8).ok()) GTEST_SKIP() << "this CPU runs no int8 products";
  const bool bf16 = CheckLinearDTypeOn(isa, LinearDType::kBFloat16).ok();
  TempDir dir;
  WriteModel(MlpCase{"m", 48, {{96, "relu"}, {10, "none"}}, true, "F32", 1}, dir.path());
  auto handler = MakeCheckedHandler(dir.path(), "int8", 1, 1e-12);
  auto reference = MakeHandler(dir.path(), "float32");
  ASSERT_NE(handler, nullptr);
  ASSERT_NE(reference, nullptr);
  auto model = handler->LoadModel({});
  auto f32 = reference->LoadModel({});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(f32.ok());
  const std::vector<Value> examples = RandomExamples(24, 48, 11);
  std::vector<const Value*> batch;
  for (const Value& v : examples) batch.push_back(&v);

  std::vector<Value> preds;
  ASSERT_TRUE((*model)->RunInference(batch, preds).ok());
  auto figures = (*model)->BatchFigures();
  int checked = 0;
  FigureSum(figures, "precision_check_argmax_same", &checked);
  EXPECT_EQ(checked, 24);  // every row of the batch, in int8
  EXPECT_EQ(FigureSum(figures, "precision_switches"), 1);
  EXPECT_EQ(FigureSum(figures, "linear_dtype_bits"), bf16 ? 16 : 32);
  EXPECT_GT(FigureSum(figures, "precision_check_prob_diff_ppm"), 0);

  if (bf16) {  // the next batch runs bfloat16, is checked, and moves on to float32
    preds.clear();
    ASSERT_TRUE((*model)->RunInference(batch, preds).ok());
    figures = (*model)->BatchFigures();
    EXPECT_EQ(FigureSum(figures, "precision_switches"), 1);
    EXPECT_EQ(FigureSum(figures, "linear_dtype_bits"), 32);
  }
  preds.clear();
  ASSERT_TRUE((*model)->RunInference(batch, preds).ok());
  figures = (*model)->BatchFigures();
  FigureSum(figures, "precision_check_argmax_same", &checked);
  EXPECT_EQ(checked, 0);  // float32 rows are not checked
  EXPECT_EQ((*model)->LoadFigures(), (std::vector<std::pair<std::string, int64_t>>{{"linear_dtype_bits", 32}}));
  std::vector<Value> want;
  ASSERT_TRUE((*f32)->RunInference(batch, want).ok());
  ASSERT_EQ(preds.size(), want.size());
  for (std::size_t r = 0; r < preds.size(); ++r) EXPECT_EQ(preds[r].ToJson(), want[r].ToJson()) << "row " << r;
}

// Within the bound the dtype stays; one batch in `precision_check_every` is checked; 0 checks none.
TEST(MlpHandler, ARunTimeCheckWithinTheBoundKeepsTheDTypeAndSamplesOneBatchInN) {
  if (!CheckLinearDTypeOn(DetectCpuIsa(), LinearDType::kInt8).ok()) GTEST_SKIP() << "this CPU runs no int8 products";
  TempDir dir;
  WriteModel(MlpCase{"m", 16, {{32, "relu"}, {4, "none"}}, true, "F32", 1}, dir.path());
  const std::vector<Value> examples = RandomExamples(8, 16, 5);
  std::vector<const Value*> batch;
  for (const Value& v : examples) batch.push_back(&v);
  for (int64_t every : {2, 0}) {
    auto handler = MakeCheckedHandler(dir.path(), "int8", every, 1.0);
    ASSERT_NE(handler, nullptr);
    auto model = handler->LoadModel({});
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    std::vector<int> checked_rows;
    for (int b = 0; b < 4; ++b) {
      std::vector<Value> preds;
      ASSERT_TRUE((*model)->RunInference(batch, preds).ok());
      const auto figures = (*model)->BatchFigures();
      int checked = 0;
      FigureSum(figures, "precision_check_argmax_same", &checked);
      checked_rows.push_back(checked);
      EXPECT_EQ(FigureSum(figures, "precision_switches"), 0);
    }
    if (every == 2) {
      EXPECT_EQ(checked_rows, (std::vector<int>{8, 0, 8, 0}));
    } else {
      EXPECT_EQ(checked_rows, (std::vector<int>{0, 0, 0, 0}));
    }
    EXPECT_EQ((*model)->LoadFigures(), (std::vector<std::pair<std::string, int64_t>>{{"linear_dtype_bits", 8}}));
  }
}

TEST(MlpHandler, PrecisionCheckSettingsOutOfRangeAreRejected) {
  TempDir dir;
  WriteModel(MlpCase{"m", 3, {{2, "relu"}}, false, "F32", 1}, dir.path());
  struct Bad {
    const char* key;
    Value v;
  };
  for (const Bad& b : {Bad{"precision_check_every", Value::Int(-1)}, Bad{"precision_check_every", Value::String("x")},
                       Bad{"max_prob_diff", Value::Float(0)}, Bad{"max_prob_diff", Value::Float(1.5)}}) {
    ModelHandlerOptions o;
    o.model_path = dir.path();
    o.input_field = "x";
    o.extra.Append(b.key, b.v);
    auto h = MakeModelHandler(kMlpHandlerType, o);
    ASSERT_FALSE(h.ok()) << b.key << " " << b.v.ToJson();
    EXPECT_NE(h.status().message().find(std::string("config '") + b.key + "'"), std::string::npos) << h.status().message();
  }
}

TEST(ModelHandler, UnknownTypeAndKeysAndOptionsAreRejected) {
  ModelHandlerOptions o;
  o.model_path = "/nonexistent";
  o.input_field = "x";
  auto h = MakeModelHandler("MlpModelHandlerSafetensor", o);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("did you mean 'MlpModelHandlerSafetensors'"), std::string::npos)
      << h.status().message();
  o.extra.Append("inference_batch_size", Value::Int(8));  // Beam PR #39953: must not be ignored
  h = MakeModelHandler(kMlpHandlerType, o);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("unknown config key 'inference_batch_size'"), std::string::npos);
  o.extra = Row();
  o.device = "TPU";
  h = MakeModelHandler(kMlpHandlerType, o);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("'TPU' is not allowed; allowed: CPU, GPU"), std::string::npos);
  o.device = "CPU";
  o.batching.min_batch_size = 9;
  o.batching.max_batch_size = 3;
  h = MakeModelHandler(kMlpHandlerType, o);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("min_batch_size 9 is greater than max_batch_size 3"), std::string::npos);
}

TEST(ModelHandler, BeamSharingRule) {
  TempDir dir;
  WriteModel(MlpCase{"m", 3, {{2, "relu"}}, false, "F32", 1}, dir.path());
  struct Row_ {
    bool large_model;
    std::optional<int64_t> copies;
    bool share;
    int64_t model_copies;
  };
  for (const Row_& r : std::vector<Row_>{{false, std::nullopt, false, 1}, {true, std::nullopt, true, 1},
                                         {false, 3, true, 3}, {true, 2, true, 2}, {false, 0, true, 1}}) {
    ModelHandlerOptions o;
    o.model_path = dir.path();
    o.input_field = "x";
    o.large_model = r.large_model;
    o.model_copies = r.copies;
    auto h = MakeModelHandler(kMlpHandlerType, o);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ((*h)->ShareModelAcrossProcesses(), r.share);
    EXPECT_EQ((*h)->ModelCopies(), r.model_copies);
    EXPECT_EQ((*h)->MetricsNamespace(), "RunInference");
    EXPECT_EQ((*h)->ModelId(), dir.path());
  }
}

TEST(HalfFloats, ConvertExactly) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(0xc040), -3.0f);
}

}  // namespace
}  // namespace dfw
