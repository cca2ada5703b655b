// token-classification (NER) as transformers' pipeline returns it: per-token entities, or grouped
// with aggregation_strategy simple / first / average / max; offsets in characters of the input.
#include <algorithm>
#include <cmath>

#include "dfw/tokenizers/utf8.h"
#include "inference/handlers/hf_tasks.h"

namespace dfw {
namespace {

struct PreEntity {
  std::string word;
  std::vector<double> scores;
  int64_t start, end;  // characters
  int index;           // token index in the encoding
  bool is_subword;
};

struct Entity {
  std::string entity;  // the label (B-PER, …)
  double score;
  int index;
  std::string word;
  int64_t start, end;
};

int64_t Chars(const std::string& text, uint32_t byte) {
  return static_cast<int64_t>(utf8::CountCodePoints(std::string_view(text).substr(0, byte)));
}

std::size_t ArgMax(const std::vector<double>& v) { return static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

// transformers' get_tag: "B-X" → (B, X); "I-X" → (I, X); anything else → (I, itself).
std::pair<char, std::string> Tag(const std::string& e) {
  if (e.rfind("B-", 0) == 0) return {'B', e.substr(2)};
  if (e.rfind("I-", 0) == 0) return {'I', e.substr(2)};
  return {'I', e};
}

Entity AggregateWord(const std::vector<PreEntity>& group, Aggregation a, const HfLabels& labels, const HfTokenizer& tok) {
  std::vector<std::string> words;
  for (const PreEntity& p : group) words.push_back(p.word);
  std::vector<double> scores;
  if (a == Aggregation::kFirst) {
    scores = group.front().scores;
  } else if (a == Aggregation::kMax) {
    const PreEntity* best = &group.front();
    for (const PreEntity& p : group) {
      if (*std::max_element(p.scores.begin(), p.scores.end()) > *std::max_element(best->scores.begin(), best->scores.end())) best = &p;
    }
    scores = best->scores;
  } else {  // average
    scores.assign(group.front().scores.size(), 0.0);
    for (const PreEntity& p : group) {
      for (std::size_t k = 0; k < scores.size(); ++k) scores[k] += p.scores[k];
    }
    for (double& s : scores) s /= static_cast<double>(group.size());
  }
  const std::size_t idx = ArgMax(scores);
  return {labels.id2label[idx], scores[idx], group.front().index, tok.TokensToString(words), group.front().start, group.back().end};
}

Value GroupValue(const std::vector<Entity>& group, const HfTokenizer& tok) {
  const std::string& first = group.front().entity;
  const std::size_t dash = first.find('-');
  double sum = 0;
  std::vector<std::string> words;
  for (const Entity& e : group) {
    sum += e.score;
    words.push_back(e.word);
  }
  Row r;
  r.Append("entity_group", Value::String(dash == std::string::npos ? first : first.substr(dash + 1)));
  r.Append("score", Value::Float(sum / static_cast<double>(group.size())));
  r.Append("word", Value::String(tok.TokensToString(words)));
  r.Append("start", Value::Int(group.front().start));
  r.Append("end", Value::Int(group.back().end));
  return Value::FromRow(std::move(r));
}

bool Ignored(const HfTaskArgs& args, const std::string& label) {
  return std::find(args.ignore_labels.begin(), args.ignore_labels.end(), label) != args.ignore_labels.end();
}

}  // namespace

Value TokenClassificationResult(const std::string& text, const TokenEncoding& enc, std::span<const float> logits,
                                const HfLabels& labels, const HfTaskArgs& args, const HfTokenizer& tok) {
  const std::size_t nl = labels.id2label.size();
  const bool word_aware = !tok.continuing_subword_prefix().empty();
  const std::optional<int32_t> unk = tok.TokenToId(tok.model_type() == "WordPiece" ? "[UNK]" : "<unk>");
  std::vector<PreEntity> pre;
  for (std::size_t i = 0; i < enc.size(); ++i) {
    if (enc.special[i] != 0) continue;  // tokenizers' special_tokens_mask, as the pipeline skips them
    std::vector<double> s(logits.begin() + static_cast<std::ptrdiff_t>(i * nl), logits.begin() + static_cast<std::ptrdiff_t>((i + 1) * nl));
    SoftmaxInPlace(s);
    PreEntity p{tok.IdToToken(enc.ids[i]), std::move(s), Chars(text, enc.offsets[i].first), Chars(text, enc.offsets[i].second),
                static_cast<int>(i), false};
    const std::string ref = text.substr(enc.offsets[i].first, enc.offsets[i].second - enc.offsets[i].first);
    if (word_aware) {
      p.is_subword = Chars(p.word, static_cast<uint32_t>(p.word.size())) != Chars(ref, static_cast<uint32_t>(ref.size()));
    } else {  // transformers' fallback: a sub-word when no space is next to its start
      const uint32_t b = enc.offsets[i].first;
      p.is_subword = b > 0 && text[b - 1] != ' ' && text[b] != ' ';
    }
    if (unk && enc.ids[i] == *unk) {
      p.word = ref;
      p.is_subword = false;
    }
    pre.push_back(std::move(p));
  }
  std::vector<Entity> entities;
  if (args.aggregation == Aggregation::kNone || args.aggregation == Aggregation::kSimple) {
    for (const PreEntity& p : pre) {
      const std::size_t idx = ArgMax(p.scores);
      entities.push_back({labels.id2label[idx], p.scores[idx], p.index, p.word, p.start, p.end});
    }
  } else {
    std::vector<PreEntity> group;
    for (PreEntity& p : pre) {
      if (!group.empty() && !p.is_subword) {
        entities.push_back(AggregateWord(group, args.aggregation, labels, tok));
        group.clear();
      }
      group.push_back(std::move(p));
    }
    if (!group.empty()) entities.push_back(AggregateWord(group, args.aggregation, labels, tok));
  }
  List out;
  if (args.aggregation == Aggregation::kNone) {
    for (const Entity& e : entities) {
      if (Ignored(args, e.entity)) continue;
      Row r;
      r.Append("entity", Value::String(e.entity));
      r.Append("score", Value::Float(e.score));
      r.Append("index", Value::Int(e.index));
      r.Append("word", Value::String(e.word));
      r.Append("start", Value::Int(e.start));
      r.Append("end", Value::Int(e.end));
      out.push_back(Value::FromRow(std::move(r)));
    }
    return Value::FromList(std::move(out));
  }
  std::vector<Entity> group;
  auto flush = [&] {
    if (group.empty()) return;
    Value g = GroupValue(group, tok);
    if (!Ignored(args, g.as_row().Find("entity_group")->as_string())) out.push_back(std::move(g));
    group.clear();
  };
  for (const Entity& e : entities) {
    if (!group.empty()) {
      const auto [bi, tag] = Tag(e.entity);
      const auto [last_bi, last_tag] = Tag(group.back().entity);
      if (!(tag == last_tag && bi != 'B')) flush();
    }
    group.push_back(e);
  }
  flush();
  return Value::FromList(std::move(out));
}

}  // namespace dfw
