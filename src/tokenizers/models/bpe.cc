// tokenizer.json models: WordPiece (greedy longest match) and BPE (merges by rank; Unigram is in
// hf_unigram.cc). Each turns one pre-tokenized word into vocabulary pieces, each piece naming the
// word characters it covers.
#include <climits>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "dfw/common/json_text.h"
#include "hf_tokenizer_parts.h"

namespace dfw::hf {
namespace {

class WordPiece final : public TokenModel {
 public:
  WordPiece(const Vocabulary& v, int32_t unk, std::string prefix, int max_chars)
      : v_(v), unk_(unk), prefix_(std::move(prefix)), max_chars_(max_chars) {}

  Status Tokenize(const NormalizedText& word, std::vector<Piece>& out) const override {
    const uint32_t n = static_cast<uint32_t>(word.size());
    if (static_cast<int>(n) > max_chars_) {
      out.push_back({unk_, 0, n});
      return Status::OK();
    }
    // Byte offset of each character in the word's UTF-8, so a candidate is a substring.
    utf8_ = ToUtf8(word.data(), word.size());
    starts_.assign(n + 1, 0);
    std::size_t pos = 0;
    for (uint32_t i = 0; i < n; ++i) {
      starts_[i] = pos;
      pos += ToUtf8(&word[i], 1).size();
    }
    starts_[n] = pos;
    const std::size_t first_piece = out.size();
    for (uint32_t start = 0; start < n;) {
      int32_t found = -1;
      uint32_t end = n;
      for (; end > start; --end) {
        candidate_.assign(start > 0 ? prefix_ : "");
        candidate_.append(utf8_, starts_[start], starts_[end] - starts_[start]);
        found = v_.Find(candidate_);
        if (found >= 0) break;
      }
      if (found < 0) {  // a suffix matches nothing: the whole word is unknown
        out.resize(first_piece);
        out.push_back({unk_, 0, n});
        return Status::OK();
      }
      out.push_back({found, start, end});
      start = end;
    }
    return Status::OK();
  }
  const std::string& type() const override {
    static const std::string kType = "WordPiece";
    return kType;
  }
  const std::string& continuing_subword_prefix() const override { return prefix_; }

 private:
  const Vocabulary& v_;
  int32_t unk_;
  std::string prefix_;
  int max_chars_;
  // Scratch (a tokenizer is shared across threads: thread_local would do; mutable members are
  // not safe, so each call uses locals through these thread-local buffers).
  static thread_local std::string utf8_, candidate_;
  static thread_local std::vector<std::size_t> starts_;
};
thread_local std::string WordPiece::utf8_, WordPiece::candidate_;
thread_local std::vector<std::size_t> WordPiece::starts_;

class Bpe final : public TokenModel {
 public:
  Bpe(const Vocabulary& v, std::unordered_map<std::string, int> ranks, int32_t unk, std::string prefix,
      std::string suffix, bool ignore_merges, bool byte_fallback, bool fuse_unk)
      : v_(v), ranks_(std::move(ranks)), unk_(unk), prefix_(std::move(prefix)), suffix_(std::move(suffix)),
        ignore_merges_(ignore_merges), byte_fallback_(byte_fallback), fuse_unk_(fuse_unk) {}

  Status Tokenize(const NormalizedText& word, std::vector<Piece>& out) const override {
    const uint32_t n = static_cast<uint32_t>(word.size());
    if (ignore_merges_) {  // the word as it is, no end_of_word_suffix (tokenizers looks it up so)
      const int32_t whole = v_.Find(ToUtf8(word.data(), word.size()));
      if (whole >= 0) {
        out.push_back({whole, 0, n});
        return Status::OK();
      }
    }
    struct Sym {
      std::string text;
      uint32_t first, last;
    };
    std::vector<Sym> syms;
    syms.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
      std::string t = (i > 0 ? prefix_ : "") + ToUtf8(&word[i], 1) + (i + 1 == n ? suffix_ : "");
      syms.push_back({std::move(t), i, i + 1});
    }
    std::string key;
    auto strip = [&](const std::string& s, bool later) {  // a symbol's text without the prefix (for merging)
      return later && !prefix_.empty() ? s.substr(prefix_.size()) : s;
    };
    while (syms.size() > 1) {
      int best = INT_MAX;
      std::size_t at = 0;
      for (std::size_t i = 0; i + 1 < syms.size(); ++i) {
        key = syms[i].text + " " + syms[i + 1].text;
        auto it = ranks_.find(key);
        if (it != ranks_.end() && it->second < best) {
          best = it->second;
          at = i;
        }
      }
      if (best == INT_MAX) break;
      syms[at].text += strip(syms[at + 1].text, true);
      syms[at].last = syms[at + 1].last;
      syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
    bool last_unk = false;
    for (const Sym& s : syms) {
      const int32_t id = v_.Find(s.text);
      if (id >= 0) {
        out.push_back({id, s.first, s.last});
        last_unk = false;
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        const std::size_t mark = out.size();
        for (unsigned char b : strip(s.text, s.first > 0)) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "<0x%02X>", b);
          const int32_t bid = v_.Find(hex);
          if (bid < 0) {
            all = false;
            break;
          }
          out.push_back({bid, s.first, s.last});
        }
        if (all) continue;
        out.resize(mark);
      }
      if (unk_ < 0) continue;  // no unk token: the piece is dropped, as in tokenizers
      if (fuse_unk_ && last_unk) {
        out.back().last = s.last;
        continue;
      }
      out.push_back({unk_, s.first, s.last});
      last_unk = true;
    }
    return Status::OK();
  }
  const std::string& type() const override {
    static const std::string kType = "BPE";
    return kType;
  }
  const std::string& continuing_subword_prefix() const override { return prefix_; }

 private:
  const Vocabulary& v_;
  std::unordered_map<std::string, int> ranks_;  // "left right" → merge rank
  int32_t unk_;
  std::string prefix_, suffix_;
  bool ignore_merges_, byte_fallback_, fuse_unk_;
};

std::string StringOr(const nlohmann::json& j, const char* key, const std::string& dflt) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : dflt;
}

Status ReadVocab(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab) {
  auto it = j.find("vocab");
  if (it == j.end() || !it->is_object()) return InvalidArgument("'" + origin + "': model.vocab must be an object {token: id}");
  for (const auto& [token, id] : it->items()) {
    ASSIGN_OR_RETURN(int64_t v, JsonIntIn(id, 0, kMaxTokenId, "'" + origin + "': model.vocab id of '" + token + "'"));
    vocab.Add(token, static_cast<int32_t>(v));
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<TokenModel>> MakeTokenModel(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab) {
  const nlohmann::json type = j.value("type", nlohmann::json());
  const std::string t = type.is_string() ? type.get<std::string>() : (j.contains("merges") ? "BPE" : "");
  if (t == "WordPiece") {
    RETURN_IF_ERROR(ReadVocab(j, origin, vocab));
    const std::string unk = StringOr(j, "unk_token", "[UNK]");
    const int32_t unk_id = vocab.Find(unk);
    if (unk_id < 0) return InvalidArgument("'" + origin + "': WordPiece unk_token '" + unk + "' is not in the vocabulary");
    const int max_chars = j.value("max_input_chars_per_word", 100);
    return std::unique_ptr<TokenModel>(
        std::make_unique<WordPiece>(vocab, unk_id, StringOr(j, "continuing_subword_prefix", "##"), max_chars));
  }
  if (t == "BPE") {
    // dropout 0 merges as null does; anything else makes tokenization random.
    if (j.contains("dropout") && !j["dropout"].is_null() && !(j["dropout"].is_number() && j["dropout"].get<double>() == 0)) {
      return InvalidArgument("'" + origin + "': BPE dropout " + j["dropout"].dump() +
                             " is not supported (it makes tokenization random); supported: null");
    }
    RETURN_IF_ERROR(ReadVocab(j, origin, vocab));
    std::unordered_map<std::string, int> ranks;
    auto merges = j.find("merges");
    if (merges == j.end() || !merges->is_array()) return InvalidArgument("'" + origin + "': BPE model.merges must be a list");
    int rank = 0;
    for (const auto& m : *merges) {
      if (m.is_string()) {
        ranks.emplace(m.get<std::string>(), rank++);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        ranks.emplace(m[0].get<std::string>() + " " + m[1].get<std::string>(), rank++);
      } else {
        return InvalidArgument("'" + origin + "': BPE merge " + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
      }
    }
    const std::string unk = StringOr(j, "unk_token", "");
    const int32_t unk_id = unk.empty() ? -1 : vocab.Find(unk);
    return std::unique_ptr<TokenModel>(std::make_unique<Bpe>(
        vocab, std::move(ranks), unk_id, StringOr(j, "continuing_subword_prefix", ""), StringOr(j, "end_of_word_suffix", ""),
        j.value("ignore_merges", false), j.value("byte_fallback", false), j.value("fuse_unk", false)));
  }
  if (t == "Unigram") return MakeUnigram(j, origin, vocab);
  return Unsupported(origin, "model", type, "WordPiece, BPE, Unigram");
}

}  // namespace dfw::hf
