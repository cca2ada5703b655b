// SentenceEmbeddingHandler: text rows → WordPiece ids → BertEncoder → pooled embeddings.
#include "dfw/inference/sentence_embedding_handler.h"

#include "dfw/common/file.h"
#include "dfw/inference/sentence_transformers_dir.h"
#include "inference/handlers/sentence_embedding_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "dfw/backend/cpu_isa.h"
#include "dfw/backend/registry.h"
#include "dfw/common/test_hooks.h"
#include "dfw/inference/bert_encoder.h"
#include "dfw/inference/calibration_text.h"
#include "dfw/inference/device_memory.h"
#include "dfw/inference/precision_choice.h"
#include "dfw/inference/precision_monitor.h"
#include "dfw/inference/safetensors.h"
#include "dfw/tokenizers/wordpiece_tokenizer.h"

namespace dfw {
namespace {

using sentence_embedding::kEncodeBatch;
using sentence_embedding::Settings;

// Token-count buckets `dtype: auto` chooses per (precision_choice.h): 1-8 tokens (a word or a few
// punctuation marks with [CLS]/[SEP], where those dominate the mean: all-MiniLM-L6-v2 in int8 gave
// `?` 0.9925 and `!?!?`, 6 tokens, 0.9941), 9-16, 17-64, 65 and more.
const std::vector<int> kPrecisionBuckets = {8, 16, 64};
// Bumped when the calibration rows, the bucket rule or the backend's int8 scheme change, so that
// cached decisions are remade (4: pair-bounded int8 weights where the CPU has no VNNI).
constexpr int kCalibrationVersion = 4;

Status Bad(const std::string& key, const Value& v, const std::string& allowed) {
  return InvalidArgument("model_handler " + std::string(kSentenceEmbeddingHandlerType) + " config '" + key + "': " +
                         v.ToJson() + " is not allowed; " + allowed);
}

Result<Settings> ReadSettings(const ModelHandlerOptions& o) {
  ASSIGN_OR_RETURN(BertConfig config, BertConfig::Load(o.model_path + "/config.json"));
  ASSIGN_OR_RETURN(WordPieceTokenizer tokenizer, WordPieceTokenizer::Load(o.model_path));
  Settings s{o.model_path, config, std::move(tokenizer), {}, std::nullopt, {}, sentence_embedding::kDefaultCheckEvery};
  if (s.tokenizer.vocab_size() != static_cast<std::size_t>(s.config.vocab_size)) {
    return InvalidArgument("'" + s.dir + "/vocab.txt' has " + std::to_string(s.tokenizer.vocab_size()) +
                           " tokens but config.json says vocab_size " + std::to_string(s.config.vocab_size));
  }
  BertEncoderOptions& e = s.encoder;
  e.max_batch = kEncodeBatch;
  e.max_seq_length = s.config.max_position_embeddings;
  const SentenceTransformersDir st = ReadSentenceTransformersDir(s.dir);
  if (st.max_seq_length) e.max_seq_length = std::min(e.max_seq_length, *st.max_seq_length);
  if (st.pooling == SentenceTransformersDir::Pooling::kCls) e.pooling = Pooling::kCls;
  const std::string max_allowed = std::to_string(s.config.max_position_embeddings);
  for (const Field& f : o.extra.fields()) {
    const Value& v = f.value;
    if (f.name == "max_seq_length") {
      if (!v.is_int() || v.as_int() < 2 || v.as_int() > s.config.max_position_embeddings) {
        return Bad(f.name, v, "allowed: an integer in [2, " + max_allowed + "] (the model's max_position_embeddings)");
      }
      e.max_seq_length = static_cast<int>(v.as_int());
    } else if (f.name == "pooling") {
      if (!v.is_string() || (v.as_string() != "mean" && v.as_string() != "cls")) return Bad(f.name, v, "allowed: mean, cls");
      e.pooling = v.as_string() == "cls" ? Pooling::kCls : Pooling::kMean;
    } else if (f.name == "normalize") {
      if (!v.is_bool()) return Bad(f.name, v, "allowed: true, false");
      e.normalize = v.as_bool();
    } else if (f.name == "dtype") {
      if (!v.is_string()) return Bad(f.name, v, "allowed: auto, float32, bfloat16, int8");
      if (v.as_string() != "auto") {
        auto d = ParseLinearDType(v.as_string());
        if (!d.ok()) return Bad(f.name, v, "allowed: auto, float32, bfloat16, int8");
        s.dtype = *d;
      }
    } else if (f.name == "min_cosine") {
      const double x = v.is_int() ? static_cast<double>(v.as_int()) : v.is_float() ? v.as_float() : -1;
      if (!(x > 0 && x <= 1)) return Bad(f.name, v, "allowed: a number in (0, 1], the cosine to float32 every row keeps");
      s.tolerance.min_cosine_bf16 = s.tolerance.min_cosine_int8 = x;
    } else if (f.name == "precision_check_every") {
      if (!v.is_int() || v.as_int() < 0 || v.as_int() > 1000000) {
        return Bad(f.name, v, "allowed: an integer in [0, 1000000] (one batch in N recomputed in float32; 0: none)");
      }
      s.check_every = static_cast<int>(v.as_int());
    }
  }
  return s;
}

class SentenceEmbeddingHandler final : public ModelHandler {
 public:
  SentenceEmbeddingHandler(ModelHandlerOptions options, Settings s) : ModelHandler(std::move(options)), s_(std::move(s)) {}
  std::string_view type() const override { return kSentenceEmbeddingHandlerType; }

  // BertEncoder::AllocateWorkspace's device buffers for its sub-batch of kEncodeBatch sequences of
  // max_seq_length tokens (whatever the batch size: longer batches are encoded in sub-batches).
  // A sentence costs milliseconds (all-MiniLM-L6-v2: 1.7 GFLOP at 128 tokens), so messages carry one
  // encode sub-batch: beyond what the batcher holds (up to max_batch_size rows, collected across
  // messages) a bundle stays unread, and splittable, while its first batch computes. With whole-bundle
  // messages nothing is ever left to split (docs/rebalancing.md).
  int64_t MaxMessageRows() const override { return kEncodeBatch; }
  // Batches cut from kEncoderSortWindow rows sorted by tokens, whatever max_batch_size is.
  int64_t SortWindow() const override { return kEncoderSortWindow; }

  // What `dtype: auto` chose (the first lane measures or reads the job's cache; the others reuse it).
  std::optional<PrecisionChoice> precision() const {
    std::lock_guard<std::mutex> lock(mu_);
    return choice_;
  }

  std::optional<WorkspaceEstimate> EstimateWorkspace() const override {
    const uint64_t b = kEncodeBatch, seq = static_cast<uint64_t>(s_.encoder.max_seq_length);
    const uint64_t h = static_cast<uint64_t>(s_.config.hidden_size), heads = static_cast<uint64_t>(s_.config.num_attention_heads);
    const uint64_t inter = static_cast<uint64_t>(s_.config.intermediate_size), tokens = b * seq;
    const uint64_t floats = 6 * tokens * h          // x, alt, ctx (hidden) + qkv (3 x hidden)
                            + b * heads * seq * seq  // attention scores
                            + tokens * inter         // feed-forward intermediate
                            + 2 * tokens + b * h;    // mask, pooling weights, pooled output
    WorkspaceEstimate e;
    e.bytes = floats * sizeof(float);
    e.how = "BERT sub-batch " + std::to_string(b) + " x " + std::to_string(seq) + " tokens: 6 x hidden " +
            std::to_string(h) + " + intermediate " + std::to_string(inter) + " per token, " + std::to_string(heads) +
            " heads x " + std::to_string(seq) + "^2 attention scores per sequence, x 4 B";
    return e;
  }

  // BertEncoder::Flops at max_seq_length: every sequence padded to it, so an upper bound when the
  // records are shorter (the handler truncates longer ones). Activations: the workspace's floats
  // per sequence, written and read once per layer.
  std::optional<WorkEstimate> EstimateWork() const override {
    WorkEstimate w;
    const int seq = s_.encoder.max_seq_length;
    // Longer batches are encoded in sub-batches of kEncodeBatch: the weights are read once per sub-batch.
    w.batch_size = std::min<int64_t>(kEncodeBatch, options().batching.max_batch_size.value_or(kEncodeBatch));
    w.default_efficiency = 0.4;
    w.flops_per_record = BertEncoder::Flops(s_.config, 1, seq);
    const double h = s_.config.hidden_size, inter = s_.config.intermediate_size, heads = s_.config.num_attention_heads;
    w.activation_bytes_per_record =
        2.0 * s_.config.num_hidden_layers * (6.0 * seq * h + heads * seq * seq + seq * inter) * sizeof(float);
    w.how = "BERT " + std::to_string(s_.config.num_hidden_layers) + " layers x " + std::to_string(seq) +
            " tokens (max_seq_length; shorter records cost less) x (8 H^2 + 4 H I + 4 S H), H " +
            std::to_string(s_.config.hidden_size) + ", I " + std::to_string(s_.config.intermediate_size);
    return w;
  }

  Result<std::unique_ptr<Model>> LoadModel(const ModelProcessContext& process) const override {
    ASSIGN_OR_RETURN(auto charge, DeviceMemoryCharge::Open(process));
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(s_.dir + "/model.safetensors"));
    RETURN_IF_ERROR(file->CheckFiniteTensors());
    std::unique_ptr<InferenceBackend> backend = MakeBackendForDevice();
    ASSIGN_OR_RETURN(auto encoder, BertEncoder::Make(s_.config, *file, backend.get(), s_.encoder));
    if (s_.dtype.has_value()) {
      RETURN_IF_ERROR(encoder->SetLinearDType(*s_.dtype).WithContext("model_handler config 'dtype'"));
    } else {
      RETURN_IF_ERROR(ChooseDType(*backend, *encoder));
    }
    std::shared_ptr<PrecisionPlanState> state = PlanState(*backend);
    return sentence_embedding::MakeModel(s_, std::move(file), std::move(backend), std::move(encoder), std::move(state),
                                         ModelId(), s_.dtype.has_value() ? std::nullopt : precision(), std::move(charge));
  }

 private:
  // The plan the lanes of this process share (and a run-time check may move to safer dtypes):
  // made by the first lane from the choice or the explicit dtype.
  std::shared_ptr<PrecisionPlanState> PlanState(const InferenceBackend& backend) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == nullptr) state_ = MakePrecisionPlanState(choice_, s_.dtype, s_.tolerance, backend.name());
    return state_;
  }

  // `dtype: auto`: per token-count bucket (kPrecisionBuckets), the fastest precision whose pooled
  // output keeps cosine >= 0.999 (bfloat16) / 0.995 (int8), or `min_cosine`, to float32 on every
  // calibration text of the bucket (precision_choice.h; timed on the 16 calibration sentences,
  // judged on CalibrationTexts()), measured once per model and CPU: by the first lane of this
  // process, or read from the job's cache beside the GEMM plan when another process measured it.
  Status ChooseDType(InferenceBackend& backend, BertEncoder& encoder) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (choice_.has_value()) return encoder.SetLinearDType(choice_->dtype);
    // Test hook (a -DDFW_TEST_HOOKS=ON build): DFW_TEST_PRECISION_BUCKETS="float32,int8,int8,int8"
    // takes that dtype per kPrecisionBuckets bucket instead of measuring, so a test can route rows.
    if (const auto forced = test_hooks::Get("PRECISION_BUCKETS")) {
      PrecisionChoice c;
      c.bucket_limits = kPrecisionBuckets;
      c.tolerance = s_.tolerance;
      for (std::size_t at = 0; at <= forced->size();) {
        const std::size_t comma = std::min(forced->find(',', at), forced->size());
        ASSIGN_OR_RETURN(LinearDType d, ParseLinearDType(forced->substr(at, comma - at)));
        c.bucket_dtypes.push_back(d);
        at = comma + 1;
      }
      if (c.bucket_dtypes.size() != kPrecisionBuckets.size() + 1) return InvalidArgument("DFW_TEST_PRECISION_BUCKETS: one dtype per bucket");
      c.dtype = c.bucket_dtypes.back();
      RETURN_IF_ERROR(encoder.SetLinearDType(c.dtype));
      choice_ = std::move(c);
      return Status::OK();
    }
    std::vector<std::vector<int32_t>> ids(CalibrationSentences().size()), all_ids(CalibrationTexts().size());
    std::vector<std::span<const int32_t>> seqs, all_seqs;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      RETURN_IF_ERROR(s_.tokenizer.Encode(CalibrationSentences()[i], s_.encoder.max_seq_length, ids[i]));
      seqs.emplace_back(ids[i]);
    }
    PrecisionProbe probe;
    for (std::size_t i = 0; i < all_ids.size(); ++i) {
      RETURN_IF_ERROR(s_.tokenizer.Encode(CalibrationTexts()[i], s_.encoder.max_seq_length, all_ids[i]));
      all_seqs.emplace_back(all_ids[i]);
      probe.row_tokens.push_back(static_cast<int>(all_ids[i].size()));
    }
    const int width = encoder.hidden_size();
    probe.width = width;
    probe.check = [&backend](LinearDType d) { return backend.CheckLinearDType(d); };
    probe.use = [&encoder](LinearDType d) { return encoder.SetLinearDType(d); };
    auto encode = [&encoder, width](const std::vector<std::span<const int32_t>>& rows) -> Result<std::vector<float>> {
      std::vector<float> out(rows.size() * static_cast<std::size_t>(width));
      RETURN_IF_ERROR(encoder.EncodeMany(rows, out, /*group_by_length=*/true));
      return out;
    };
    probe.run = [&]() { return encode(seqs); };
    probe.run_all = [&]() { return encode(all_seqs); };
    PrecisionChoiceOptions o;
    o.tolerance = s_.tolerance;
    o.bucket_limits = kPrecisionBuckets;
    o.cache_key = CacheKey(backend);
    const std::string name = "precision-" + std::to_string(std::hash<std::string>()(o.cache_key) % 1000000007u);
    if (const std::string base = CpuGemmPlanCache(); !base.empty()) {
      o.cache_path = base + "-" + name;
      if (const std::string user = UserCacheDir(); !user.empty()) o.shared_cache_path = user + "/" + name;
    }
    ASSIGN_OR_RETURN(PrecisionChoice choice, ChoosePrecision(probe, o));
    spdlog::info("model '{}' on {}: Linear layers in {}", ModelId(), backend.name(), choice.Describe());
    choice_ = std::move(choice);
    return Status::OK();
  }

  // What the decision depends on: the model files, the settings that shape the batch, the CPU and
  // the thread count.
  std::string CacheKey(const InferenceBackend& backend) const {
    struct stat st {};
    const std::string weights = s_.dir + "/model.safetensors";
    ::stat(weights.c_str(), &st);
    const CpuIsa& isa = DetectCpuIsa();
    return "model=" + weights + " bytes=" + std::to_string(st.st_size) + " mtime=" + std::to_string(st.st_mtime) +
           " max_seq=" + std::to_string(s_.encoder.max_seq_length) + " backend=" + std::string(backend.name()) +
           " cpu=" + isa.cpu_model + " isa=" + isa.Describe() + " threads=" + std::to_string(BlasThreads()) +
           fmt::format(" calibration={} buckets={} min_cosine={:.9g},{:.9g}", kCalibrationVersion,
                       fmt::join(kPrecisionBuckets, ","), s_.tolerance.min_cosine_bf16, s_.tolerance.min_cosine_int8);
  }

  Settings s_;
  mutable std::mutex mu_;
  mutable std::optional<PrecisionChoice> choice_;
  mutable std::shared_ptr<PrecisionPlanState> state_;
};

}  // namespace

const std::vector<std::string>& SentenceEmbeddingHandlerKeys() {
  static const std::vector<std::string> keys = {"max_seq_length", "pooling", "normalize", "dtype", "min_cosine",
                                                "precision_check_every"};
  return keys;
}

Result<std::unique_ptr<ModelHandler>> MakeSentenceEmbeddingHandler(ModelHandlerOptions options) {
  ASSIGN_OR_RETURN(Settings s, ReadSettings(options));
  // Shapes checked now, before any record is read, from the header alone: no weight byte is read
  // and no backend made (the launcher makes this handler to plan).
  ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(s.dir + "/model.safetensors"));
  RETURN_IF_ERROR(BertEncoder::CheckWeights(s.config, *file));
  // An explicit dtype this CPU cannot run is an invalid configuration (exit 2), found now rather
  // than when the first SDK process loads the model. (On a GPU the CUDA backend runs float32.)
  if (s.dtype.has_value() && options.device == "CPU") {
    if (Status ok = CheckLinearDTypeOn(DetectCpuIsa(), *s.dtype); !ok.ok()) {
      return InvalidArgument("model_handler " + std::string(kSentenceEmbeddingHandlerType) + " config 'dtype': '" +
                             std::string(LinearDTypeName(*s.dtype)) + "' cannot run here: " + ok.message());
    }
  }
  auto handler = std::make_unique<SentenceEmbeddingHandler>(std::move(options), std::move(s));
  handler->set_header_loaded_bytes(file->header().loaded_bytes());
  return std::unique_ptr<ModelHandler>(std::move(handler));
}

}  // namespace dfw
