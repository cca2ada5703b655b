// The default InferenceBackend::CreateDecoder (no decoder engine) and the spec's checks; built into
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

}  // namespace dfw
