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
// masks, soft-capping, SwiGLU / GeGLU / GELU MLPs. Weights are read as saved (F32, F16, BF16) and
// held in float32; the Linear layers run in `linear_dtype` (float32, or bfloat16 / int8 where the
// backend has them).
//
// Threading: one thread at a time per model (it owns scratch buffers); the weights are immutable.
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

// The K and V of every sequence, in blocks of kBlockTokens tokens taken from a pool as sequences
// grow and returned when they end. Block layout: [layer][K|V][kv_head][token in block][head_dim],
// so one head's keys of a block are contiguous (what attention reads). Blocks are allocated in
// slabs up to `max_bytes`; slabs are never moved, so a block's memory is stable.
//
// Storage::kIdsOnly keeps the bookkeeping alone (block ids, tables, the pool's size arithmetic)
// and allocates no memory: the K/V live in a device decoder's pool, which the same ids index
// (DeviceDecoder, dfw/backend/device_decoder.h). BlockHead is then not to be called.
class PagedKvCache {
 public:
  static constexpr int kBlockTokens = kDeviceKvBlockTokens;
  enum class Storage : uint8_t { kHost, kIdsOnly };

  PagedKvCache(const DecoderConfig& config, uint64_t max_bytes, Storage storage = Storage::kHost);
  Storage storage() const { return storage_; }

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
  uint64_t allocated_bytes() const;  // slabs allocated so far (0 with Storage::kIdsOnly)
  // The block ids of `seq`, block i holding positions [16 i, 16 i + 16). Valid until the next
  // Reserve or Release of `seq`.
  std::span<const int> blocks(int seq) const { return tables_[static_cast<std::size_t>(seq)]; }

  // K (kv = 0) or V (kv = 1) of `layer`, `kv_head` for tokens [block start, block start + 16) of the
  // block holding position `pos` of `seq`: kBlockTokens × head_dim floats. Storage::kHost only.
  float* BlockHead(int seq, int pos, int layer, int kv, int kv_head);

 private:
  float* Block(int id);
  Storage storage_;
  int layers_, kv_heads_, head_dim_;
  uint64_t block_floats_;
  int max_blocks_;
  int used_blocks_ = 0;
  static constexpr int kSlabBlocks = 64;
  std::vector<std::unique_ptr<float[]>> slabs_;
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
  // Reads and checks every tensor against `config` (names as transformers saves them) and
  // converts them to float32. Then two engines:
  //  - device: when `backend` makes a device decoder (InferenceBackend::CreateDecoder: the CUDA
  //    backend), every step runs on it and the host weights are freed once uploaded; the KV
  //    cache's memory is the decoder's, so the cache passed to Step keeps ids only (kv_storage()).
  //  - host (the backend has none: the CPU backend): the step runs here with the Linear layers
  //    prepared on `backend` in `linear_dtype`. Steps of at most `skinny_rows` rows (decode) run
  //    their products on the backend's streaming kernels (dfw/backend/skinny_kernels.h; bfloat16
  //    weights when linear_dtype is kBFloat16); larger ones (prefill) on the backend's Linear. 0:
  //    always the backend.
  // Any CreateDecoder failure other than kUnimplemented (device memory, a refused dtype) fails the
  // load.
  static Result<std::unique_ptr<DecoderModel>> Load(const DecoderConfig& config, const SafetensorsFile& file,
                                                    InferenceBackend* backend, LinearDType linear_dtype,
                                                    int skinny_rows = 8);
  // The same checks from the header alone (no weight is read): names, shapes, dtypes.
  static Status CheckWeights(const DecoderConfig& config, const SafetensorsHeader& header);
  ~DecoderModel();

  // Runs `rows` through the model. Each row's sequence must have cache blocks for its position
  // (PagedKvCache::Reserve), and the rows of one sequence must come in position order, every
  // earlier position already cached or in this step. Writes the rows' K/V into `cache`, and for
  // each row with `logits` set, vocab_size logits into `logits` (in row order). With a device
  // decoder the K/V go to its pool at the blocks `cache` assigns (one cache at a time per model);
  // the host step needs a Storage::kHost cache.
  Status Step(std::span<const DecoderRow> rows, PagedKvCache& cache, std::vector<float>& logits);

  // Whether steps run on a device decoder, the storage the KV cache needs for that, and one line
  // naming the engine for the log.
  bool on_device() const { return decoder_ != nullptr; }
  PagedKvCache::Storage kv_storage() const { return on_device() ? PagedKvCache::Storage::kIdsOnly : PagedKvCache::Storage::kHost; }
  std::string engine_description() const;

  const DecoderConfig& config() const { return config_; }
  int64_t weight_bytes() const { return weight_bytes_; }
  // Bytes of weights read from memory per step (every Linear layer and the embedding rows): the
  // decode bandwidth bound is this ÷ memory bandwidth per step.
  int64_t streamed_weight_bytes() const { return streamed_bytes_; }
  LinearDType linear_dtype() const { return linear_dtype_; }

  struct Layer;

 private:
  DecoderModel(const DecoderConfig& config, InferenceBackend* backend, LinearDType dtype);
  // Load, or with file == nullptr the checks only.
  static Result<std::unique_ptr<DecoderModel>> Read(const DecoderConfig& config, const SafetensorsHeader& header,
                                                    const SafetensorsFile* file, InferenceBackend* backend, LinearDType dtype,
                                                    int skinny_rows);
  Status Attention(std::span<const DecoderRow> rows, int layer, PagedKvCache& cache);
  struct Projection;
  Status Project(const float* x, int m, const Projection& p, const float* bias, float* y);
  // The host step's preparation of one projection (backend Linear and streaming weights).
  Status PrepareHost(Projection& p);
  // Step on the device decoder: the rows with one block table per sequence.
  Status DeviceStep(std::span<const DecoderRow> rows, const PagedKvCache& cache, std::vector<float>& logits);

  DecoderConfig config_;
  InferenceBackend* backend_;
  LinearDType linear_dtype_;
  std::vector<std::vector<float>> owned_;  // every weight, float32
  std::vector<std::unique_ptr<DeviceBuffer>> device_;
  std::vector<Layer> layers_;
  const float* embed_ = nullptr;      // [vocab x hidden]
  const float* positions_ = nullptr;  // gpt2: [n_positions x hidden]
  const float* final_norm_w_ = nullptr;
  const float* final_norm_b_ = nullptr;
  std::unique_ptr<Projection> lm_head_;
  int skinny_rows_ = 8;
  std::vector<float> inv_freq_;  // head_dim / 2 RoPE inverse frequencies
  int64_t weight_bytes_ = 0;
  int64_t streamed_bytes_ = 0;
  // Scratch, per step.
  std::vector<float> x_, h_, qkv_, attn_, mlp_, act_, last_;
  // Each row's KV-cache blocks (base pointers) for the attention kernel: row r's are
  // row_blocks_[row_block_at_[r], row_block_at_[r + 1]).
  std::vector<const float*> row_blocks_;
  std::vector<std::size_t> row_block_at_;
  // The device engine (null: the host step) and its per-step tables.
  std::unique_ptr<DeviceDecoder> decoder_;
  std::vector<DeviceStepRow> step_rows_;
  std::vector<int32_t> table_offsets_, table_ids_;
  std::vector<int> table_seqs_;  // the cache sequence of each table
};

}  // namespace dfw
