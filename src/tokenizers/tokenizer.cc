// HfTokenizer: loads tokenizer.json into its pipeline of stages and runs it (added tokens,
// normalizer, pre-tokenizer, model, truncation, post-processor; decoder for Decode).
#include "dfw/tokenizers/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "dfw/common/file.h"
#include "dfw/common/json_text.h"

#include "tokenizer_parts.h"

namespace dfw {

struct HfAddedToken {
  std::string content;
  int32_t id;
  bool lstrip, rstrip, special;
};

struct HfTokenizer::Impl {
  tokenizers::Vocabulary vocab;
  std::vector<HfAddedToken> added;  // longest content first (leftmost-longest matching)
  std::unique_ptr<tokenizers::Normalizer> normalizer;
  std::unique_ptr<tokenizers::PreTokenizer> pre;
  std::unique_ptr<tokenizers::TokenModel> model;
  std::unique_ptr<tokenizers::PostProcessor> post;
  std::unique_ptr<tokenizers::Decoder> decoder;
  std::vector<bool> special;  // by id
  bool clean_up = false;

  Status Sequence(std::string_view text, tokenizers::SeqTokens& out) const;
};

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfTokenizer::~HfTokenizer() = default;

namespace {

Result<std::unique_ptr<HfTokenizer::Impl>> Build(const nlohmann::json& j, const std::string& origin) {
  auto impl = std::make_unique<HfTokenizer::Impl>();
  const nlohmann::json& model = j.value("model", nlohmann::json());
  if (!model.is_object()) return InvalidArgument("'" + origin + "': \"model\" must be an object");
  ASSIGN_OR_RETURN(impl->model, tokenizers::MakeTokenModel(model, origin, impl->vocab));
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.value("content", nlohmann::json()).is_string() || !a.value("id", nlohmann::json()).is_number_integer()) {
        return InvalidArgument("'" + origin + "': an added token needs \"id\" and \"content\"");
      }
      // The id as written, checked before it is narrowed: get<int32_t> would make 2^40 into 0.
      ASSIGN_OR_RETURN(int64_t id, JsonIntIn(a["id"], 0, tokenizers::kMaxTokenId,
                                             "'" + origin + "': the id of added token '" + a["content"].get<std::string>() + "'"));
      HfAddedToken t{a["content"].get<std::string>(), static_cast<int32_t>(id), a.value("lstrip", false), a.value("rstrip", false),
                   a.value("special", false)};
      if (t.content.empty()) return InvalidArgument("'" + origin + "': added token " + a.dump() + " has empty content");
      impl->vocab.Add(t.content, t.id);
      impl->added.push_back(std::move(t));
    }
  }
  std::stable_sort(impl->added.begin(), impl->added.end(),
                   [](const HfAddedToken& a, const HfAddedToken& b) { return a.content.size() > b.content.size(); });
  impl->special.assign(impl->vocab.tokens.size(), false);
  for (const HfAddedToken& t : impl->added) impl->special[static_cast<std::size_t>(t.id)] = t.special;
  auto component = [&](const char* key) -> const nlohmann::json* {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  };
  if (const auto* n = component("normalizer")) {
    ASSIGN_OR_RETURN(impl->normalizer, tokenizers::MakeNormalizer(*n, origin));
  }
  if (const auto* p = component("pre_tokenizer")) {
    ASSIGN_OR_RETURN(impl->pre, tokenizers::MakePreTokenizer(*p, origin));
  }
  if (const auto* p = component("post_processor")) {
    ASSIGN_OR_RETURN(impl->post, tokenizers::MakePostProcessor(*p, origin, impl->vocab));
  }
  if (const auto* d = component("decoder")) {
    ASSIGN_OR_RETURN(impl->decoder, tokenizers::MakeDecoder(*d, origin));
  }
  return impl;
}

}  // namespace

Status HfTokenizer::Impl::Sequence(std::string_view text, tokenizers::SeqTokens& out) const {
  out = {};
  int32_t word_index = 0;
  std::vector<tokenizers::Piece> pieces;
  // Runs the pipeline on text[b, e) (a stretch between added tokens).
  auto run = [&](std::size_t b, std::size_t e) -> Status {
    if (e <= b) return Status::OK();
    tokenizers::NormalizedText chars;
    RETURN_IF_ERROR(tokenizers::DecodeUtf8(text.substr(b, e - b), static_cast<uint32_t>(b), chars));
    if (normalizer) normalizer->Normalize(chars);
    std::vector<tokenizers::NormalizedText> words;
    words.push_back(std::move(chars));
    if (pre) pre->Split(words);
    for (const tokenizers::NormalizedText& w : words) {
      if (w.empty()) continue;
      pieces.clear();
      RETURN_IF_ERROR(model->Tokenize(w, pieces));
      for (const tokenizers::Piece& p : pieces) {
        out.ids.push_back(p.id);
        out.offsets.emplace_back(w[p.first].begin, w[p.last - 1].end);
        out.word.push_back(word_index);
        out.special.push_back(0);
      }
      ++word_index;
    }
    return Status::OK();
  };
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::size_t start = 0;  // start of the stretch not yet tokenized
  for (std::size_t i = 0; i < text.size();) {
    const HfAddedToken* hit = nullptr;
    for (const HfAddedToken& t : added) {
      if (text.compare(i, t.content.size(), t.content) == 0) {
        hit = &t;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    std::size_t before = i, after = i + hit->content.size();
    if (hit->lstrip) {
      while (before > start && is_space(text[before - 1])) --before;
    }
    if (hit->rstrip) {
      while (after < text.size() && is_space(text[after])) ++after;
    }
    RETURN_IF_ERROR(run(start, before));
    out.ids.push_back(hit->id);
    out.offsets.emplace_back(static_cast<uint32_t>(before), static_cast<uint32_t>(after));
    out.word.push_back(word_index++);
    out.special.push_back(hit->special ? 1 : 0);
    i = start = after;
  }
  return run(start, text.size());
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::Parse(std::string_view json_text, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("'" + origin + "' is not a JSON object");
  return FromJson(j, origin);
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::FromJson(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) return InvalidArgument("'" + origin + "' is not a JSON object");
  // Its parts (Sequence of Sequence of ...) are built by recursion: the depth is bounded first.
  RETURN_IF_ERROR(CheckJsonDepth(j, origin));
  // nlohmann's typed accessors throw on a wrong type; the file is untrusted input, so they are
  // caught here, at the boundary, and reported as a bad file.
  try {
    ASSIGN_OR_RETURN(auto impl, Build(j, origin));
    return std::unique_ptr<HfTokenizer>(new HfTokenizer(std::move(impl)));
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument("'" + origin + "': unexpected JSON value (" + std::string(e.what()) + ")");
  }
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::Load(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, kTokenizerFile));
  return Parse(text, path);
}

Status HfTokenizer::Encode(std::string_view text, std::optional<std::string_view> pair, int max_length,
                           TokenEncoding& out) const {
  tokenizers::SeqTokens a, b;
  RETURN_IF_ERROR(impl_->Sequence(text, a));
  if (pair) RETURN_IF_ERROR(impl_->Sequence(*pair, b));
  if (max_length > 0) {
    const int added = impl_->post ? impl_->post->AddedTokens(pair.has_value()) : 0;
    const std::size_t budget = static_cast<std::size_t>(std::max(0, max_length - added));
    // The first text is cut (a pair's second text, the hypothesis, is kept whole while the first
    // has tokens left), then the second.
    while (a.ids.size() + b.ids.size() > budget) {
      tokenizers::SeqTokens& s = a.ids.empty() ? b : a;
      s.ids.pop_back();
      s.offsets.pop_back();
      s.word.pop_back();
      s.special.pop_back();
    }
  }
  if (impl_->post) {
    impl_->post->Process(a, pair ? &b : nullptr, out);
    return Status::OK();
  }
  out.Clear();
  for (int s = 0; s < (pair ? 2 : 1); ++s) {
    const tokenizers::SeqTokens& q = s == 0 ? a : b;
    for (std::size_t i = 0; i < q.ids.size(); ++i) {
      out.ids.push_back(q.ids[i]);
      out.type_ids.push_back(s);
      out.offsets.push_back(q.offsets[i]);
      out.sequence.push_back(static_cast<int8_t>(s));
      out.word.push_back(q.word[i]);
      out.special.push_back(q.special[i]);
    }
  }
  return Status::OK();
}

std::string HfTokenizer::TokensToString(std::vector<std::string> tokens) const {
  std::string text;
  if (impl_->decoder) {
    impl_->decoder->Decode(tokens);
    for (const auto& t : tokens) text += t;
  } else {
    for (std::size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
  }
  return text;
}

std::string HfTokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    if (skip_special && IsSpecial(id)) continue;
    const std::string& token = IdToToken(id);
    if (token.empty()) continue;  // no such id: tokenizers leaves it out (it is not an empty first token)
    tokens.push_back(token);
  }
  std::string text = TokensToString(std::move(tokens));
  if (impl_->clean_up && model_type() != "BPE") {
    for (const auto& [from, to] : std::initializer_list<std::pair<std::string, std::string>>{
             {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
             {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}}) {
      for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size()) text.replace(pos, from.size(), to);
    }
  }
  return text;
}

const std::string& HfTokenizer::IdToToken(int32_t id) const {
  static const std::string kNone;
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->vocab.tokens.size()) return kNone;
  return impl_->vocab.tokens[static_cast<std::size_t>(id)];
}

std::optional<int32_t> HfTokenizer::TokenToId(std::string_view token) const {
  const int32_t id = impl_->vocab.Find(token);
  return id < 0 ? std::nullopt : std::optional<int32_t>(id);
}

bool HfTokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < impl_->special.size() && impl_->special[static_cast<std::size_t>(id)];
}

std::size_t HfTokenizer::vocab_size() const { return impl_->vocab.tokens.size(); }
const std::string& HfTokenizer::continuing_subword_prefix() const { return impl_->model->continuing_subword_prefix(); }
const std::string& HfTokenizer::model_type() const { return impl_->model->type(); }
void HfTokenizer::set_clean_up_tokenization_spaces(bool on) { impl_->clean_up = on; }

}  // namespace dfw
