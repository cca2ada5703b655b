// tokenizer.json decoders (token strings → text); ByteLevel and ByteFallback end in lossy UTF-8
// (utf8::Lossy), their byte tables are byte_level.cc.
#include <string>

#include "tokenizer_parts.h"

namespace dfw::tokenizers {
namespace {

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
}

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.rfind(prefix_, 0) == 0) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(0, " ");
        }
      }
      if (cleanup_) {
        for (const auto& [from, to] : std::initializer_list<std::pair<const char*, const char*>>{
                 {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"},
                 {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}}) {
          ReplaceAll(t, from, to);
        }
      }
    }
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

// Bytes back from GPT-2's characters; invalid UTF-8 in the result becomes U+FFFD, as Python's
// errors="replace".
class ByteLevelDecoder final : public Decoder {
 public:
  void Decode(std::vector<std::string>& tokens) const override {
    // Per token, as tokenizers does: all its characters from the byte table, else its text as is.
    std::string bytes;
    for (const std::string& t : tokens) {
      std::string mapped;
      bool all = true;
      for (int32_t cp : utf8::CodePoints(t)) {
        const int b = ByteFromChar(cp);
        if (b < 0) {
          all = false;
          break;
        }
        mapped.push_back(static_cast<char>(b));
      }
      bytes += all ? mapped : t;
    }
    tokens.assign(1, utf8::Lossy(bytes));
  }
};

// Replace (a string pattern) in every token.
class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  void Decode(std::vector<std::string>& tokens) const override {
    if (from_.empty()) return;
    for (std::string& t : tokens) ReplaceAll(t, from_, to_);
  }

 private:
  std::string from_, to_;
};

// ByteFallback: each run of <0xNN> tokens becomes its bytes when they are valid UTF-8, else one
// U+FFFD per byte token, as tokenizers does (so a cut inside a character shows as U+FFFDs).
class ByteFallbackDecoder final : public Decoder {
 public:
  void Decode(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    std::size_t run_tokens = 0;
    auto flush = [&] {
      if (run_tokens == 0) return;
      if (utf8::Lossy(run) == run) {
        out.push_back(run);
      } else {
        for (std::size_t i = 0; i < run_tokens; ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      run.clear();
      run_tokens = 0;
    };
    for (std::string& t : tokens) {
      const int b = ByteToken(t);
      if (b >= 0) {
        run.push_back(static_cast<char>(b));
        ++run_tokens;
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens.swap(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void Decode(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Strip: up to `start` leading and `stop` trailing `content` characters off every token.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(int32_t content, std::size_t start, std::size_t stop) : content_(content), start_(start), stop_(stop) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      const std::vector<int32_t> cps = utf8::CodePoints(t);
      std::size_t b = 0, e = cps.size();
      while (b < start_ && b < e && cps[b] == content_) ++b;
      for (std::size_t k = 0; k < stop_ && e > b && cps[e - 1] == content_; ++k) --e;
      std::string kept;
      for (std::size_t i = b; i < e; ++i) utf8::Append(kept, cps[i]);
      t.swap(kept);
    }
  }

 private:
  int32_t content_;
  std::size_t start_, stop_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->Decode(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

// Metaspace: the replacement character becomes a space, except in the first token, where (unless
// prepend_scheme is never) tokenizers drops it.
class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string rep, bool strip_first) : rep_(std::move(rep)), strip_first_(strip_first) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) ReplaceAll(tokens[i], rep_, i == 0 && strip_first_ ? "" : " ");
  }

 private:
  std::string rep_;
  bool strip_first_;
};

}  // namespace

Result<std::unique_ptr<Decoder>> MakeDecoder(const nlohmann::json& j, const std::string& origin) {
  const nlohmann::json type = j.value("type", nlohmann::json());
  const std::string t = type.is_string() ? type.get<std::string>() : "";
  if (t == "WordPiece") {
    return std::unique_ptr<Decoder>(std::make_unique<WordPieceDecoder>(j.value("prefix", std::string("##")), j.value("cleanup", true)));
  }
  if (t == "ByteLevel") return std::unique_ptr<Decoder>(std::make_unique<ByteLevelDecoder>());
  if (t == "Metaspace") {
    const std::string scheme = j.value("prepend_scheme", std::string(j.value("add_prefix_space", true) ? "always" : "never"));
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      return Unsupported(origin, "Metaspace decoder prepend_scheme", scheme, "always, first, never");
    }
    return std::unique_ptr<Decoder>(
        std::make_unique<MetaspaceDecoder>(j.value("replacement", std::string("\xE2\x96\x81")), scheme != "never"));
  }
  if (t == "Replace") {
    const nlohmann::json pat = j.value("pattern", nlohmann::json());
    if (pat.is_object() && pat.contains("String") && pat["String"].is_string() && j.value("content", nlohmann::json()).is_string()) {
      return std::unique_ptr<Decoder>(std::make_unique<ReplaceDecoder>(pat["String"].get<std::string>(), j["content"].get<std::string>()));
    }
    return Unsupported(origin, "decoder Replace with pattern", pat, "a {\"String\": ...} pattern and a string content");
  }
  if (t == "ByteFallback") return std::unique_ptr<Decoder>(std::make_unique<ByteFallbackDecoder>());
  if (t == "Fuse") return std::unique_ptr<Decoder>(std::make_unique<FuseDecoder>());
  if (t == "Strip") {
    const nlohmann::json content = j.value("content", nlohmann::json(" "));
    const std::vector<int32_t> cps = content.is_string() ? utf8::CodePoints(content.get<std::string>()) : std::vector<int32_t>();
    const nlohmann::json start = j.value("start", nlohmann::json(0)), stop = j.value("stop", nlohmann::json(0));
    if (cps.size() != 1 || !start.is_number_unsigned() || !stop.is_number_unsigned()) {
      return InvalidArgument("'" + origin + "': decoder Strip needs one \"content\" character and counts \"start\", \"stop\" >= 0");
    }
    return std::unique_ptr<Decoder>(std::make_unique<StripDecoder>(cps[0], start.get<std::size_t>(), stop.get<std::size_t>()));
  }
  if (t == "Sequence" && j.value("decoders", nlohmann::json()).is_array()) {
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const auto& p : j["decoders"]) {
      if (!p.is_object()) return InvalidArgument("'" + origin + "': a decoder in a Sequence is not an object");
      ASSIGN_OR_RETURN(auto d, MakeDecoder(p, origin));
      parts.push_back(std::move(d));
    }
    return std::unique_ptr<Decoder>(std::make_unique<SequenceDecoder>(std::move(parts)));
  }
  return Unsupported(origin, "decoder", type, "WordPiece, ByteLevel, Metaspace, Replace (string pattern), ByteFallback, Fuse, Strip, Sequence");
}

}  // namespace dfw::tokenizers
