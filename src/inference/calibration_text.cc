#include "dfw/inference/calibration_text.h"

#include <array>

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

}  // namespace

std::span<const std::string_view> CalibrationSentences() { return kSentences; }

}  // namespace dfw
