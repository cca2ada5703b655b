// A sentence-transformers model directory, read as sentence-transformers reads it: the one place
// its layout is known. The sentence-embedding handler takes its defaults from it, MLTransform's
// SentenceTransformerEmbeddings its normalisation, and `export --to beam` compares what dfworker
// and sentence-transformers would each do with the directory.
//
// Files: sentence_bert_config.json (max_seq_length), 1_Pooling/config.json (the pooling module),
// modules.json (a Normalize module), config.json (max_position_embeddings), tokenizer_config.json
// (model_max_length). A file that is absent or not valid JSON leaves its fields unset: a plain
// Hugging Face directory has none of the sentence-transformers files.
#pragma once

#include <optional>
#include <string>

namespace dfw {

struct SentenceTransformersDir {
  enum class Pooling {
    kAbsent,  // no 1_Pooling/config.json (sentence-transformers then mean-pools)
    kMean,    // pooling_mode_mean_tokens
    kCls,     // pooling_mode_cls_token
    kOther,   // a pooling module of another mode (max, weighted mean, last token, ...)
  };
  std::optional<int> max_seq_length;           // sentence_bert_config.json
  Pooling pooling = Pooling::kAbsent;          // 1_Pooling/config.json
  bool normalize = false;                      // modules.json lists sentence_transformers.models.Normalize
  std::optional<int> max_position_embeddings;  // config.json
  std::optional<int> tokenizer_max_length;     // tokenizer_config.json model_max_length (an integer)
};

// Never fails: what cannot be read is unset (see above).
SentenceTransformersDir ReadSentenceTransformersDir(const std::string& dir);

}  // namespace dfw
