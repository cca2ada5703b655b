// The default InferenceBackend::CreateDecoder (no decoder engine) and the spec's and a step's checks; built into
// dfw_backend and into libdfw_backend_cuda.so. The CPU and CUDA backends override the default.
#include "dfw/backend/device_decoder.h"

#include <string>

namespace dfw {

Result<std::unique_ptr<DeviceDecoder>> InferenceBackend::CreateDecoder(const DecoderSpec& spec) {
  (void)spec;
  return Unimplemented(std::string(name()) + " backend has no decoder engine (InferenceBackend::CreateDecoder): it cannot run a decoder-only model");
}

Status ValidateDecoderSpec(const DecoderSpec& s) {
  auto positive = [](const char* field, int v) -> Status {
    if (v >= 1) return Status::OK();
    return InvalidArgument(std::string("decoder spec: ") + field + " is " + std::to_string(v) + "; it must be >= 1");
  };
  RETURN_IF_ERROR(positive("vocab_size", s.vocab_size));
  RETURN_IF_ERROR(positive("hidden_size", s.hidden_size));
  RETURN_IF_ERROR(positive("intermediate_size", s.intermediate_size));
  RETURN_IF_ERROR(positive("num_layers", s.num_layers));
  RETURN_IF_ERROR(positive("num_heads", s.num_heads));
  RETURN_IF_ERROR(positive("num_kv_heads", s.num_kv_heads));
  RETURN_IF_ERROR(positive("head_dim", s.head_dim));
  if (s.num_heads % s.num_kv_heads != 0) {
    return InvalidArgument("decoder spec: num_heads " + std::to_string(s.num_heads) + " is not a multiple of num_kv_heads " +
                           std::to_string(s.num_kv_heads));
  }
  if (!(s.query_scale > 0)) return InvalidArgument("decoder spec: query_scale must be > 0");
  if (static_cast<int>(s.layers.size()) != s.num_layers) {
    return InvalidArgument("decoder spec: " + std::to_string(s.layers.size()) + " layers of weights for num_layers " +
                           std::to_string(s.num_layers));
  }
  if (s.sliding_window > 0 && static_cast<int>(s.sliding.size()) != s.num_layers) {
    return InvalidArgument("decoder spec: " + std::to_string(s.sliding.size()) + " sliding flags for num_layers " +
                           std::to_string(s.num_layers));
  }
  if (s.gpt2) {
    if (!s.inv_freq.empty()) return InvalidArgument("decoder spec: gpt2 has no RoPE, but inv_freq is set");
    if (s.positions == nullptr || s.max_positions < 1) return InvalidArgument("decoder spec: gpt2 needs learned positions");
    if (s.final_norm_b == nullptr) return InvalidArgument("decoder spec: gpt2 needs ln_f's bias");
  } else {
    if (s.head_dim % 2 != 0) return InvalidArgument("decoder spec: RoPE needs an even head_dim, not " + std::to_string(s.head_dim));
    if (static_cast<int>(s.inv_freq.size()) != s.head_dim / 2) {
      return InvalidArgument("decoder spec: " + std::to_string(s.inv_freq.size()) + " RoPE frequencies for head_dim " +
                             std::to_string(s.head_dim) + " (needs head_dim / 2)");
    }
  }
  if (s.embed == nullptr || s.final_norm_w == nullptr || s.lm_head == nullptr) {
    return InvalidArgument("decoder spec: the embedding, the final norm and the LM head are required");
  }
  for (std::size_t l = 0; l < s.layers.size(); ++l) {
    const DecoderLayerWeights& w = s.layers[l];
    const bool sandwich_ok = !s.sandwich_norms || (w.pre_ff_w != nullptr && w.post_ff_w != nullptr);
    const bool gpt2_ok = !s.gpt2 || (w.norm1_b != nullptr && w.norm2_b != nullptr);
    if (w.norm1_w == nullptr || w.norm2_w == nullptr || w.qkv == nullptr || w.o == nullptr || w.up == nullptr ||
        w.down == nullptr || !sandwich_ok || !gpt2_ok) {
      return InvalidArgument("decoder spec: layer " + std::to_string(l) + " lacks a weight its family needs");
    }
  }
  return Status::OK();
}

Status ValidateDecoderStep(std::string_view engine, const DecoderSpec& spec, std::span<const DeviceStepRow> rows,
                           const DeviceBlockTables& tables) {
  const std::string who(engine);
  const int num_tables = static_cast<int>(tables.offsets.size()) - 1;
  if (num_tables < 1) return InvalidArgument(who + ": a step needs block tables");
  if (tables.offsets.front() != 0 || tables.offsets.back() != static_cast<int64_t>(tables.block_ids.size())) {
    return InvalidArgument(who + ": block table offsets do not span the " + std::to_string(tables.block_ids.size()) +
                           " block ids");
  }
  for (int t = 0; t < num_tables; ++t) {
    if (tables.offsets[static_cast<std::size_t>(t) + 1] < tables.offsets[static_cast<std::size_t>(t)]) {
      return InvalidArgument(who + ": block table offsets decrease at table " + std::to_string(t));
    }
  }
  for (int32_t id : tables.block_ids) {
    if (id < 0 || id >= tables.pool_blocks) {
      return InvalidArgument(who + ": block id " + std::to_string(id) + " is outside the pool of " +
                             std::to_string(tables.pool_blocks) + " blocks");
    }
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const DeviceStepRow& row = rows[r];
    const std::string name = who + ": row " + std::to_string(r);
    if (row.table < 0 || row.table >= num_tables) {
      return InvalidArgument(name + " names block table " + std::to_string(row.table) + " of " + std::to_string(num_tables));
    }
    const int blocks = tables.offsets[static_cast<std::size_t>(row.table) + 1] - tables.offsets[static_cast<std::size_t>(row.table)];
    if (row.position < 0 || row.position / kDeviceKvBlockTokens >= blocks) {
      return InvalidArgument(name + ": position " + std::to_string(row.position) + " is not covered by its table's " +
                             std::to_string(blocks) + " blocks");
    }
    if (row.token < 0 || row.token >= spec.vocab_size) {
      return InvalidArgument(name + ": token " + std::to_string(row.token) + " is outside the vocabulary of " +
                             std::to_string(spec.vocab_size));
    }
    if (spec.gpt2 && row.position >= spec.max_positions) {
      return InvalidArgument(name + ": position " + std::to_string(row.position) + " is past GPT-2's " +
                             std::to_string(spec.max_positions) + " positions");
    }
  }
  return Status::OK();
}

}  // namespace dfw
