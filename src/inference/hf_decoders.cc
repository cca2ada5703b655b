// tokenizer.json decoders (token strings → text) and GPT-2's byte ↔ character table.
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

// UTF-8 with each maximal invalid subpart replaced by one U+FFFD (Rust's from_utf8_lossy,
// Python's errors="replace").
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

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string rep, bool strip_first) : rep_(std::move(rep)), strip_first_(strip_first) {}
  void Decode(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      ReplaceAll(tokens[i], rep_, " ");
      if (i == 0 && strip_first_ && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
    }
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
    return std::unique_ptr<Decoder>(
        std::make_unique<MetaspaceDecoder>(j.value("replacement", std::string("\xE2\x96\x81")), scheme != "never"));
  }
  return Unsupported(origin, "decoder", type, "WordPiece, ByteLevel, Metaspace");
}

}  // namespace dfw::hf
