// The encoder families beside BERT (DistilBERT, RoBERTa/XLM-RoBERTa): what differs is read here,
// one function per difference, so BertConfig::Parse and the weight loader stay one code path.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "dfw/inference/bert_encoder.h"

namespace dfw {

// `j[key]` as a positive integer (at most 2^24) into `out`; kInvalidArgument naming `origin` and the
// key when it is missing or not one. BertConfig::Parse and the families read their fields with it.
Status ReadPositiveConfigInt(const nlohmann::json& j, const char* key, const std::string& origin, int& out);

// The sizes every BERT-style config.json spells alike: vocab_size, hidden_size, num_hidden_layers,
// num_attention_heads, intermediate_size, max_position_embeddings.
Status ReadEncoderSizes(const nlohmann::json& j, const std::string& origin, BertConfig& c);

// j[key] (a LayerNorm epsilon) into `out` when present: a number in [1e-30, 1] (a smaller one would be
// 0 in float32, and a LayerNorm of a constant row would divide by zero); else kInvalidArgument.
Status ReadEpsilon(const nlohmann::json& j, const char* key, const std::string& origin, float& out);

// model_type → family; an unsupported one is kInvalidArgument listing the supported ones.
Result<EncoderFamily> EncoderFamilyOf(const std::string& model_type, const std::string& origin);
// An architecture name ("DistilBertForMaskedLM") → its family, by prefix.
Result<EncoderFamily> EncoderFamilyOfArchitecture(const std::string& architecture, const std::string& origin);

// DistilBERT's config.json (dim, n_layers, n_heads, hidden_dim, activation, …) into `c`.
Result<BertConfig> ParseDistilBertConfig(const nlohmann::json& j, const std::string& origin, BertConfig c);

// ModernBERT's config.json (norm_eps, the biases, hidden_activation, RoPE thetas, local_attention,
// layer_types / global_attn_every_n_layers, classifier_pooling, classifier_activation) into `c`.
Result<BertConfig> ParseModernBertConfig(const nlohmann::json& j, const std::string& origin, BertConfig c);

// RoBERTa's position ids start at pad_token_id + 1 (transformers' create_position_ids_from_input_ids).
Status ApplyRobertaPositions(const nlohmann::json& j, const std::string& origin, BertConfig& c);

}  // namespace dfw
