// Shared by the Hugging Face tests: the committed tiny models (testdata/hf, written by
// scripts/make_tiny_hf_models.py) and their references (scripts/hf_pipeline_references.py), and
// byte → code-point offset conversion (transformers reports offsets in characters).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace dfw::testing {

inline std::string HfDir() { return std::string(DFW_SOURCE_DIR) + "/testdata/hf"; }

// A reference file under testdata/hf/references; null when missing or not JSON.
inline nlohmann::json HfReference(const std::string& name) {
  return nlohmann::json::parse(ReadFile(HfDir() + "/references/" + name + ".json"), nullptr, false);
}

// The code-point index of byte offset `byte` in UTF-8 `text`.
inline int64_t CharIndex(const std::string& text, uint32_t byte) {
  int64_t n = 0;
  for (uint32_t i = 0; i < byte && i < text.size(); ++i) n += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
  return n;
}

}  // namespace dfw::testing
