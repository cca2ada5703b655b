// ModernBertEncoder: a Hugging Face ModernBertModel (config.json model_type "modernbert" +
// model.safetensors), the last hidden state of every token, for HuggingFacePipelineModelHandler.
//
// Forward pass (transformers' modeling_modernbert.py), per batch padded to its longest sequence:
//   x = LayerNorm(tok_embeddings[id])                                  (no position embeddings)
//   per layer i: a = i == 0 ? x : LayerNorm(x); q, k, v = a·Wqkvᵀ (+b);
//                q, k rotated by RoPE at positions 0..S-1 (theta: global_rope_theta on full-attention
//                layers, local_rope_theta on sliding ones; pairs (j, j + d/2) as rotate_half);
//                softmax(q·kᵀ/√d + mask) with the padding masked and, on a sliding layer, every key
//                farther than local_attention / 2 from the query; x += ctx·Woᵀ (+b);
//                u, g = halves of LayerNorm(x)·Wiᵀ (+b); x += (act(u) ⊙ g)·Woᵀ (+b)   (GeGLU)
//   x = LayerNorm(x) (final_norm); LayerNorms have no bias unless norm_bias.
// The four products run on the CPU backend's Linear (its GEMM path, float32 / bfloat16 / int8 as
// set); embeddings, norms, RoPE and attention run on the host in float32. It always runs on the
// CPU (the CUDA backend has no RoPE or sliding-window kernel); the handler says so.
//
// Threading: one thread at a time (it owns scratch buffers).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"
#include "dfw/inference/bert_encoder.h"

namespace dfw {

class SafetensorsFile;

class ModernBertEncoder final : public TokenEncoder {
 public:
  // `config.family` must be kModernBert. Reads the F32 weights (names as transformers saves them,
  // with or without the "model." prefix of a model with a head); a missing tensor, a non-F32 one or
  // a shape that disagrees with `config` is kInvalidArgument naming it. `backend` must be a CPU
  // backend and outlive the encoder. Sequences are at most `max_seq_length` tokens.
  static Result<std::unique_ptr<ModernBertEncoder>> Make(const BertConfig& config, const SafetensorsFile& weights,
                                                         InferenceBackend* backend, int max_seq_length,
                                                         LinearDType dtype = LinearDType::kFloat32);
  // Make's checks from the header alone (no weight byte read, no backend).
  static Status CheckWeights(const BertConfig& config, const SafetensorsFile& weights);
  ~ModernBertEncoder() override;

  Status EncodeTokens(std::span<const std::span<const int32_t>> sequences,
                      std::span<const std::span<const int32_t>> type_ids, std::vector<float>& out, int& seq) override;
  Status SetLinearDType(LinearDType dtype) override;
  LinearDType linear_dtype() const override { return dtype_; }
  int64_t weight_bytes() const override { return weight_bytes_; }
  uint64_t workspace_bytes() const override;
  EncoderTokenCounts token_counts() const override { return tokens_; }
  int tokens_per_call() const override { return backend_->EncoderTokensPerCall(2 * config_.intermediate_size); }

  // Multiply-adds ×2 of one forward pass over `batch` sequences padded to `seq` tokens.
  static double Flops(const BertConfig& c, int batch, int seq);

 private:
  struct Layer {
    const float *attn_norm_g = nullptr, *attn_norm_b = nullptr;  // absent on layer 0
    const float *wqkv = nullptr, *bqkv = nullptr, *wo = nullptr, *bo = nullptr;
    const float *mlp_norm_g = nullptr, *mlp_norm_b = nullptr;
    const float *wi = nullptr, *bi = nullptr, *wo2 = nullptr, *bo2 = nullptr;
    std::unique_ptr<PreparedLinear> qkv, out, in, mlp_out;
  };
  ModernBertEncoder(BertConfig config, InferenceBackend* backend, int max_seq_length);
  Status LoadWeights(const SafetensorsFile& weights, bool shapes_only);

  BertConfig config_;
  InferenceBackend* backend_ = nullptr;
  int max_seq_length_ = 0;
  LinearDType dtype_ = LinearDType::kFloat32;
  int64_t weight_bytes_ = 0;
  std::vector<std::vector<float>> owned_;  // the weights, copied out of the file (aligned)
  const float *tok_emb_ = nullptr, *emb_norm_g_ = nullptr, *emb_norm_b_ = nullptr;
  const float *final_norm_g_ = nullptr, *final_norm_b_ = nullptr;
  std::vector<Layer> layers_;
  // RoPE tables [position][head_dim / 2], for full and sliding layers.
  std::vector<float> cos_full_, sin_full_, cos_local_, sin_local_;
  EncoderTokenCounts tokens_;
  std::vector<float> x_, a_, qkv_, ctx_, o_, wi_, g_, scores_;  // scratch
};

}  // namespace dfw
