// HuggingFacePipelineModelHandler, task text-generation: what the handler reads before any weight
// is loaded — the settings, generation_config.json, tokenizer_config.json's special tokens — and
// the generation arguments resolved as transformers 5.24 resolves them (hf_text_generation.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/backend/backend.h"
#include "dfw/common/file.h"
#include "dfw/inference/decoder_config.h"
#include "dfw/inference/generation.h"
#include "dfw/tokenizers/tokenizer.h"
#include "dfw/record/value.h"

namespace dfw::hf_generation {

// The file's text, or "" when there is none (an optional file: generation_config.json,
// tokenizer_config.json, chat_template.jinja). One that is there but is a FIFO, a device, a folder
// or larger than `kind` allows is an error naming it (ReadFileIfPresent), never taken as absent.
Result<std::string> ReadOptionalFile(const std::string& path, const FileKind& kind);

struct TextGenSettings {
  std::string dir;
  DecoderConfig config;
  std::shared_ptr<const HfTokenizer> tokenizer;
  GenerationParams params;
  bool max_new_tokens_set = false;  // else max_length (total) bounds generation
  int max_length = 20;
  bool return_full_text = true;
  bool return_tensors = false;
  std::vector<std::string> stop;
  bool skip_special_tokens = true;
  std::optional<bool> continue_final_message;
  std::optional<bool> add_special_tokens;
  std::string prefix;
  std::string chat_template;  // "" when the model has none
  std::string bos_token, eos_token, pad_token, unk_token;
  LinearDType dtype = LinearDType::kFloat32;
  EngineOptions engine;
  bool seed_given = false;
  bool weights_absent = false;  // ModelHandlerOptions::config_only and no model.safetensors: planned from config.json
};

// transformers' generation keys, the pipeline's own, and dfworker's engine settings.
const std::vector<std::string>& GenerationKeys();
const std::vector<std::string>& PipelineKeys();
const std::vector<std::string>& EngineKeys();
const std::vector<std::string>& AllArgumentNames();  // the three, in that order

// generation_config.json as a Row of the keys this task reads (others are ignored, as a model's
// generation config often carries keys for other decoding modes); an empty Row when absent.
Result<Row> ReadGenerationConfig(const std::string& path);

// A special token's text from tokenizer_config.json (a string, or {content: …}); "" when absent.
std::string SpecialToken(const nlohmann::json& tc, const char* key);

// The call's arguments over generation_config.json, over the pipeline's defaults, over
// GenerationConfig's, into `s` (its config and tokenizer set); kInvalidArgument naming a bad one.
Status ApplyArguments(const Row& gen_config, const Row& args, TextGenSettings& s);

}  // namespace dfw::hf_generation
