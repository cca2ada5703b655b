// DecoderModel: a decoder-only transformer (the DecoderConfig families) run one step at a time over
// a set of token rows from many sequences at once, with a paged KV cache.
//
// A step's rows may mix prompt chunks (prefill) and single next tokens (decode) of different
// sequences: every projection (q/k/v, o, gate/up, down, lm_head) is one product over all the step's
// rows, so weights are read once per step whatever the number of sequences — the point of
// continuous batching; attention is per row against that row's own sequence in the cache.
//
// Numerics follow transformers' float32 forward: RMSNorm / LayerNorm, RoPE (rotate-half, inverse
// frequencies with linear or llama3 scaling), grouped-query attention with causal and sliding-window
// masks, soft-capping, SwiGLU / GeGLU / GELU MLPs. Weights are read as saved (F32, F16, BF16),
// converted to float32 and handed to the backend's decoder engine, which runs every step (the CPU
// backend's in host memory, the CUDA backend's on the GPU); the Linear layers run in `linear_dtype`
// (float32, or bfloat16 / int8 where the backend has them).
//
// Threading: one thread at a time per model (its decoder engine owns scratch buffers).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dfw/backend/backend.h"
#include "dfw/backend/device_decoder.h"
#include "dfw/common/status.h"
#include "dfw/inference/decoder_config.h"
#include "dfw/inference/safetensors.h"

namespace dfw {

// Which KV-cache blocks every sequence owns, kBlockTokens tokens a block, taken from a pool of
// ids as sequences grow and returned when they end. The K/V themselves live in the decoder engine's
// pool, which these ids index (DeviceDecoder, dfw/backend/device_decoder.h; block layout
// [layer][K|V][kv_head][token in block][head_dim] float32): this is the bookkeeping alone, the
// pool's size arithmetic included, and allocates no K/V memory. Ids are handed out densely from 0
// (freed ones first), so the engine's pool grows as the cache fills.
class PagedKvCache {
 public:
  static constexpr int kBlockTokens = kDeviceKvBlockTokens;

  // A pool of as many blocks as fit in `max_bytes`.
  PagedKvCache(const DecoderConfig& config, uint64_t max_bytes);

  // A new empty sequence; its id indexes the block tables.
  int AddSequence();
  // Gives `seq` blocks for positions [0, tokens); false (nothing changed) when the pool is full.
  bool Reserve(int seq, int tokens);
  // Returns the sequence's blocks to the pool; the id is reused by a later AddSequence.
  void Release(int seq);

  // Blocks a sequence of `tokens` tokens needs, and the most the pool can ever hold.
  static int BlocksFor(int tokens) { return (tokens + kBlockTokens - 1) / kBlockTokens; }
  int max_blocks() const { return max_blocks_; }
  int free_blocks() const { return max_blocks_ - used_blocks_; }
  int capacity_tokens(int seq) const { return static_cast<int>(tables_[static_cast<std::size_t>(seq)].size()) * kBlockTokens; }
  uint64_t block_bytes() const { return block_floats_ * sizeof(float); }
  // The block ids of `seq`, block i holding positions [16 i, 16 i + 16). Valid until the next
  // Reserve or Release of `seq`.
  std::span<const int> blocks(int seq) const { return tables_[static_cast<std::size_t>(seq)]; }

 private:
  uint64_t block_floats_;
  int max_blocks_;
  int used_blocks_ = 0;
  std::vector<int> free_;  // block ids ready for reuse
  int next_block_ = 0;     // first id never handed out
  std::vector<std::vector<int>> tables_;
  std::vector<int> free_seqs_;
};

// One token of one sequence in a step.
struct DecoderRow {
  int seq = 0;       // PagedKvCache sequence id
  int position = 0;  // 0-based position in its sequence
  int32_t token = 0;
  bool logits = false;  // compute the next-token logits from this row
};

// The sizes, switches and RoPE inverse frequencies of `config` as a DeviceDecoder takes them (no
// weight pointers): what DecoderModel::Load hands InferenceBackend::CreateDecoder, with the weights.
DecoderSpec DecoderSpecFromConfig(const DecoderConfig& config, LinearDType linear_dtype);

class DecoderModel {
 public:
  // Reads and checks every tensor against `config` (names as transformers saves them), converts
  // them to float32 and hands them to `backend`'s decoder engine (InferenceBackend::CreateDecoder,
  // dfw/backend/device_decoder.h), which runs every step with its Linear layers in `linear_dtype`:
  // the CUDA backend's on the GPU (it copies the weights; the host ones are freed once uploaded),
  // the CPU backend's in host memory (it keeps the float32 weights and reads them in place). Steps
  // of at most `skinny_rows` rows (decode) run their products on the CPU backend's streaming kernels
  // (dfw/backend/skinny_kernels.h), larger ones (prefill) on its Linear; 0: always the Linear.
  // Any CreateDecoder failure (a backend without a decoder engine, device memory, a refused dtype)
  // fails the load, naming the backend.
  static Result<std::unique_ptr<DecoderModel>> Load(const DecoderConfig& config, const SafetensorsFile& file,
                                                    InferenceBackend* backend, LinearDType linear_dtype,
                                                    int skinny_rows = 8);
  // The same checks from the header alone (no weight is read): names, shapes, dtypes.
  static Status CheckWeights(const DecoderConfig& config, const SafetensorsHeader& header);
  ~DecoderModel();

  // Runs `rows` through the model. Each row's sequence must have cache blocks for its position
  // (PagedKvCache::Reserve), and the rows of one sequence must come in position order, every
  // earlier position already cached or in this step. The decoder engine writes the rows' K/V into
  // its pool at the blocks `cache` assigns (one cache at a time per model), and for each row with
  // `logits` set, vocab_size logits are appended to `logits` (in row order).
  Status Step(std::span<const DecoderRow> rows, const PagedKvCache& cache, std::vector<float>& logits);

  // One line naming the engine for the log (the decoder engine's).
  std::string engine_description() const { return decoder_->description(); }

  const DecoderConfig& config() const { return config_; }
  // Bytes of weights the engine holds (DeviceDecoder::weight_bytes: on the CPU the float32 weights).
  int64_t weight_bytes() const { return decoder_->weight_bytes(); }
  // Bytes of weights read from memory per step (every Linear layer, in the products' precision):
  // the decode bandwidth bound is this ÷ memory bandwidth per step.
  int64_t streamed_weight_bytes() const { return streamed_bytes_; }
  LinearDType linear_dtype() const { return linear_dtype_; }

 private:
  DecoderModel(const DecoderConfig& config, LinearDType dtype);
  // Load, or with file == nullptr the checks only.
  static Result<std::unique_ptr<DecoderModel>> Read(const DecoderConfig& config, const SafetensorsHeader& header,
                                                    const SafetensorsFile* file, InferenceBackend* backend, LinearDType dtype,
                                                    int skinny_rows);

  DecoderConfig config_;
  LinearDType linear_dtype_;
  int64_t streamed_bytes_ = 0;
  std::unique_ptr<DeviceDecoder> decoder_;
  // Per step: the rows with one block table per sequence.
  std::vector<DeviceStepRow> step_rows_;
  std::vector<int32_t> table_offsets_, table_ids_;
  std::vector<int> table_seqs_;  // the cache sequence of each table
};

}  // namespace dfw
