// BertEncoder weight loading (Hugging Face tensor names, shape checks) and length-grouped batching.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "dfw/inference/bert_encoder.h"

#include <cmath>
#include "dfw/inference/safetensors.h"

namespace dfw {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

Status BertEncoder::LoadWeights(const SafetensorsFile& file) {
  const SafetensorsHeader& header = file.header();
  // Checkpoints saved from the For* heads carry the family's prefix ("bert.", "distilbert.",
  // "roberta."); bare encoders (and sentence-transformers') do not.
  const std::string family_prefix = config_.family == EncoderFamily::kDistilBert ? "distilbert."
                                    : config_.family == EncoderFamily::kRoberta  ? "roberta."
                                                                                 : "bert.";
  const std::string prefix =
      header.Find(TensorName(family_prefix, "embeddings.word_embeddings.weight")) != nullptr ? family_prefix : "";

  // Host view of an F32 tensor with the expected shape (realigned if the file does not align it).
  auto host = [&](const std::string& name, std::vector<int64_t> shape) -> Result<const float*> {
    const TensorInfo* t = header.Find(TensorName(prefix, name));
    if (t == nullptr) {
      return InvalidArgument("no tensor '" + TensorName(prefix, name) + "' (a " + config_.model_type + " checkpoint has it)");
    }
    if (t->dtype != TensorDType::kF32) {
      return InvalidArgument("tensor '" + t->name + "' is " + std::string(TensorDTypeName(t->dtype)) +
                             "; this encoder loads F32 weights");
    }
    if (t->shape != shape) {
      return InvalidArgument("tensor '" + t->name + "' has shape " + ShapeString(t->shape) + ", expected " +
                             ShapeString(shape) + " from config.json");
    }
    if (shapes_only_) return static_cast<const float*>(nullptr);  // (CheckWeights: nothing is read)
    const uint8_t* data = file.Data(*t);
    if (reinterpret_cast<std::uintptr_t>(data) % alignof(float) != 0) {
      auto& copy = owned_host_.emplace_back(t->num_bytes() / sizeof(float));
      std::memcpy(copy.data(), data, t->num_bytes());
      return static_cast<const float*>(copy.data());
    }
    return reinterpret_cast<const float*>(data);
  };
  auto upload = [&](const std::string& name, std::vector<int64_t> shape) -> Result<const float*> {
    const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(std::accumulate(
                                                  shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()));
    ASSIGN_OR_RETURN(const float* h, host(name, std::move(shape)));
    if (shapes_only_) return static_cast<const float*>(nullptr);
    ASSIGN_OR_RETURN(auto buf, backend_->UploadWeights(h, bytes));
    weight_bytes_ += static_cast<int64_t>(bytes);
    weights_.push_back(std::move(buf));
    return static_cast<const float*>(weights_.back()->f32());
  };
  // query/key/value stacked into one device tensor so the projection is a single GEMM.
  auto upload_qkv = [&](const std::string& base, const std::string& suffix,
                        std::vector<int64_t> shape) -> Result<const float*> {
    const std::size_t part = sizeof(float) * static_cast<std::size_t>(std::accumulate(
                                                 shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()));
    const char* names[] = {"query", "key", "value"};
    if (shapes_only_) {
      for (const char* n : names) RETURN_IF_ERROR(host(base + n + suffix, shape).status());
      return static_cast<const float*>(nullptr);
    }
    ASSIGN_OR_RETURN(auto buf, backend_->Allocate(3 * part));
    for (int i = 0; i < 3; ++i) {
      ASSIGN_OR_RETURN(const float* h, host(base + names[i] + suffix, shape));
      RETURN_IF_ERROR(backend_->CopyToDevice(static_cast<uint8_t*>(buf->data()) + i * part, h, part));
    }
    weight_bytes_ += static_cast<int64_t>(3 * part);
    weights_.push_back(std::move(buf));
    return static_cast<const float*>(weights_.back()->f32());
  };

  const int64_t h = config_.hidden_size, inter = config_.intermediate_size;
  ASSIGN_OR_RETURN(word_emb_, host("embeddings.word_embeddings.weight", {config_.vocab_size, h}));
  ASSIGN_OR_RETURN(pos_emb_, host("embeddings.position_embeddings.weight", {config_.max_position_embeddings, h}));
  if (config_.type_vocab_size > 0) {
    ASSIGN_OR_RETURN(type_emb_, host("embeddings.token_type_embeddings.weight", {config_.type_vocab_size, h}));
  } else if (!shapes_only_) {  // no token-type embeddings (DistilBERT): segment 0 adds zeros
    type_emb_ = owned_host_.emplace_back(static_cast<std::size_t>(h), 0.f).data();
  }
  weight_bytes_ += sizeof(float) * h * (config_.vocab_size + config_.max_position_embeddings + config_.type_vocab_size);
  ASSIGN_OR_RETURN(emb_ln_gamma_, upload("embeddings.LayerNorm.weight", {h}));
  ASSIGN_OR_RETURN(emb_ln_beta_, upload("embeddings.LayerNorm.bias", {h}));
  for (int i = 0; i < config_.num_hidden_layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    Layer l{};
    ASSIGN_OR_RETURN(l.qkv_w, upload_qkv(p + "attention.self.", ".weight", {h, h}));
    ASSIGN_OR_RETURN(l.qkv_b, upload_qkv(p + "attention.self.", ".bias", {h}));
    ASSIGN_OR_RETURN(l.attn_out_w, upload(p + "attention.output.dense.weight", {h, h}));
    ASSIGN_OR_RETURN(l.attn_out_b, upload(p + "attention.output.dense.bias", {h}));
    ASSIGN_OR_RETURN(l.attn_ln_g, upload(p + "attention.output.LayerNorm.weight", {h}));
    ASSIGN_OR_RETURN(l.attn_ln_b, upload(p + "attention.output.LayerNorm.bias", {h}));
    ASSIGN_OR_RETURN(l.inter_w, upload(p + "intermediate.dense.weight", {inter, h}));
    ASSIGN_OR_RETURN(l.inter_b, upload(p + "intermediate.dense.bias", {inter}));
    ASSIGN_OR_RETURN(l.out_w, upload(p + "output.dense.weight", {h, inter}));
    ASSIGN_OR_RETURN(l.out_b, upload(p + "output.dense.bias", {h}));
    ASSIGN_OR_RETURN(l.out_ln_g, upload(p + "output.LayerNorm.weight", {h}));
    ASSIGN_OR_RETURN(l.out_ln_b, upload(p + "output.LayerNorm.bias", {h}));
    layers_.push_back(std::move(l));
  }
  return Status::OK();
}

Status BertEncoder::SetLinearDType(LinearDType dtype) {
  RETURN_IF_ERROR(backend_->CheckLinearDType(dtype));
  const int h = config_.hidden_size, inter = config_.intermediate_size;
  std::vector<std::unique_ptr<PreparedLinear>> made;  // all or nothing
  for (const Layer& l : layers_) {
    for (auto [w, n, k] : {std::tuple{l.qkv_w, 3 * h, h}, std::tuple{l.attn_out_w, h, h}, std::tuple{l.inter_w, inter, h},
                           std::tuple{l.out_w, h, inter}}) {
      ASSIGN_OR_RETURN(auto p, backend_->PrepareLinear(w, n, k, dtype));
      made.push_back(std::move(p));
    }
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i].qkv = std::move(made[4 * i]);
    layers_[i].attn_out = std::move(made[4 * i + 1]);
    layers_[i].inter = std::move(made[4 * i + 2]);
    layers_[i].out = std::move(made[4 * i + 3]);
  }
  options_.linear_dtype = dtype;
  return Status::OK();
}

Status BertEncoder::EncodeMany(std::span<const std::span<const int32_t>> sequences, std::span<float> out,
                               bool group_by_length) {
  const std::size_t hs = static_cast<std::size_t>(config_.hidden_size);
  if (out.size() != sequences.size() * hs) {
    return InvalidArgument("output holds " + std::to_string(out.size()) + " floats, expected " +
                           std::to_string(sequences.size() * hs));
  }
  order_.resize(sequences.size());
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  if (group_by_length) {
    std::stable_sort(order_.begin(), order_.end(),
                     [&](std::size_t a, std::size_t b) { return sequences[a].size() < sequences[b].size(); });
  }
  const std::size_t max_batch = static_cast<std::size_t>(options_.max_batch);
  const std::size_t max_tokens = static_cast<std::size_t>(std::max(tokens_per_call(), 1));
  chunk_out_.resize(max_batch * hs);
  for (std::size_t start = 0, n = 0; start < order_.size(); start += n) {
    n = SubBatchSize(start, order_.size(), max_batch, max_tokens,
                     [&](std::size_t i) { return sequences[order_[i]].size(); });
    chunk_.clear();
    for (std::size_t i = 0; i < n; ++i) chunk_.push_back(sequences[order_[start + i]]);
    RETURN_IF_ERROR(Encode(chunk_, std::span<float>(chunk_out_.data(), n * hs)));
    for (std::size_t i = 0; i < n; ++i) {
      std::copy_n(chunk_out_.data() + i * hs, hs, out.data() + order_[start + i] * hs);
    }
  }
  return Status::OK();
}

std::vector<std::pair<std::string, int64_t>> TokenFigures(const TokenEncoder& encoder, EncoderTokenCounts before) {
  const EncoderTokenCounts now = encoder.token_counts();
  return {{"batch_tokens", now.real - before.real},
          {"batch_computed_tokens", now.computed - before.computed},
          {"batch_kflop", std::llround((now.flops - before.flops) / 1e3)}};
}

}  // namespace dfw
