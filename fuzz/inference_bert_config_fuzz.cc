// Fuzzes the encoder families' config.json reading (BERT, DistilBERT, RoBERTa/XLM-R, ModernBERT):
// any input must parse or give a Status, and an accepted config must give sizes the encoders can use.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "dfw/inference/bert_encoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  auto config = dfw::BertConfig::Parse(json, "config.json");
  if (!config.ok()) return 0;
  const dfw::BertConfig& c = *config;
  if (c.vocab_size < 1 || c.hidden_size < 1 || c.num_hidden_layers < 1 || c.num_attention_heads < 1 ||
      c.intermediate_size < 1 || c.max_position_embeddings < 1 || c.hidden_size % c.num_attention_heads != 0 ||
      c.position_offset < 0 || c.position_offset >= c.max_position_embeddings || !(c.layer_norm_eps > 0.f)) {
    std::abort();  // an accepted config the encoder cannot run
  }
  if (c.family == dfw::EncoderFamily::kModernBert) {
    const dfw::ModernBertFields& m = c.modern;
    if (m.sliding.size() != static_cast<std::size_t>(c.num_hidden_layers) || (c.hidden_size / c.num_attention_heads) % 2 != 0 ||
        m.local_attention < 1 || !(m.global_rope_theta > 0.f) || !(m.local_rope_theta > 0.f)) {
      std::abort();
    }
  }
  return 0;
}
