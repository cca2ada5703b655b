// A fixed calibration batch of English text for choosing a text model's precision
// (dfw/inference/precision_choice.h): sentences of 3 to ~60 words, plain and technical prose,
// numbers, punctuation, a few accents, so the batch pads like real input and exercises the
// embedding rows real text reaches. Fixed, so that every process and run measure the same thing.
#pragma once

#include <span>
#include <string_view>

namespace dfw {

std::span<const std::string_view> CalibrationSentences();

}  // namespace dfw
