#include "dfw/inference/calibration_text.h"

#include <array>
#include <vector>

namespace dfw {
namespace {

constexpr std::array<std::string_view, 16> kSentences = {
    "The cat sat on the mat.",
    "How do I reset my password?",
    "Stock markets fell sharply on Tuesday after the central bank raised interest rates by half a point.",
    "A man is playing a guitar on a crowded street corner while people walk past.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Please find attached the invoice for order #48213, due within 30 days.",
    "The new café near the station serves crêpes, espresso and a surprisingly good crème brûlée.",
    "Error: connection timed out after 120 seconds; retrying in 5 s (attempt 3 of 4).",
    "She finished the marathon in 3 hours and 41 minutes despite the heat.",
    "In 1969, Apollo 11 landed on the Moon and Neil Armstrong became the first person to walk on its surface, "
    "watched by an estimated 650 million people on television around the world.",
    "Transformers compute attention between every pair of tokens in a sequence, so the cost of a layer grows "
    "quadratically with the sequence length, which is why long documents are usually split into chunks.",
    "Is it going to rain tomorrow?",
    "The quarterly report shows revenue of $4.2 billion, up 12% year over year, with operating margins improving "
    "in every region except Europe, where energy costs weighed on results.",
    "Two dogs are running through a field of tall grass.",
    "To install the package, run the setup script, then restart the service and check the logs for warnings.",
    "Wir sehen uns morgen im Büro.",
};

// Texts of one to a few tokens: punctuation, a word, a symbol, an emoji, a date.
constexpr std::array<std::string_view, 36> kShortTexts = {
    "", "?", "...", "!", "!!!", "-", "#", "42", "ok", "Yes", "hello", "Thanks!", "a", "I", "the",
    "\xF0\x9F\x91\x8D",                                  // 👍
    "\xF0\x9F\x8E\x89\xF0\x9F\x8E\x89",                  // 🎉🎉
    "\xF0\x9F\x98\x82 lol",                              // 😂 lol
    "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",  // Привет
    "\xE4\xBD\xA0\xE5\xA5\xBD",                          // 你好
    "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF",  // こんにちは
    "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7",          // مرحبا
    "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",  // नमस्ते
    "e\xCC\x81" "t\xCC\x81" "e\xCC\x81",               // é t́ é with combining acute accents
    "2024-01-01", "https://example.com", "?!", "N/A",
    // A few tokens of punctuation or symbols only (6-8 with [CLS] and [SEP]).
    "?!?!?!", "!!! ???", ":) :(", "... !!!", "\xC2\xA1\xC2\xBF!?", "$$$ %%%", "\xF0\x9F\x99\x82\xF0\x9F\x99\x82\xF0\x9F\x99\x82", "-- // --",
};

// Sentences in many scripts, with emoji and combining marks (UTF-8 written out as text).
constexpr std::array<std::string_view, 24> kScriptSentences = {
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
    "ذهب الطالب إلى المكتبة لقراءة كتاب عن تاريخ العلوم.",
    "הילדים שיחקו בפארק עד שהשמש שקעה.",
    "मौसम विभाग ने कल भारी बारिश की चेतावनी जारी की है।",
    "আমি প্রতিদিন সকালে এক কাপ চা পান করি।",
    "ฉันชอบกินข้าวผัดกับไข่ดาวตอนเช้า",
    "我们明天上午十点在会议室讨论新的项目计划。",
    "東京駅から新幹線で京都まで約二時間かかります。",
    "오늘 저녁에 친구들과 함께 영화를 보러 갈 거예요.",
    "Tôi đã đọc xong cuốn sách này trong một tuần.",
    "Yarın sabah erkenden İstanbul'a gitmem gerekiyor.",
    "¿Dónde está la estación de tren más cercana?",
    "Le garçon a mangé trois croissants et bu un café crème.",
    "Zażółć gęślą jaźń, powiedział nauczyciel z uśmiechem.",
    "Great job team!!! \xF0\x9F\x8E\x89\xF0\x9F\x9A\x80\xF0\x9F\x94\xA5 See you all on Monday \xF0\x9F\x98\x8A",
    "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 family time \xE2\x9D\xA4\xEF\xB8\x8F",
    "Cafe\xCC\x81 na\xCC\x88ive re\xCC\x81sume\xCC\x81 with combining marks, and a zero\xE2\x80\x8Bwidth space.",
    "Z\xCC\xB5\xCC\x9F" "a\xCC\xB6\xCC\xA1l\xCC\xB8\xCC\xA2g\xCC\xB7\xCC\xA3o text stacks many combining marks on each letter.",
    "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY id;",
    "ERROR 0x80070005: Access is denied. [code=5] {\"retry\": false}",
    "$ 1,234.56 + 7% = ?  (approx.)  ... --- *** ###",
    "Fiat 500 vs. VW Golf: 0-100 km/h in 10.5 s vs 8.9 s.",
    "The quick brown fox jumps over the lazy dog. \xE7\x8B\x90\xE7\x8B\xB8 \xD0\xBB\xD0\xB8\xD1\x81\xD0\xB0 \xD8\xAB\xD8\xB9\xD9\x84\xD8\xA8",
};

// Long texts: the sentences above joined, 500+ words, so every model truncates them at its maximum.
std::vector<std::string> MakeCalibrationTexts() {
  std::vector<std::string> out;
  for (std::string_view s : kSentences) out.emplace_back(s);
  for (std::string_view s : kShortTexts) out.emplace_back(s);
  for (std::string_view s : kScriptSentences) out.emplace_back(s);
  std::string english, mixed, cjk;
  for (int round = 0; round < 4; ++round) {
    for (std::size_t i = 0; i < kSentences.size(); ++i) english += std::string(kSentences[(i + 5 * round) % kSentences.size()]) + " ";
    for (std::size_t i = 0; i < kScriptSentences.size(); ++i) {
      mixed += std::string(kScriptSentences[(i + 7 * round) % kScriptSentences.size()]) + " ";
    }
  }
  for (int round = 0; round < 16; ++round) {
    for (std::size_t i = 7; i < 10; ++i) cjk += std::string(kScriptSentences[i]);  // Chinese, Japanese, Korean
  }
  out.push_back(english);
  out.push_back(mixed);
  out.push_back(cjk);
  out.push_back(std::string(kSentences[10]) + " " + mixed);
  return out;
}

}  // namespace

std::span<const std::string_view> CalibrationSentences() { return kSentences; }

std::span<const std::string> CalibrationTexts() {
  static const std::vector<std::string> texts = MakeCalibrationTexts();
  return texts;
}

}  // namespace dfw
