// tokenizer.json decoders (token strings → text), GPT-2's byte ↔ character table, and the
// lossy UTF-8 that ends ByteLevel and ByteFallback decoding.
#include <array>
#include <string>

#include <utf8proc.h>

#include "hf_tokenizer_parts.h"
#include "unicode_class.h"

namespace dfw::hf {
namespace {

// GPT-2's table: printable Latin-1 bytes map to themselves, the rest to U+0100 upwards in order.
struct ByteTable {
  std::array<int32_t, 256> to_char{};
  ByteTable() {
    int32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[static_cast<std::size_t>(b)] = printable ? b : next++;
    }
  }
};
const ByteTable& Bytes() {
  static const ByteTable t;
  return t;
}


void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
}

}  // namespace

std::string LossyUtf8(const std::string& b) {
  std::string out;
  const std::size_t n = b.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = static_cast<unsigned char>(b[i]);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (len == 0) {
      unicode::AppendUtf8(out, 0xFFFD);
      ++i;
      continue;
    }
    std::size_t k = 1;
    for (; k < len && i + k < n; ++k) {
      const unsigned char d = static_cast<unsigned char>(b[i + k]);
      if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) break;
    }
    if (k == len) {
      out.append(b, i, len);
    } else {
      unicode::AppendUtf8(out, 0xFFFD);
    }
    i += k;
  }
  return out;
}

int ByteToken(std::string_view t) {
  // tokenizers: six bytes "<0x" HH ">", HH read by u8::from_str_radix (a leading '+' is accepted).
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  if (t[3] == '+') return hex(t[4]);
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

namespace {

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
      for (int32_t cp : CodePoints(t)) {
        const int b = ByteFromChar(cp);
        if (b < 0) {
          all = false;
          break;
        }
        mapped.push_back(static_cast<char>(b));
      }
      bytes += all ? mapped : t;
    }
    tokens.assign(1, LossyUtf8(bytes));
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
      if (LossyUtf8(run) == run) {
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
      const std::vector<int32_t> cps = CodePoints(t);
      std::size_t b = 0, e = cps.size();
      while (b < start_ && b < e && cps[b] == content_) ++b;
      for (std::size_t k = 0; k < stop_ && e > b && cps[e - 1] == content_; ++k) --e;
      std::string kept;
      for (std::size_t i = b; i < e; ++i) unicode::AppendUtf8(kept, cps[i]);
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

int32_t ByteToChar(uint8_t b) { return Bytes().to_char[b]; }

int ByteFromChar(int32_t cp) {
  if (cp < 256) {
    const int32_t mapped = Bytes().to_char[static_cast<std::size_t>(cp)];
    if (mapped == cp) return cp;
  }
  for (int b = 0; b < 256; ++b) {
    if (Bytes().to_char[static_cast<std::size_t>(b)] == cp) return b;
  }
  return -1;
}

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
    const std::vector<int32_t> cps = content.is_string() ? CodePoints(content.get<std::string>()) : std::vector<int32_t>();
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

}  // namespace dfw::hf
