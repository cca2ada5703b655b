// Fixed calibration text for choosing a text model's precision (dfw/inference/precision_choice.h).
// Fixed, so that every process and run measure the same thing.
//
// CalibrationSentences: the timed batch, 16 English sentences of 3 to ~60 words (plain and
// technical prose, numbers, punctuation, a few accents), so the batch pads like real input.
//
// CalibrationTexts: the rows whose accuracy is judged, chosen to reach the rows where a reduced
// precision does worst: the 16 sentences, plus texts of one to a few tokens (an empty string, a
// lone `?`, `...`, one word, one emoji) where [CLS] and [SEP] dominate a mean-pooled embedding;
// emoji, combining marks and zero-width characters; sentences in many scripts (Cyrillic, Greek,
// Arabic, Hebrew, Devanagari, Bengali, Thai, Chinese, Japanese, Korean, Vietnamese, Turkish, …);
// and long texts of 500+ words, so a row reaches any model's maximum length (truncated there).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace dfw {

std::span<const std::string_view> CalibrationSentences();

std::span<const std::string> CalibrationTexts();

}  // namespace dfw
