// DeviceDecoder: a decoder-only transformer's whole forward step run by a backend, so the step's
// embedding, norms, RoPE, attention, the MLP and the LM head stay where the backend computes
// (InferenceBackend::CreateDecoder makes one). Every backend a decoder runs on implements it: the
// CUDA backend on the GPU (src/backend/cuda/decoder_cuda.cc), the CPU backend in host memory over its
// own products and row kernels (src/backend/cpu/cpu_decoder.cc).
//
// The caller (DecoderModel, dfw/inference/decoder_model.h) reads the checkpoint and keeps the
// KV-cache bookkeeping: which blocks each sequence owns (PagedKvCache, block ids only). The decoder
// owns the weights (a device copy, or on the CPU the host weights handed over in the spec) and the
// KV memory: a pool of blocks indexed by those block ids, each laid out
// [layer][K|V][kv_head][kDeviceKvBlockTokens tokens][head_dim] float32.
//
// Numerics (the CPU decoder's are the reference): float32 activations and accumulation; RMSNorm /
// LayerNorm, rotate-half RoPE at each row's position, causal and sliding-window attention with
// soft-capping, grouped-query heads, SwiGLU / GeGLU / GELU. Greedy output of the CUDA decoder
// matches the CPU's up to the rounding of a different summation order.
//
// This header needs no CUDA header: the spec is plain data and host pointers.
//
// Threading: one thread at a time per decoder (it owns scratch buffers, and on CUDA a stream).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/backend/backend.h"
#include "dfw/common/status.h"

namespace dfw {

// Tokens per KV-cache block; PagedKvCache::kBlockTokens is this value.
inline constexpr int kDeviceKvBlockTokens = 16;

// The MLP's activation (of the gate for gated MLPs, of the whole up projection for GPT-2).
enum class DecoderGateActivation : uint8_t {
  kSilu,      // x · sigmoid(x) (SwiGLU)
  kGeluTanh,  // gelu_new / gelu_pytorch_tanh (GeGLU, GPT-2)
  kGelu,      // exact erf GELU
};

// One layer's weights: host float32, row-major, nn.Linear layout [out x in]. Biases and norms
// that the model does not have are nullptr.
struct DecoderLayerWeights {
  const float* norm1_w = nullptr;  // input_layernorm / ln_1 [hidden]
  const float* norm1_b = nullptr;  // gpt2 ln_1 bias
  const float* norm2_w = nullptr;  // post_attention_layernorm / ln_2 (gemma2: after attention)
  const float* norm2_b = nullptr;  // gpt2 ln_2 bias
  const float* pre_ff_w = nullptr;   // gemma2 pre_feedforward_layernorm
  const float* post_ff_w = nullptr;  // gemma2 post_feedforward_layernorm
  const float* qkv = nullptr;    // [(heads + 2 kv_heads) · head_dim x hidden]: q, k, v stacked
  const float* qkv_b = nullptr;  // [(heads + 2 kv_heads) · head_dim]
  const float* o = nullptr;      // [hidden x heads · head_dim]
  const float* o_b = nullptr;
  const float* up = nullptr;     // [2 · intermediate x hidden]: gate then up (gpt2: [intermediate x hidden])
  const float* up_b = nullptr;
  const float* down = nullptr;   // [hidden x intermediate]
  const float* down_b = nullptr;
};

// What the forward step needs of the model: sizes and switches (DecoderConfig's, read on the host)
// and host pointers to the weights. The pointers are valid until CreateDecoder returns, and after
// for as long as `host_weights_owner` is held: a decoder that copies the weights (CUDA) keeps
// neither; one that reads them in place (CPU) keeps the owner, and refuses a spec without one.
struct DecoderSpec {
  bool gpt2 = false;  // learned positions, LayerNorm with bias, no RoPE, ungated MLP
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int max_positions = 0;  // gpt2: rows of `positions`
  float norm_eps = 1e-6f;
  bool norm_plus_one = false;     // RMSNorm weight applied as (1 + w) (gemma)
  bool scale_embeddings = false;  // embeddings × √hidden_size (gemma)
  DecoderGateActivation act = DecoderGateActivation::kSilu;
  bool sandwich_norms = false;  // gemma2: norm after attention and pre/post feed-forward norms
  float query_scale = 0;          // attention scores are q·k × query_scale
  float attn_logit_softcap = 0;   // scores → cap · tanh(scores / cap); 0 = off
  float final_logit_softcap = 0;  // logits → cap · tanh(logits / cap); 0 = off
  int sliding_window = 0;         // a query at i sees keys j with i - window < j <= i on sliding layers
  std::vector<uint8_t> sliding;   // per layer: 1 where the window applies
  std::vector<float> inv_freq;    // head_dim / 2 RoPE inverse frequencies, scaling applied (empty for gpt2)
  // The products' precision: float32, or bfloat16 weights and activations with float32
  // accumulation (the backend's CheckLinearDType decides whether it runs).
  LinearDType linear_dtype = LinearDType::kFloat32;
  // Steps of at most this many rows (decode) run their products on the streaming kernels
  // (dfw/backend/skinny_kernels.h; bfloat16 weights when linear_dtype is kBFloat16), larger ones
  // (prefill) on the backend's Linear; 0: always the Linear. The CPU decoder's switch; CUDA ignores it.
  int skinny_rows = 8;
  // Keeps the host weights below alive: a decoder that uses them in place (CPU) keeps it, one that
  // copies them (CUDA) may drop it, so they are freed once uploaded.
  std::shared_ptr<const void> host_weights_owner;

  const float* embed = nullptr;      // [vocab x hidden]
  const float* positions = nullptr;  // gpt2: [max_positions x hidden]
  const float* final_norm_w = nullptr;
  const float* final_norm_b = nullptr;  // gpt2
  const float* lm_head = nullptr;       // [vocab x hidden] (the embedding when tied)
  std::vector<DecoderLayerWeights> layers;
};

// Checks a spec's sizes and pointers (what any implementation relies on): kInvalidArgument
// naming the first field that is wrong.
Status ValidateDecoderSpec(const DecoderSpec& spec);

// One token of one sequence in a step. `table` indexes the step's DeviceBlockTables.
struct DeviceStepRow {
  int32_t token = 0;
  int32_t position = 0;  // 0-based position in its sequence
  int32_t table = 0;     // which block table (one per sequence in the step)
  bool logits = false;   // compute next-token logits from this row
};

// The block tables of a step's sequences: table t is block_ids[offsets[t], offsets[t + 1]), block
// i of it holding positions [16 i, 16 i + 16). offsets has one entry more than there are tables.
struct DeviceBlockTables {
  std::span<const int32_t> offsets;
  std::span<const int32_t> block_ids;
  int pool_blocks = 0;  // the most blocks the host cache hands out: every id is below it
};

// Checks a step as every engine needs it (DeviceDecoder::Step's contract): the tables' offsets
// span block_ids and never decrease, every id is below pool_blocks, and each row names a table
// that covers its position, a token of the vocabulary and (GPT-2) a position it has.
// kInvalidArgument naming `engine` ("cpu decoder") and the first thing that is wrong.
Status ValidateDecoderStep(std::string_view engine, const DecoderSpec& spec, std::span<const DeviceStepRow> rows,
                           const DeviceBlockTables& tables);

class DeviceDecoder {
 public:
  virtual ~DeviceDecoder() = default;

  // Runs `rows` through the model, as DecoderModel::Step does: each row's table covers its
  // position; the rows of one sequence come in position order, every earlier position already in
  // the pool or earlier in this step. Writes the rows' K/V into the pool blocks their tables
  // name, and appends vocab_size float32 logits per row with `logits` set (in row order) to
  // `logits`, on the host. Pool memory is allocated in slabs of 64 blocks (the last one cut to
  // pool_blocks) the first time a table names an id in them: PagedKvCache hands out ids densely
  // from 0, so the pool grows as the host cache fills. Pool blocks hold no state between steps
  // beyond what the rows wrote: one host cache at a time may drive a decoder. Tables that do not
  // span their ids, a row naming a table that is not there, a position its table does not cover,
  // a token outside the vocabulary or an id outside [0, pool_blocks): kInvalidArgument, nothing run.
  virtual Status Step(std::span<const DeviceStepRow> rows, const DeviceBlockTables& tables, std::vector<float>& logits) = 0;

  // Bytes of weights the decoder holds (CUDA: its device copies, in the products' precision; CPU:
  // the float32 host weights it reads, each tensor once), and of KV pool allocated so far.
  virtual int64_t weight_bytes() const = 0;
  virtual int64_t kv_pool_bytes() const = 0;
  // One line for the log: the engine, its device and the products' precision.
  virtual std::string description() const = 0;
};

}  // namespace dfw
