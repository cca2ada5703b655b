// The Unigram model (SentencePiece's unigram language model: XLM-R, T5, DeBERTa-v3) as tokenizers
// runs it: the best-scoring segmentation of each word by Viterbi over the word's characters, where
// a character no piece covers alone costs min_score - 10 as unk; adjacent unknowns fuse into one
// piece; with byte_fallback an unknown piece becomes its UTF-8 bytes as <0xNN> pieces.
#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "tokenizers/tokenizer_parts.h"

namespace dfw::tokenizers {
namespace {

constexpr double kUnkPenalty = 10.0;  // tokenizers' K_UNK_PENALTY

class Unigram final : public TokenModel {
 public:
  Unigram(std::unordered_map<std::string, int32_t> ids, std::vector<double> scores, int32_t unk, bool byte_fallback,
          std::size_t max_piece_bytes)
      : ids_(std::move(ids)), scores_(std::move(scores)), unk_(unk), byte_fallback_(byte_fallback),
        max_piece_bytes_(max_piece_bytes) {
    min_score_ = scores_.empty() ? 0.0 : scores_[0];
    for (double s : scores_) min_score_ = std::min(min_score_, s);
  }

  Status Tokenize(const NormalizedText& word, std::vector<Piece>& out) const override {
    const uint32_t n = static_cast<uint32_t>(word.size());
    std::string encoded;  // the word's UTF-8 and each character's start in it
    std::vector<std::size_t> starts(n + 1, 0);
    for (uint32_t i = 0; i < n; ++i) {
      starts[i] = encoded.size();
      utf8::Append(encoded, word[i].cp);
    }
    starts[n] = encoded.size();
    // best[e]: the best path over characters [0, e): its score, the start of its last piece and id.
    struct Node {
      double score = 0;
      int64_t start = -1;
      int32_t id = 0;
    };
    std::vector<Node> best(n + 1);
    const double unk_score = min_score_ - kUnkPenalty;
    for (uint32_t b = 0; b < n; ++b) {
      const double here = best[b].score;
      bool single = false;  // a piece covers character b alone
      // Every vocabulary piece that starts here, shortest first (the trie's common-prefix order;
      // ties keep the first candidate, as tokenizers' strict comparison does).
      for (uint32_t e = b + 1; e <= n && starts[e] - starts[b] <= max_piece_bytes_; ++e) {
        auto it = ids_.find(encoded.substr(starts[b], starts[e] - starts[b]));
        if (it == ids_.end()) continue;
        const double candidate = scores_[static_cast<std::size_t>(it->second)] + here;
        Node& t = best[e];
        if (t.start < 0 || candidate > t.score) t = {candidate, b, it->second};
        if (e == b + 1) single = true;
      }
      if (!single) {
        Node& t = best[b + 1];
        const double candidate = unk_score + here;
        if (t.start < 0 || candidate > t.score) {
          if (unk_ < 0) {
            return InvalidArgument("Unigram model has no unk_id and cannot encode '" + ToUtf8(&word[b], 1) + "'");
          }
          t = {candidate, b, unk_};
        }
      }
    }
    // Back from the end; runs of unk pieces become one piece.
    struct Span {
      uint32_t first, last;
    };
    std::vector<Span> spans;
    bool after_unk = false;  // the piece after this one (pushed last) is unk
    for (uint32_t e = n; e > 0;) {
      const Node& node = best[e];
      const uint32_t b = static_cast<uint32_t>(node.start);
      const bool unk = unk_ >= 0 && node.id == unk_;
      if (unk && after_unk) {
        spans.back().first = b;
      } else {
        spans.push_back({b, e});
      }
      after_unk = unk;
      e = b;
    }
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
      const std::string piece = encoded.substr(starts[it->first], starts[it->last] - starts[it->first]);
      auto found = ids_.find(piece);
      if (found != ids_.end()) {
        out.push_back({found->second, it->first, it->last});
        continue;
      }
      if (byte_fallback_) {
        const std::size_t mark = out.size();
        bool all = true;
        for (unsigned char c : piece) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "<0x%02X>", c);
          auto byte = ids_.find(hex);
          if (byte == ids_.end()) {
            all = false;
            break;
          }
          out.push_back({byte->second, it->first, it->last});
        }
        if (all) continue;
        out.resize(mark);
      }
      if (unk_ < 0) return InvalidArgument("Unigram model has no unk_id and cannot encode '" + piece + "'");
      out.push_back({unk_, it->first, it->last});
    }
    return Status::OK();
  }

  const std::string& type() const override {
    static const std::string kType = "Unigram";
    return kType;
  }

 private:
  std::unordered_map<std::string, int32_t> ids_;  // piece → id (the model's own pieces only)
  std::vector<double> scores_;                    // by id
  double min_score_ = 0;
  int32_t unk_;
  bool byte_fallback_;
  std::size_t max_piece_bytes_;
};

}  // namespace

Result<std::unique_ptr<TokenModel>> MakeUnigram(const nlohmann::json& j, const std::string& origin, Vocabulary& vocab) {
  auto it = j.find("vocab");
  if (it == j.end() || !it->is_array()) {
    return InvalidArgument("'" + origin + "': Unigram model.vocab must be a list of [piece, score] pairs");
  }
  if (it->size() > (1u << 24)) return InvalidArgument("'" + origin + "': Unigram model.vocab has more than 2^24 pieces");
  std::unordered_map<std::string, int32_t> ids;
  std::vector<double> scores;
  std::size_t max_bytes = 0;
  for (const auto& p : *it) {
    const int32_t id = static_cast<int32_t>(scores.size());
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number()) {
      return InvalidArgument("'" + origin + "': Unigram model.vocab entry " + std::to_string(id) + " (" + p.dump() +
                             ") is not a [piece, score] pair");
    }
    const std::string piece = p[0].get<std::string>();
    ids[piece] = id;  // a repeated piece: the later id, as tokenizers' map keeps it
    scores.push_back(p[1].get<double>());
    vocab.Add(piece, id);
    max_bytes = std::max(max_bytes, piece.size());
  }
  int32_t unk = -1;
  const nlohmann::json u = j.value("unk_id", nlohmann::json());
  if (!u.is_null()) {
    if (!u.is_number_integer() || u.get<int64_t>() < 0 || u.get<int64_t>() >= static_cast<int64_t>(scores.size())) {
      return InvalidArgument("'" + origin + "': Unigram unk_id " + u.dump() + " is not an id of its " +
                             std::to_string(scores.size()) + "-piece vocabulary");
    }
    unk = static_cast<int32_t>(u.get<int64_t>());
  }
  const nlohmann::json bf = j.value("byte_fallback", nlohmann::json(false));
  if (!bf.is_boolean()) return InvalidArgument("'" + origin + "': Unigram byte_fallback must be true or false");
  return std::unique_ptr<TokenModel>(std::make_unique<Unigram>(std::move(ids), std::move(scores), unk, bf.get<bool>(), max_bytes));
}

}  // namespace dfw::tokenizers
