// BERT's vocab.txt and tokenizer_config.json as a builder of the tokenizer.json pipeline that
// BertTokenizerFast declares for them (wordpiece_tokenizer.h); Encode and Tokenize run that pipeline.
#include "dfw/tokenizers/wordpiece_tokenizer.h"

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/common/file.h"
#include "dfw/common/json_text.h"
#include "dfw/tokenizers/utf8.h"
#include "tokenizer_parts.h"

namespace dfw {
namespace {

// Reads an optional bool member; `null` counts as absent.
Status ReadBool(const nlohmann::json& j, const char* key, const std::string& path, std::optional<bool>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::OK();
  if (!it->is_boolean()) {
    return InvalidArgument("'" + path + "': \"" + key + "\" must be true, false or null, got " + it->dump());
  }
  out = it->get<bool>();
  return Status::OK();
}

// tokenizer_config.json when there is one (a FIFO, device or folder in its place is an error).
Status ApplyTokenizerConfig(const std::string& path, TokenizerOptions& options) {
  ASSIGN_OR_RETURN(std::optional<std::string> text, ReadFileIfPresent(path, kTokenizerConfigFile));
  if (!text) return Status::OK();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("'" + path + "' is not a JSON object");
  RETURN_IF_ERROR(CheckJsonDepth(j, path));
  std::optional<bool> lower, strip, cjk;
  RETURN_IF_ERROR(ReadBool(j, "do_lower_case", path, lower));
  RETURN_IF_ERROR(ReadBool(j, "strip_accents", path, strip));
  RETURN_IF_ERROR(ReadBool(j, "tokenize_chinese_chars", path, cjk));
  if (lower) options.do_lower_case = *lower;
  if (strip) options.strip_accents = strip;
  if (cjk) options.tokenize_chinese_chars = *cjk;
  return Status::OK();
}

// The tokenizer.json parts BertTokenizerFast writes for these options.
nlohmann::json BertNormalizerJson(const TokenizerOptions& o) {
  return {{"type", "BertNormalizer"},
          {"clean_text", true},
          {"handle_chinese_chars", o.tokenize_chinese_chars},
          {"strip_accents", o.strip_accents ? nlohmann::json(*o.strip_accents) : nlohmann::json()},  // null: as lowercase
          {"lowercase", o.do_lower_case}};
}
const nlohmann::json& BertPreTokenizerJson() {
  static const nlohmann::json j = {{"type", "BertPreTokenizer"}};
  return j;
}

}  // namespace

Result<std::vector<std::string>> BasicTokenize(std::string_view text, const TokenizerOptions& options) {
  RETURN_IF_ERROR(utf8::Check(text));
  ASSIGN_OR_RETURN(auto normalizer, tokenizers::MakeNormalizer(BertNormalizerJson(options), "BasicTokenize"));
  ASSIGN_OR_RETURN(auto pre, tokenizers::MakePreTokenizer(BertPreTokenizerJson(), "BasicTokenize"));
  std::vector<tokenizers::NormalizedText> words(1);
  RETURN_IF_ERROR(tokenizers::DecodeUtf8(text, 0, words[0]));
  normalizer->Normalize(words[0]);
  pre->Split(words);
  std::vector<std::string> out;
  for (const auto& w : words) {
    if (!w.empty()) out.push_back(tokenizers::ToUtf8(w.data(), w.size()));
  }
  return out;
}

Result<WordPieceTokenizer> WordPieceTokenizer::Make(std::vector<std::string> vocab, TokenizerOptions options) {
  if (options.max_input_chars_per_word < 1) {
    return InvalidArgument("max_input_chars_per_word must be >= 1, got " +
                           std::to_string(options.max_input_chars_per_word));
  }
  // {token: id}: a repeated token keeps its last id, as Hugging Face's vocab loader does.
  nlohmann::json ids = nlohmann::json::object();
  for (std::size_t i = 0; i < vocab.size(); ++i) ids[vocab[i]] = i;
  WordPieceTokenizer t;
  std::vector<std::string> missing;
  auto special = [&](const char* name, int32_t& id) {
    auto it = ids.find(name);
    id = it == ids.end() ? -1 : it->get<int32_t>();
    if (id < 0) missing.emplace_back(name);
  };
  special("[CLS]", t.cls_id_);
  special("[SEP]", t.sep_id_);
  special("[UNK]", t.unk_id_);
  special("[PAD]", t.pad_id_);
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    return InvalidArgument("vocabulary lacks the special token(s) " + names + " (" + std::to_string(vocab.size()) +
                           " tokens); a BERT vocab.txt needs [CLS], [SEP], [UNK] and [PAD]");
  }
  const nlohmann::json file = {
      {"normalizer", BertNormalizerJson(options)},
      {"pre_tokenizer", BertPreTokenizerJson()},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", options.max_input_chars_per_word},
        {"vocab", std::move(ids)}}},
      {"post_processor", {{"type", "BertProcessing"}, {"cls", {"[CLS]", t.cls_id_}}, {"sep", {"[SEP]", t.sep_id_}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}}};
  ASSIGN_OR_RETURN(std::unique_ptr<HfTokenizer> built, HfTokenizer::FromJson(file, "vocab.txt"));
  t.options_ = options;
  t.tokenizer_ = std::move(built);
  return t;
}

Result<WordPieceTokenizer> WordPieceTokenizer::Load(const std::string& model_dir, TokenizerOptions defaults) {
  const std::string vocab_path = model_dir + "/vocab.txt";
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(vocab_path, kVocabFile));
  std::vector<std::string> vocab;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::size_t stop = end;
    if (stop > start && text[stop - 1] == '\r') --stop;  // CRLF files
    vocab.emplace_back(text, start, stop - start);
    start = end + 1;
  }
  const std::string config_path = model_dir + "/tokenizer_config.json";
  RETURN_IF_ERROR(ApplyTokenizerConfig(config_path, defaults));
  auto t = Make(std::move(vocab), defaults);
  if (!t.ok()) return t.status().WithContext("'" + vocab_path + "'");
  return t;
}

Result<std::vector<std::string>> WordPieceTokenizer::Tokenize(std::string_view text) const {
  TokenEncoding e;
  RETURN_IF_ERROR(tokenizer_->Encode(text, std::nullopt, 0, e));
  std::vector<std::string> pieces;
  pieces.reserve(e.size());
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (e.sequence[i] == 0) pieces.push_back(token(e.ids[i]));  // not [CLS]/[SEP]
  }
  return pieces;
}

Status WordPieceTokenizer::Encode(std::string_view text, int max_seq_length, std::vector<int32_t>& ids) const {
  if (max_seq_length < 2) {
    return InvalidArgument("max_seq_length must be >= 2 ([CLS] and [SEP]), got " + std::to_string(max_seq_length));
  }
  thread_local TokenEncoding e;  // scratch reused across rows (Encode clears it)
  RETURN_IF_ERROR(tokenizer_->Encode(text, std::nullopt, max_seq_length, e));
  ids.assign(e.ids.begin(), e.ids.end());
  return Status::OK();
}

}  // namespace dfw
