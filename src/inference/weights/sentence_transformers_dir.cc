// The sentence-transformers directory layout (dfw/inference/sentence_transformers_dir.h).
#include "dfw/inference/sentence_transformers_dir.h"

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "dfw/common/file.h"
#include "dfw/common/json_text.h"

namespace dfw {
namespace {

// The file's text, or nullopt when it is absent or is no regular file of sane size (these files
// only refine defaults; the checked reads of config.json and tokenizer.json refuse a bad directory).
std::optional<std::string> ReadIfPresent(const std::string& path) {
  Result<std::optional<std::string>> text = ReadFileIfPresent(path, kSmallJsonFile);
  return text.ok() ? std::move(text).value() : std::nullopt;
}

// The file's JSON object, or null when absent or malformed.
nlohmann::json JsonObjectOf(const std::string& path) {
  std::optional<std::string> text = ReadIfPresent(path);
  if (!text) return nullptr;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && CheckJsonDepth(j, path).ok() ? j : nlohmann::json(nullptr);
}

std::optional<int> IntField(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) return std::nullopt;
  const auto v = j[key].get<int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;  // (a tokenizer's "unbounded" 1e30 is a float)
  return static_cast<int>(v);
}

bool BoolField(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

}  // namespace

SentenceTransformersDir ReadSentenceTransformersDir(const std::string& dir) {
  SentenceTransformersDir d;
  d.max_seq_length = IntField(JsonObjectOf(dir + "/sentence_bert_config.json"), "max_seq_length");
  const nlohmann::json pool = JsonObjectOf(dir + "/1_Pooling/config.json");
  if (pool.is_object()) {
    d.pooling = BoolField(pool, "pooling_mode_cls_token")     ? SentenceTransformersDir::Pooling::kCls
                : BoolField(pool, "pooling_mode_mean_tokens") ? SentenceTransformersDir::Pooling::kMean
                                                              : SentenceTransformersDir::Pooling::kOther;
  }
  d.normalize = ReadIfPresent(dir + "/modules.json").value_or("").find("sentence_transformers.models.Normalize") !=
                std::string::npos;
  d.max_position_embeddings = IntField(JsonObjectOf(dir + "/config.json"), "max_position_embeddings");
  d.tokenizer_max_length = IntField(JsonObjectOf(dir + "/tokenizer_config.json"), "model_max_length");
  return d;
}

}  // namespace dfw
