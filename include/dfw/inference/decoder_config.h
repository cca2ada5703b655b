// DecoderConfig: the config.json of a decoder-only (causal LM) Hugging Face model, as transformers
// reads it, for the families the text-generation engine runs:
//   llama    LlamaForCausalLM     RMSNorm, RoPE (rope_theta; rope_scaling linear / llama3),
//                                 grouped-query attention, SwiGLU, tie_word_embeddings,
//                                 attention_bias, mlp_bias, head_dim
//   qwen2    Qwen2ForCausalLM     llama + q/k/v bias, sliding window when use_sliding_window
//   mistral  MistralForCausalLM   llama + sliding_window
//   gemma    GemmaForCausalLM     embeddings × √hidden, RMSNorm (1 + w), GeGLU, explicit head_dim
//   gemma2   Gemma2ForCausalLM    gemma + attention / final logit soft-capping,
//                                 query_pre_attn_scalar, sandwich norms, sliding window on the
//                                 layers layer_types names
//   gpt2     GPT2LMHeadModel      learned positions, LayerNorm, gelu_new, Conv1D weights
// Anything else — an architecture, a rope_scaling type, an activation, an option that changes the
// computation — is kInvalidArgument naming it and what is supported: a model run with a switch
// silently ignored would generate plausible but wrong text.
//
// The memory arithmetic the plan needs (parameters, KV cache per token) lives here too, so the
// engine and `dfworker plan` count the same thing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

enum class DecoderFamily : uint8_t { kLlama, kQwen2, kMistral, kGemma, kGemma2, kGpt2 };
std::string_view DecoderFamilyName(DecoderFamily f);  // the model_type: "llama", "gpt2", …

enum class DecoderActivation : uint8_t { kSilu, kGeluTanh, kGelu };

struct RopeScaling {
  enum class Kind : uint8_t { kNone, kLinear, kLlama3 };
  Kind kind = Kind::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;    // llama3
  double high_freq_factor = 4.0;   // llama3
  int original_max_position_embeddings = 8192;  // llama3
};

struct DecoderConfig {
  DecoderFamily family = DecoderFamily::kLlama;
  std::string model_type;
  std::string architecture;  // architectures[0]
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int max_position_embeddings = 0;
  float norm_eps = 1e-6f;
  DecoderActivation act = DecoderActivation::kSilu;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;      // bias on q/k/v projections (qwen2; llama attention_bias)
  bool o_bias = false;        // bias on the output projection (llama attention_bias)
  bool mlp_bias = false;      // llama mlp_bias
  // Sliding-window attention: a query at position i sees keys j with i - window < j <= i, on the
  // layers where sliding[l] is true (window 0: none).
  int sliding_window = 0;
  std::vector<bool> sliding;  // per layer
  float attn_logit_softcap = 0;   // gemma2: scores → cap · tanh(scores / cap); 0 = off
  float final_logit_softcap = 0;  // gemma2: logits → cap · tanh(logits / cap)
  float query_scale = 0;          // scores are q·k × query_scale (1/√head_dim, gemma2: 1/√query_pre_attn_scalar)
  bool scale_embeddings = false;  // gemma: embeddings × √hidden_size
  bool norm_plus_one = false;     // gemma: RMSNorm weight applied as (1 + w)
  bool sandwich_norms = false;    // gemma2: pre/post feed-forward norms and a post-attention norm
  std::string torch_dtype = "float32";  // what the checkpoint says it was saved in
  // Token ids config.json names (-1: none); generation_config.json may override eos.
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;

  // Parameters of the model as saved (lm_head counted once when tied).
  uint64_t ParameterCount() const;
  // K and V of one token across every layer: layers × KV heads × head_dim × 2 × bytes_per_value.
  uint64_t KvBytesPerToken(uint64_t bytes_per_value) const {
    return static_cast<uint64_t>(num_layers) * static_cast<uint64_t>(num_kv_heads) *
           static_cast<uint64_t>(head_dim) * 2 * bytes_per_value;
  }
  // Bytes per value of torch_dtype (4 for float32, 2 for bfloat16/float16).
  uint64_t SavedBytesPerValue() const;

  static Result<DecoderConfig> Parse(std::string_view json_text, const std::string& origin);
  static Result<DecoderConfig> Load(const std::string& path);
};

// Whether config.json text names a decoder-only architecture (*ForCausalLM, GPT2LMHeadModel) or a
// decoder model_type, so the Hugging Face handler knows which reader to use. False for anything
// unparsable (the encoder reader then reports it).
bool LooksLikeDecoderConfig(std::string_view json_text);

// The architectures DecoderConfig accepts, for error messages.
const std::vector<std::string>& SupportedDecoderArchitectures();

}  // namespace dfw
