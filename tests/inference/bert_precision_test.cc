// The encoder's Linear layers in bfloat16 and int8 against float32 on the tiny BERT, by the same
// rule `dtype: auto` applies (pooled-output cosine >= 0.999 / 0.995), and the handler's `dtype` key.
// A dtype this CPU cannot run skips, naming what it lacks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/backend/registry.h"
#include "dfw/common/test_hooks.h"
#include "dfw/inference/bert_encoder.h"
#include "dfw/inference/calibration_text.h"
#include "dfw/inference/safetensors.h"
#include "dfw/inference/sentence_embedding_handler.h"

namespace dfw {
namespace bert_precision_test {

using ::testing::HasSubstr;

const std::string kDir = std::string(DFW_SOURCE_DIR) + "/testdata/tiny_bert";

std::vector<std::vector<int32_t>> ExpectedIds() {
  std::ifstream in(kDir + "/expected.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json expected = nlohmann::json::parse(ss.str());
  std::vector<std::vector<int32_t>> ids;
  for (const auto& c : expected["cases"]) ids.push_back(c["ids"].get<std::vector<int32_t>>());
  EXPECT_GE(ids.size(), 30u);
  return ids;
}

std::vector<float> Encode(BertEncoder& enc, const std::vector<std::vector<int32_t>>& ids) {
  std::vector<std::span<const int32_t>> seqs(ids.begin(), ids.end());
  std::vector<float> out(ids.size() * static_cast<std::size_t>(enc.hidden_size()));
  const Status s = enc.EncodeMany(seqs, out, true);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

double MinCosine(const std::vector<float>& a, const std::vector<float>& b, int h) {
  double worst = 1;
  for (std::size_t r = 0; r < a.size() / h; ++r) {
    double dot = 0, na = 0, nb = 0;
    for (int j = 0; j < h; ++j) {
      dot += double(a[r * h + j]) * b[r * h + j];
      na += double(a[r * h + j]) * a[r * h + j];
      nb += double(b[r * h + j]) * b[r * h + j];
    }
    worst = std::min(worst, dot / std::sqrt(na * nb));
  }
  return worst;
}

void CheckDType(LinearDType dtype, double min_cosine) {
  auto backend = MakeCpuBackend();
  if (Status s = backend->CheckLinearDType(dtype); !s.ok()) GTEST_SKIP() << s.ToString();
  auto config = BertConfig::Load(kDir + "/config.json");
  ASSERT_TRUE(config.ok());
  auto weights = SafetensorsFile::Open(kDir + "/model.safetensors");
  ASSERT_TRUE(weights.ok());
  BertEncoderOptions o;
  o.max_seq_length = 64;
  o.normalize = false;  // the raw pooled output: normalisation would hide a scale error
  auto enc = BertEncoder::Make(*config, **weights, backend.get(), o);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  const auto ids = ExpectedIds();
  const std::vector<float> ref = Encode(**enc, ids);
  ASSERT_TRUE((*enc)->SetLinearDType(dtype).ok());
  EXPECT_EQ((*enc)->linear_dtype(), dtype);
  const std::vector<float> got = Encode(**enc, ids);
  EXPECT_GE(MinCosine(ref, got, (*enc)->hidden_size()), min_cosine);
  EXPECT_NE(ref, got);  // it really ran in another precision
  ASSERT_TRUE((*enc)->SetLinearDType(LinearDType::kFloat32).ok());
  EXPECT_EQ(Encode(**enc, ids), ref);  // and back
}

TEST(BertPrecision, BFloat16PooledOutputKeepsCosine0_999ToFloat32) { CheckDType(LinearDType::kBFloat16, 0.999); }

TEST(BertPrecision, Int8PooledOutputKeepsCosine0_995ToFloat32) { CheckDType(LinearDType::kInt8, 0.995); }

TEST(BertPrecision, AnUnsupportedDtypeLeavesTheEncoderAsItWas) {
  CpuIsa avx2;
  avx2.sse41 = avx2.avx2 = avx2.fma = true;
  CpuBackendOptions bo;
  bo.isa = avx2;
  auto backend = MakeCpuBackend(bo);
  auto config = BertConfig::Load(kDir + "/config.json");
  auto weights = SafetensorsFile::Open(kDir + "/model.safetensors");
  ASSERT_TRUE(config.ok() && weights.ok());
  auto enc = BertEncoder::Make(*config, **weights, backend.get(), {});
  ASSERT_TRUE(enc.ok());
  const Status s = (*enc)->SetLinearDType(LinearDType::kBFloat16);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("avx512_bf16 or amx_bf16"));
  EXPECT_EQ((*enc)->linear_dtype(), LinearDType::kFloat32);
}

ModelHandlerOptions Options(Value dtype) {
  ModelHandlerOptions o;
  o.model_path = kDir;
  o.input_field = "text";
  o.extra = Row(std::vector<Field>{{"dtype", std::move(dtype)}});
  return o;
}

TEST(SentenceEmbeddingHandler, DtypeAcceptsAutoAndTheThreePrecisionsOnly) {
  for (const char* ok : {"auto", "float32"}) {
    auto h = MakeModelHandler(kSentenceEmbeddingHandlerType, Options(Value::String(ok)));
    EXPECT_TRUE(h.ok()) << ok << ": " << h.status().ToString();
  }
  auto bad = MakeModelHandler(kSentenceEmbeddingHandlerType, Options(Value::String("fp8")));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'dtype': \"fp8\" is not allowed; allowed: auto, float32, bfloat16, int8"));
}

TEST(SentenceEmbeddingHandler, AnExplicitDtypeTheCpuCannotRunIsAConfigError) {
  for (LinearDType d : {LinearDType::kBFloat16, LinearDType::kInt8}) {
    const Status here = MakeCpuBackend()->CheckLinearDType(d);
    auto h = MakeModelHandler(kSentenceEmbeddingHandlerType, Options(Value::String(std::string(LinearDTypeName(d)))));
    if (here.ok()) {
      ASSERT_TRUE(h.ok()) << h.status().ToString();
      auto model = (*h)->LoadModel({});
      EXPECT_TRUE(model.ok()) << model.status().ToString();
    } else {
      ASSERT_FALSE(h.ok());
      EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(h.status().message(), HasSubstr(here.message()));
    }
  }
}

TEST(SentenceEmbeddingHandler, AutoEmbedsWithinTheInt8CosineOfTransformers) {
  ModelHandlerOptions o = Options(Value::String("auto"));
  o.extra = Row(std::vector<Field>{{"dtype", Value::String("auto")}, {"max_seq_length", Value::Int(64)}});
  auto h = MakeModelHandler(kSentenceEmbeddingHandlerType, o);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  auto model = (*h)->LoadModel({});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::ifstream in(kDir + "/expected.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str());
  std::vector<Value> texts;
  for (const auto& c : j["cases"]) texts.push_back(Value::String(c["text"].get<std::string>()));
  std::vector<const Value*> batch;
  for (const Value& v : texts) batch.push_back(&v);
  std::vector<Value> out;
  ASSERT_TRUE((*model)->RunInference(batch, out).ok());
  ASSERT_EQ(out.size(), texts.size());
  std::vector<float> got, want;
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (const Value& v : out[i].as_list()) got.push_back(static_cast<float>(v.as_float()));
    for (double v : j["cases"][i]["mean_normalized"].get<std::vector<double>>()) want.push_back(static_cast<float>(v));
  }
  ASSERT_EQ(got.size(), want.size());
  EXPECT_GE(MinCosine(got, want, static_cast<int>(want.size() / texts.size())), 0.995);
}


// Texts through a loaded model, one batch: rows x hidden floats.
std::vector<float> Embed(Model& model, const std::vector<std::string>& texts) {
  std::vector<Value> values;
  for (const std::string& t : texts) values.push_back(Value::String(t));
  std::vector<const Value*> batch;
  for (const Value& v : values) batch.push_back(&v);
  std::vector<Value> out;
  const Status s = model.RunInference(batch, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<float> flat;
  for (const Value& row : out) {
    for (const Value& v : row.as_list()) flat.push_back(static_cast<float>(v.as_float()));
  }
  return flat;
}

std::unique_ptr<Model> Load(std::vector<Field> config) {
  ModelHandlerOptions o;
  o.model_path = kDir;
  o.input_field = "text";
  config.push_back({"max_seq_length", Value::Int(64)});
  o.extra = Row(std::move(config));
  auto h = MakeModelHandler(kSentenceEmbeddingHandlerType, o);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  if (!h.ok()) return nullptr;
  auto model = (*h)->LoadModel({});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

std::vector<std::string> VariedTexts() {
  std::vector<std::string> texts(CalibrationTexts().begin(), CalibrationTexts().end());
  for (const char* t : {"?", "...", "word", "\xF0\x9F\x99\x82", "x\xCC\x81\xCC\x82"}) texts.emplace_back(t);
  return texts;
}

// Every row, short ones included, keeps the bound of its bucket's dtype to float32 (the smaller
// of the two bounds, as the row's dtype is not visible from outside).
TEST(SentenceEmbeddingHandler, AutoKeepsEveryRowWithinTheBoundOfFloat32) {
  auto f32 = Load({{"dtype", Value::String("float32")}});
  auto autom = Load({{"dtype", Value::String("auto")}});
  ASSERT_TRUE(f32 && autom);
  const std::vector<std::string> texts = VariedTexts();
  const std::vector<float> ref = Embed(*f32, texts), got = Embed(*autom, texts);
  ASSERT_EQ(ref.size(), got.size());
  const int h = static_cast<int>(ref.size() / texts.size());
  for (std::size_t r = 0; r < texts.size(); ++r) {
    const std::vector<float> a(ref.begin() + r * h, ref.begin() + (r + 1) * h), b(got.begin() + r * h, got.begin() + (r + 1) * h);
    EXPECT_GE(MinCosine(a, b, h), 0.995) << "row " << r << ": '" << texts[r] << "'";
  }
}

std::map<std::string, std::vector<int64_t>> FiguresByName(const Model& m) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [n, v] : m.BatchFigures()) out[n].push_back(v);
  return out;
}

// A bound no reduced precision keeps: the first sampled batch finds int8 outside it and the model
// moves to the next safer dtype, then to float32, whose results are float32's exactly.
TEST(SentenceEmbeddingHandler, ASampledBatchBelowTheBoundSwitchesToASaferDtype) {
  if (!MakeCpuBackend()->CheckLinearDType(LinearDType::kInt8).ok()) GTEST_SKIP() << "no int8 here";
  auto f32 = Load({{"dtype", Value::String("float32")}});
  auto model = Load({{"dtype", Value::String("int8")},
                     {"min_cosine", Value::Float(0.9999999)},
                     {"precision_check_every", Value::Int(1)}});
  ASSERT_TRUE(f32 && model);
  const std::vector<std::string> texts = VariedTexts();
  const std::vector<float> ref = Embed(*f32, texts);
  EXPECT_EQ(model->LoadFigures(), (std::vector<std::pair<std::string, int64_t>>{{"linear_dtype_bits", 8}}));
  const std::vector<float> first = Embed(*model, texts);
  auto figures = FiguresByName(*model);
  ASSERT_EQ(figures["precision_check_cosine_ppm"].size(), texts.size());
  EXPECT_LT(*std::min_element(figures["precision_check_cosine_ppm"].begin(), figures["precision_check_cosine_ppm"].end()),
            1000000);
  EXPECT_EQ(figures["precision_switches"], std::vector<int64_t>{1});
  ASSERT_EQ(figures["linear_dtype_bits"].size(), 1u);
  EXPECT_GT(figures["linear_dtype_bits"][0], 8);
  EXPECT_NE(first, ref);  // the switched batch itself was int8
  // bfloat16 (where the CPU runs it) breaks the same bound on the next batch; float32 then keeps it.
  std::vector<float> last;
  for (int i = 0; i < 3; ++i) last = Embed(*model, texts);
  EXPECT_EQ(last, ref);
  EXPECT_TRUE(FiguresByName(*model)["precision_check_cosine_ppm"].empty());  // float32 rows: nothing to check
}

double Distance(const std::vector<float>& a, const std::vector<float>& b, std::size_t row, std::size_t h) {
  double d = 0;
  for (std::size_t j = row * h; j < (row + 1) * h; ++j) d += (double(a[j]) - b[j]) * (double(a[j]) - b[j]);
  return std::sqrt(d);
}

// Each row runs in its token bucket's dtype: with the buckets forced (test hook) to float32 for
// 1-8 tokens and int8 above, in one mixed batch the short rows come out as float32's and the long
// ones as int8's, and the batch's token figures count both encoders.
TEST(SentenceEmbeddingHandler, EachRowRunsInItsTokenBucketsDtype) {
  if (!test_hooks::Enabled()) GTEST_SKIP() << "needs a build configured with -DDFW_TEST_HOOKS=ON";
  if (!MakeCpuBackend()->CheckLinearDType(LinearDType::kInt8).ok()) GTEST_SKIP() << "no int8 here";
  auto f32 = Load({{"dtype", Value::String("float32")}});
  auto i8 = Load({{"dtype", Value::String("int8")}});
  ::setenv("DFW_TEST_PRECISION_BUCKETS", "float32,int8,int8,int8", 1);
  auto routed = Load({{"dtype", Value::String("auto")}, {"precision_check_every", Value::Int(0)}});
  ::unsetenv("DFW_TEST_PRECISION_BUCKETS");
  ASSERT_TRUE(f32 && i8 && routed);
  int bits32 = 0, bits8 = 0;
  for (const auto& [name, v] : routed->LoadFigures()) {
    bits32 += name == "linear_dtype_bits" && v == 32;
    bits8 += name == "linear_dtype_bits" && v == 8;
  }
  EXPECT_EQ(bits32, 1);
  EXPECT_EQ(bits8, 1);
  const std::vector<std::string> texts = VariedTexts();
  const std::vector<float> want32 = Embed(*f32, texts), want8 = Embed(*i8, texts), got = Embed(*routed, texts);
  ASSERT_EQ(got.size(), want32.size());
  const std::size_t h = got.size() / texts.size();
  int64_t tokens = 0, short_rows = 0, long_rows = 0;
  for (std::size_t r = 0; r < texts.size(); ++r) {
    const int64_t n = routed->ElementWeight(Value::String(texts[r]));
    tokens += n;
    const double to32 = Distance(got, want32, r, h), to8 = Distance(got, want8, r, h);
    if (n <= 8) {
      ++short_rows;
      EXPECT_LT(to32, to8) << "row " << r << " (" << n << " tokens) should be float32's";
    } else {
      ++long_rows;
      EXPECT_LT(to8, to32) << "row " << r << " (" << n << " tokens) should be int8's";
    }
  }
  EXPECT_GT(short_rows, 5);
  EXPECT_GT(long_rows, 5);
  auto figures = FiguresByName(*routed);
  EXPECT_EQ(figures["batch_tokens"], std::vector<int64_t>{tokens});
}

TEST(SentenceEmbeddingHandler, ThePrecisionKeysAreChecked) {
  for (auto [key, v] : std::vector<std::pair<std::string, Value>>{{"min_cosine", Value::Float(0)},
                                                                  {"min_cosine", Value::Float(1.5)},
                                                                  {"min_cosine", Value::String("high")},
                                                                  {"precision_check_every", Value::Int(-1)},
                                                                  {"precision_check_every", Value::Float(0.5)}}) {
    ModelHandlerOptions o = Options(Value::String("auto"));
    o.extra = Row(std::vector<Field>{{key, v}});
    auto h = MakeModelHandler(kSentenceEmbeddingHandlerType, o);
    ASSERT_FALSE(h.ok()) << key << " " << v.ToJson();
    EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(h.status().message(), HasSubstr("'" + key + "'"));
  }
}

}  // namespace bert_precision_test
}  // namespace dfw
