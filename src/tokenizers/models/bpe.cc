// The BPE model (GPT-2, RoBERTa, Llama-style SentencePiece BPE): a word's characters merged pair by
// pair by merge rank; byte-level or SentencePiece-style with byte_fallback, fuse_unk, ignore_merges.
// Each piece names the word characters it covers.
#include <climits>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "tokenizers/tokenizer_parts.h"

namespace dfw::tokenizers {
namespace {

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

}  // namespace

Result<std::unique_ptr<TokenModel>> MakeBpe(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab) {
  // dropout 0 merges as null does; anything else makes tokenization random.
  if (j.contains("dropout") && !j["dropout"].is_null() && !(j["dropout"].is_number() && j["dropout"].get<double>() == 0)) {
    return InvalidArgument("'" + origin + "': BPE dropout " + j["dropout"].dump() +
                           " is not supported (it makes tokenization random); supported: null");
  }
  RETURN_IF_ERROR(ReadVocabObject(j, origin, vocab));
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

}  // namespace dfw::tokenizers
