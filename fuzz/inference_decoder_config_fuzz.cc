// Fuzzes the decoder model's loading checks: the input is a config.json, then (after a NUL byte) a
// safetensors file. Any config must parse or give a Status; an accepted config must give sizes the
// engine can use (the memory arithmetic must not overflow silently), and the weight checks must
// answer for any header.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dfw/inference/decoder_config.h"
#include "dfw/inference/decoder_model.h"
#include "dfw/inference/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = all.find('\0');
  const std::string_view json = all.substr(0, nul);
  (void)dfw::LooksLikeDecoderConfig(json);
  auto config = dfw::DecoderConfig::Parse(json, "config.json");
  if (!config.ok()) return 0;
  const dfw::DecoderConfig& c = *config;
  if (c.num_layers < 1 || c.num_heads < 1 || c.num_kv_heads < 1 || c.head_dim < 1 || c.hidden_size < 1 ||
      c.vocab_size < 1 || c.num_heads % c.num_kv_heads != 0 || c.sliding.size() != static_cast<std::size_t>(c.num_layers) ||
      !(c.norm_eps > 0.f)) {
    std::abort();  // an accepted config the engine cannot run
  }
  (void)c.ParameterCount();
  (void)c.KvBytesPerToken(4);
  if (nul == std::string_view::npos) return 0;
  const std::string_view file = all.substr(nul + 1);
  auto header = dfw::ParseSafetensorsHeader(file, file.size());
  if (header.ok()) (void)dfw::DecoderModel::CheckWeights(c, *header);
  return 0;
}
