// tokenizer.json post-processors: frame one sequence or a pair with the model's special tokens and
// segment ids (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence).
#include <string>

#include "dfw/common/json_text.h"
#include "dfw/tokenizers/tokenizer.h"
#include "tokenizer_parts.h"

namespace dfw::tokenizers {
namespace {

// One item of a template: a special token's ids, or sequence A/B; with its segment id.
struct TemplateItem {
  bool is_sequence = false;
  int seq = 0;                // 0 = A, 1 = B (sequences)
  std::vector<int32_t> ids;   // special tokens
  int32_t type_id = 0;
};

void AppendSeq(const SeqTokens& s, int seq, int32_t type_id, TokenEncoding& out) {
  for (std::size_t i = 0; i < s.ids.size(); ++i) {
    out.ids.push_back(s.ids[i]);
    out.type_ids.push_back(type_id);
    out.offsets.push_back(s.offsets[i]);
    out.sequence.push_back(static_cast<int8_t>(seq));
    out.word.push_back(s.word[i]);
    out.special.push_back(s.special[i]);
  }
}

void AppendSpecial(int32_t id, int32_t type_id, TokenEncoding& out) {
  out.ids.push_back(id);
  out.type_ids.push_back(type_id);
  out.offsets.emplace_back(0, 0);
  out.sequence.push_back(-1);
  out.word.push_back(-1);
  out.special.push_back(1);
}

// ByteLevel's trim_offsets: the offsets of a token leave out its leading/trailing spaces (Ġ), but
// the space add_prefix_space put before the first word is kept.
void TrimOffsets(const Vocabulary& v, bool add_prefix_space, TokenEncoding& out) {
  const int32_t space = ByteToChar(' ');
  for (std::size_t i = 0; i < out.ids.size(); ++i) {
    if (out.sequence[i] < 0) continue;
    const std::string& tok = v.tokens[static_cast<std::size_t>(out.ids[i])];
    std::vector<int32_t> cps;
    for (std::size_t k = 0; k < tok.size();) {  // the token's code points (its text is valid UTF-8)
      const unsigned char c = static_cast<unsigned char>(tok[k]);
      const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      int32_t cp = len == 1 ? c : c & (0x3F >> (len - 1));
      for (int m = 1; m < len && k + static_cast<std::size_t>(m) < tok.size(); ++m) cp = (cp << 6) | (tok[k + static_cast<std::size_t>(m)] & 0x3F);
      cps.push_back(cp);
      k += static_cast<std::size_t>(len);
    }
    auto is_space = [&](int32_t cp) { return cp == space || cp == ' '; };
    uint32_t lead = 0, trail = 0;
    while (lead < cps.size() && is_space(cps[lead])) ++lead;
    while (trail < cps.size() && is_space(cps[cps.size() - 1 - trail])) ++trail;
    auto& [b, e] = out.offsets[i];
    if (lead > 0) {
      const bool first = i == 0 || b == 0;
      if (!(first && add_prefix_space && lead == 1)) b = std::min(b + lead, e);
    }
    if (trail > 0 && e >= trail) e = std::max(e - trail, b);
  }
}

class PostTemplate final : public PostProcessor {
 public:
  PostTemplate(std::vector<TemplateItem> single, std::vector<TemplateItem> pair) : single_(std::move(single)), pair_(std::move(pair)) {}
  int AddedTokens(bool pair) const override {
    int n = 0;
    for (const TemplateItem& it : pair ? pair_ : single_) n += it.is_sequence ? 0 : static_cast<int>(it.ids.size());
    return n;
  }
  void Process(const SeqTokens& a, const SeqTokens* b, TokenEncoding& out) const override {
    out.Clear();
    for (const TemplateItem& it : b != nullptr ? pair_ : single_) {
      if (it.is_sequence) {
        AppendSeq(it.seq == 0 ? a : *b, it.seq, it.type_id, out);
      } else {
        for (int32_t id : it.ids) AppendSpecial(id, it.type_id, out);
      }
    }
  }

 private:
  std::vector<TemplateItem> single_, pair_;
};

class PostRoberta final : public PostProcessor {
 public:
  PostRoberta(const Vocabulary& v, int32_t cls, int32_t sep, bool trim, bool prefix)
      : v_(v), cls_(cls), sep_(sep), trim_(trim), prefix_(prefix) {}
  int AddedTokens(bool pair) const override { return pair ? 4 : 2; }
  void Process(const SeqTokens& a, const SeqTokens* b, TokenEncoding& out) const override {
    out.Clear();
    AppendSpecial(cls_, 0, out);
    AppendSeq(a, 0, 0, out);
    AppendSpecial(sep_, 0, out);
    if (b != nullptr) {
      AppendSpecial(sep_, 0, out);
      AppendSeq(*b, 1, 0, out);
      AppendSpecial(sep_, 0, out);
    }
    if (trim_) TrimOffsets(v_, prefix_, out);
  }

 private:
  const Vocabulary& v_;
  int32_t cls_, sep_;
  bool trim_, prefix_;
};

class ByteLevelTrim final : public PostProcessor {
 public:
  ByteLevelTrim(const Vocabulary& v, bool trim, bool prefix) : v_(v), trim_(trim), prefix_(prefix) {}
  int AddedTokens(bool) const override { return 0; }
  void Process(const SeqTokens& a, const SeqTokens* b, TokenEncoding& out) const override {
    out.Clear();
    AppendSeq(a, 0, 0, out);
    if (b != nullptr) AppendSeq(*b, 1, 1, out);
    if (trim_) TrimOffsets(v_, prefix_, out);
  }

 private:
  const Vocabulary& v_;
  bool trim_, prefix_;
};

// [token, id] pairs of BertProcessing/RobertaProcessing.
// A special token's id, checked against the vocabulary before it is narrowed.
Result<int32_t> SpecialId(const nlohmann::json& id, const Vocabulary& vocab, const std::string& what) {
  const int64_t n = static_cast<int64_t>(vocab.tokens.size());
  if (n == 0) return InvalidArgument(what + ": the vocabulary is empty");
  ASSIGN_OR_RETURN(int64_t v, JsonIntIn(id, 0, n - 1, what + " (an id of its " + std::to_string(n) + "-token vocabulary)"));
  return static_cast<int32_t>(v);
}

// A type id (a segment: 0 or 1 in practice), checked before it is narrowed.
Result<int> TypeId(const nlohmann::json& s, const std::string& origin) {
  auto it = s.find("type_id");
  if (it == s.end()) return 0;
  ASSIGN_OR_RETURN(int64_t v, JsonIntIn(*it, 0, 255, "'" + origin + "': a TemplateProcessing type_id"));
  return static_cast<int>(v);
}

Result<int32_t> SpecialPair(const nlohmann::json& j, const char* key, const std::string& origin, const Vocabulary& vocab) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer()) {
    return InvalidArgument("'" + origin + "': post_processor \"" + key + "\" must be [token, id]");
  }
  return SpecialId((*it)[1], vocab, "'" + origin + "': post_processor \"" + key + "\" id");
}

Result<std::vector<TemplateItem>> ParseTemplate(const nlohmann::json& items, const nlohmann::json& specials, const std::string& origin,
                                                const Vocabulary& vocab) {
  std::vector<TemplateItem> out;
  if (!items.is_array()) return InvalidArgument("'" + origin + "': TemplateProcessing template must be a list");
  for (const auto& it : items) {
    TemplateItem item;
    if (it.contains("Sequence")) {
      const auto& s = it["Sequence"];
      item.is_sequence = true;
      const std::string id = s.value("id", std::string("A"));
      if (id != "A" && id != "B") return InvalidArgument("'" + origin + "': TemplateProcessing sequence id '" + id + "'; allowed: A, B");
      item.seq = id == "B" ? 1 : 0;
      ASSIGN_OR_RETURN(item.type_id, TypeId(s, origin));
    } else if (it.contains("SpecialToken")) {
      const auto& s = it["SpecialToken"];
      const std::string name = s.value("id", std::string());
      ASSIGN_OR_RETURN(item.type_id, TypeId(s, origin));
      if (!specials.is_object() || !specials.contains(name) || !specials[name].contains("ids")) {
        return InvalidArgument("'" + origin + "': TemplateProcessing special token '" + name + "' has no ids in special_tokens");
      }
      if (!specials[name]["ids"].is_array()) return InvalidArgument("'" + origin + "': special_tokens '" + name + "' ids must be a list");
      for (const auto& id : specials[name]["ids"]) {
        ASSIGN_OR_RETURN(int32_t v, SpecialId(id, vocab, "'" + origin + "': special_tokens '" + name + "' id"));
        item.ids.push_back(v);
      }
    } else {
      return InvalidArgument("'" + origin + "': a TemplateProcessing item is neither Sequence nor SpecialToken");
    }
    out.push_back(std::move(item));
  }
  return out;
}

// Each sequence the template frames appears once: A for one text, A and B for a pair.
Status CheckSequences(const std::vector<TemplateItem>& items, bool pair, const std::string& origin) {
  int a = 0, b = 0;
  for (const TemplateItem& it : items) {
    if (it.is_sequence) (it.seq == 0 ? a : b) += 1;
  }
  if (a != 1 || b != (pair ? 1 : 0)) {
    return InvalidArgument("'" + origin + "': TemplateProcessing " + (pair ? "pair" : "single") +
                           " template must hold " + (pair ? "sequences A and B once each" : "sequence A once"));
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<PostProcessor>> MakePostProcessor(const nlohmann::json& j, const std::string& origin,
                                                         const Vocabulary& vocab) {
  const nlohmann::json type = j.value("type", nlohmann::json());
  const std::string t = type.is_string() ? type.get<std::string>() : "";
  if (t == "TemplateProcessing") {
    ASSIGN_OR_RETURN(auto single, ParseTemplate(j.value("single", nlohmann::json()), j.value("special_tokens", nlohmann::json()), origin, vocab));
    ASSIGN_OR_RETURN(auto pair, ParseTemplate(j.value("pair", nlohmann::json()), j.value("special_tokens", nlohmann::json()), origin, vocab));
    RETURN_IF_ERROR(CheckSequences(single, false, origin));
    RETURN_IF_ERROR(CheckSequences(pair, true, origin));
    return std::unique_ptr<PostProcessor>(std::make_unique<PostTemplate>(std::move(single), std::move(pair)));
  }
  if (t == "BertProcessing") {
    ASSIGN_OR_RETURN(int32_t cls, SpecialPair(j, "cls", origin, vocab));
    ASSIGN_OR_RETURN(int32_t sep, SpecialPair(j, "sep", origin, vocab));
    std::vector<TemplateItem> single = {{false, 0, {cls}, 0}, {true, 0, {}, 0}, {false, 0, {sep}, 0}};
    std::vector<TemplateItem> pair = single;
    pair.push_back({true, 1, {}, 1});
    pair.push_back({false, 0, {sep}, 1});
    return std::unique_ptr<PostProcessor>(std::make_unique<PostTemplate>(std::move(single), std::move(pair)));
  }
  if (t == "RobertaProcessing") {
    ASSIGN_OR_RETURN(int32_t cls, SpecialPair(j, "cls", origin, vocab));
    ASSIGN_OR_RETURN(int32_t sep, SpecialPair(j, "sep", origin, vocab));
    return std::unique_ptr<PostProcessor>(std::make_unique<PostRoberta>(vocab, cls, sep, j.value("trim_offsets", true),
                                                                    j.value("add_prefix_space", true)));
  }
  if (t == "ByteLevel") {
    return std::unique_ptr<PostProcessor>(
        std::make_unique<ByteLevelTrim>(vocab, j.value("trim_offsets", true), j.value("add_prefix_space", true)));
  }
  return Unsupported(origin, "post_processor", type, "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel");
}

}  // namespace dfw::tokenizers
