// BertEncoder: a Hugging Face BertModel (config.json + model.safetensors) run on an
// InferenceBackend, pooled into one embedding per sequence (sentence-transformers style).
//
// Forward pass, all on the backend except the embedding-table gather (host → one upload):
//   x = LayerNorm(word_emb[id] + pos_emb[s] + type_emb[0])
//   per layer: qkv = x·Wqkvᵀ + b (one fused GEMM); per head, scores = q·kᵀ (GemmStridedBatched),
//              softmax(scores/√d + mask); ctx = p·v; x = LayerNorm(ctx·Woᵀ + bo + x);
//              h = GELU(x·Wiᵀ + bi); x = LayerNorm(h·Wo2ᵀ + bo2 + x)
//   pooling: masked mean or [CLS] (one strided-batched GEMM with per-token weights); optional L2
//   normalisation on the host.
// A batch is padded to its longest sequence; workspace buffers are sized once for
// max_batch × max_seq_length, so Encode() allocates nothing.
//
// Threading: a BertEncoder owns scratch buffers and uses its backend; one thread at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"

namespace dfw {

class SafetensorsFile;

// The encoder families that share this encoder (one graph, small switches): they differ in
// config.json's field names, the tensor names, token-type embeddings and position ids
// (encoder_families.cc).
enum class EncoderFamily : uint8_t {
  kBert,        // model_type "bert"
  kDistilBert,  // "distilbert": no token-type embeddings, its own config and tensor names
  kRoberta,     // "roberta", "xlm-roberta": BERT's layout, positions start at pad_token_id + 1
  kModernBert,  // "modernbert": its own encoder (ModernBertEncoder, dfw/inference/modernbert_encoder.h)
};

// What config.json says of a ModernBERT model beyond the shared sizes (ModernBertConfig).
struct ModernBertFields {
  bool norm_bias = false, attention_bias = false, mlp_bias = false, classifier_bias = false, decoder_bias = true;
  float global_rope_theta = 160000.f, local_rope_theta = 10000.f;
  int local_attention = 128;       // the whole window: a token sees those within local_attention / 2
  std::vector<uint8_t> sliding;    // per layer: 1 = sliding-window (local) attention, 0 = full
  bool mean_pooling = false;       // classifier_pooling: "mean" (else "cls")
  Activation classifier_act = Activation::kGelu;
};

// The fields of config.json the encoder uses (BertModel and the families above).
struct BertConfig {
  EncoderFamily family = EncoderFamily::kBert;
  std::string model_type = "bert";  // as config.json says it
  std::string architecture;         // architectures[0] ("BertForMaskedLM", …); "" when not given
  // Position id of the first token (RoBERTa: padding_idx + 1); the table has
  // max_position_embeddings rows, so sequences are at most max_position_embeddings - position_offset.
  int position_offset = 0;
  int vocab_size = 0;
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int intermediate_size = 0;
  int max_position_embeddings = 0;
  int type_vocab_size = 0;  // 0: no token-type embeddings (DistilBERT)
  float layer_norm_eps = 1e-12f;
  Activation hidden_act = Activation::kGelu;  // "gelu", "gelu_new"/"gelu_pytorch_tanh", "relu"
  ModernBertFields modern;                    // family kModernBert only

  // Parses config.json text; `origin` names the file in errors. An unsupported model_type,
  // architecture, activation or position_embedding_type is kInvalidArgument naming the value and
  // what is supported; so are missing or non-positive sizes and hidden_size % heads != 0.
  static Result<BertConfig> Parse(const std::string& json_text, const std::string& origin);
  static Result<BertConfig> Load(const std::string& path);
};

enum class Pooling : uint8_t { kMean, kCls };

// Tokens through an encoder since it was made: the sequences' own (`real`) and as computed, every
// sequence padded to its sub-batch's longest (`computed`); 1 - real / computed is the share of the
// work spent on padding.
struct EncoderTokenCounts {
  int64_t real = 0;
  int64_t computed = 0;
  double flops = 0;  // the forward passes' arithmetic, padding included
};

// What the HF pipeline handler needs of an encoder: the last hidden state of every token, its
// precision, and its figures. BertEncoder (BERT, DistilBERT, RoBERTa, XLM-R) and ModernBertEncoder.
class TokenEncoder {
 public:
  virtual ~TokenEncoder() = default;
  // `out` = sequences.size() × `seq` × hidden floats, `seq` the longest sequence (padding rows
  // unspecified); `type_ids` empty or one segment-id sequence per sequence.
  virtual Status EncodeTokens(std::span<const std::span<const int32_t>> sequences,
                              std::span<const std::span<const int32_t>> type_ids, std::vector<float>& out, int& seq) = 0;
  virtual Status SetLinearDType(LinearDType dtype) = 0;
  virtual LinearDType linear_dtype() const = 0;
  virtual int64_t weight_bytes() const = 0;
  virtual uint64_t workspace_bytes() const = 0;
  virtual EncoderTokenCounts token_counts() const = 0;
  // The most tokens (sequences x their padded length) a call should carry: the backend's
  // EncoderTokensPerCall for this model's widest activation (SubBatchSize cuts by it).
  virtual int tokens_per_call() const = 0;
};

// The size of the next sub-batch of `count` sequences from `first`: at most `max_batch`, and as
// many as keep their number x the longest of them (length_of(i): sequence i's tokens) within
// `max_tokens`; always at least one. With the sequences in ascending length (the callers sort) the
// sub-batches pad little.
template <typename LengthOf>
std::size_t SubBatchSize(std::size_t first, std::size_t count, std::size_t max_batch, std::size_t max_tokens,
                         LengthOf length_of) {
  std::size_t n = 1, longest = length_of(first);
  while (n < max_batch && first + n < count) {
    const std::size_t next = std::max<std::size_t>(longest, length_of(first + n));
    if ((n + 1) * next > max_tokens) break;
    longest = next;
    ++n;
  }
  return n;
}

struct BertEncoderOptions {
  // Largest number of sequences per Encode() call (workspace is sized for it).
  int max_batch = 32;
  // EncodeMany's sub-batches carry at most this many tokens (sequences x the longest of them; one
  // sequence at least); 0: what the backend asks (InferenceBackend::EncoderTokensPerCall).
  int max_tokens = 0;
  // Longest sequence in tokens, [CLS]/[SEP] included; at most max_position_embeddings.
  int max_seq_length = 128;
  // kMean: average of the token vectors under the attention mask (sentence-transformers'
  // default); kCls: the [CLS] token's vector.
  Pooling pooling = Pooling::kMean;
  // Divide each embedding by its L2 norm.
  bool normalize = true;
  // The precision of the four Linear layers per encoder layer (QKV, attention output, the two
  // feed-forward ones); attention scores and context, softmax, LayerNorm and GELU stay float32.
  // The backend must run it (InferenceBackend::CheckLinearDType).
  LinearDType linear_dtype = LinearDType::kFloat32;
};

class BertEncoder final : public TokenEncoder {
 public:
  // Reads the weights from `weights` (HF names, an optional "bert." prefix, F32) and uploads
  // them to `backend` (which must outlive the encoder; `weights` too, since the CPU backend uses
  // the mapping in place). A missing tensor, a non-F32 tensor or a shape that disagrees with
  // `config` is kInvalidArgument naming the tensor, its shape and the expected one.
  static Result<std::unique_ptr<BertEncoder>> Make(const BertConfig& config, const SafetensorsFile& weights,
                                                   InferenceBackend* backend, BertEncoderOptions options);
  // Make's weight checks from the header alone: every tensor present, F32, with the shape
  // `config` gives, the same errors word for word. No weight byte is read and no backend made
  // (what a handler runs when it is made, in the launcher and before a model loads).
  static Status CheckWeights(const BertConfig& config, const SafetensorsFile& weights);
  ~BertEncoder() override;

  // Embeds `sequences` (token ids from WordPieceTokenizer::Encode, each 1..max_seq_length ids,
  // ids < vocab_size) into `out` (sequences.size() × hidden_size floats, row-major).
  // More than max_batch sequences, an empty or over-long sequence or an out-of-range id is
  // kInvalidArgument (checked before any compute).
  Status Encode(std::span<const std::span<const int32_t>> sequences, std::span<float> out);

  // Embeds any number of sequences, max_batch at a time. With `group_by_length` the sequences are
  // first ordered by length (stable), so each sub-batch pads to a similar length; results are
  // written in the input order either way. Same errors as Encode().
  Status EncodeMany(std::span<const std::span<const int32_t>> sequences, std::span<float> out,
                    bool group_by_length = true);

  // The last hidden state of every token (no pooling), for the heads and the feature-extraction
  // task: `out` is resized to sequences.size() × `seq` × hidden_size floats, `seq` being the
  // longest sequence (shorter ones are padded; their padding rows are unspecified). `type_ids`,
  // when not empty, has one segment-id sequence per sequence, each as long as it and below
  // type_vocab_size (empty: segment 0). Same errors as Encode.
  Status EncodeTokens(std::span<const std::span<const int32_t>> sequences,
                      std::span<const std::span<const int32_t>> type_ids, std::vector<float>& out, int& seq) override;

  // Re-prepares every Linear layer's weights in `dtype` (BertEncoderOptions::linear_dtype); on an
  // error the encoder keeps its previous dtype.
  Status SetLinearDType(LinearDType dtype) override;
  LinearDType linear_dtype() const override { return options_.linear_dtype; }

  const BertConfig& config() const { return config_; }
  const BertEncoderOptions& options() const { return options_; }
  int hidden_size() const { return config_.hidden_size; }
  // Bytes of weights uploaded to the backend.
  int64_t weight_bytes() const override { return weight_bytes_; }
  // Bytes of the device workspace buffers it allocated (sized once for max_batch x max_seq_length).
  uint64_t workspace_bytes() const override;
  // Tokens through the encoder since it was made: the sequences' own (`real`) and as computed,
  // every sequence padded to its sub-batch's longest (`computed`); 1 - real / computed is the
  // share of the work spent on padding.
  using TokenCounts = EncoderTokenCounts;  // flops: Flops() of every forward pass
  TokenCounts token_counts() const override { return tokens_; }
  int tokens_per_call() const override {
    return options_.max_tokens > 0 ? options_.max_tokens : backend_->EncoderTokensPerCall(config_.intermediate_size);
  }
  // Multiply-adds ×2 of one forward pass over `batch` sequences padded to `seq` tokens.
  static double Flops(const BertConfig& c, int batch, int seq);

 private:
  struct Layer {  // device pointers into weights_
    const float* qkv_w;  // [3H x H]: query, key, value rows stacked (one GEMM instead of three)
    const float* qkv_b;  // [3H]
    const float* attn_out_w;
    const float* attn_out_b;
    const float* attn_ln_g;
    const float* attn_ln_b;
    const float* inter_w;  // [I x H]
    const float* inter_b;
    const float* out_w;  // [H x I]
    const float* out_b;
    const float* out_ln_g;
    const float* out_ln_b;
    // The four weight matrices above, prepared for the backend in options_.linear_dtype.
    std::unique_ptr<PreparedLinear> qkv, attn_out, inter, out;
  };
  struct Workspace;
  BertEncoder(BertConfig config, BertEncoderOptions options, InferenceBackend* backend);
  Status LoadWeights(const SafetensorsFile& weights);
  Status AllocateWorkspace();
  Status RunLayer(const Layer& layer, int batch, int seq);
  // Checks, embeds and runs every layer: the last hidden state is in ws_->x; `seq` = longest.
  Status Forward(std::span<const std::span<const int32_t>> sequences,
                 std::span<const std::span<const int32_t>> type_ids, int& seq);
  // The name `bert_name` (BertModel's, without prefix) has in this family's checkpoint.
  std::string TensorName(const std::string& prefix, const std::string& bert_name) const;

  BertConfig config_;
  BertEncoderOptions options_;
  InferenceBackend* backend_;
  int64_t weight_bytes_ = 0;
  // Host copies of the embedding tables (the gather runs on the host).
  const float* word_emb_ = nullptr;
  const float* pos_emb_ = nullptr;
  const float* type_emb_ = nullptr;
  std::vector<std::vector<float>> owned_host_;  // realigned copies of unaligned tensors
  bool shapes_only_ = false;  // CheckWeights: LoadWeights checks each tensor and reads none
  std::vector<std::unique_ptr<DeviceBuffer>> weights_;
  const float* emb_ln_gamma_ = nullptr;
  const float* emb_ln_beta_ = nullptr;
  std::vector<Layer> layers_;
  std::unique_ptr<Workspace> ws_;
  TokenCounts tokens_;
  // EncodeMany scratch, kept to avoid allocating per call.
  std::vector<std::size_t> order_;
  std::vector<std::span<const int32_t>> chunk_;
  std::vector<float> chunk_out_;
};

// The encoder handlers' batch figures (Model::BatchFigures) for the last batch, from the encoder's
// counts before it: "batch_tokens" (the texts' own), "batch_computed_tokens" (with padding) and
// "batch_kflop" (the forward passes' arithmetic, in thousands), so 1 - sum(batch_tokens) /
// sum(batch_computed_tokens) is the run's padding share and sum(batch_kflop) over the summed
// batch latency its achieved FLOP/s (report, bench).
std::vector<std::pair<std::string, int64_t>> TokenFigures(const TokenEncoder& encoder, EncoderTokenCounts before);

// Rows the encoder handlers pool per lane and sort by tokens before cutting batches
// (ModelHandler::SortWindow): eight encode sub-batches of 32, so a bundle's short and long texts
// meet in different sub-batches whatever max_batch_size is, while a bundle is read at most this
// far ahead of its inference (docs/rebalancing.md).
inline constexpr int64_t kEncoderSortWindow = 256;

}  // namespace dfw
