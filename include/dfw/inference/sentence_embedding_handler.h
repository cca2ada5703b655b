// SentenceEmbeddingHandler: RunInference over text with a BERT-family sentence encoder
// (e.g. sentence-transformers/all-MiniLM-L6-v2 from scripts/fetch_minilm.sh).
//
// model_handler:
//   type: SentenceEmbeddingHandler
//   config:
//     model_path: DIR        # config.json, model.safetensors (F32), vocab.txt, tokenizer_config.json
//     input_field: text      # the row field holding the sentence (a string)
//     max_seq_length: 256    # tokens incl. [CLS]/[SEP]; longer text is truncated. Default: the
//                            # model's sentence_bert_config.json, else max_position_embeddings
//     pooling: mean          # mean | cls. Default: 1_Pooling/config.json when present, else mean
//     normalize: true        # L2-normalise the embedding (default true)
//     dtype: auto            # auto | float32 | bfloat16 | int8: the precision of the encoder's
//                            # Linear layers (attention, softmax, LayerNorm, GELU stay float32).
//                            # auto (default): per token-count bucket (1-8, 9-16, 17-64, 65+
//                            # tokens), the fastest this CPU runs whose embeddings keep cosine
//                            # >= 0.999 (bfloat16) / 0.995 (int8) to float32 on every calibration
//                            # text of the bucket (one token to the maximum length, many scripts),
//                            # measured at load (dfw/inference/precision_choice.h) and logged. Each
//                            # row runs in its bucket's dtype. An explicit dtype the CPU cannot run
//                            # is refused at planning (exit 2) naming the missing instructions.
//     min_cosine: 0.995      # replaces both bounds above (a number in (0, 1])
//     precision_check_every: 64  # one batch in N (the first included) is recomputed in float32:
//                            # per-row cosine in metrics (precision_check_cosine_ppm); a row below
//                            # the bound moves its dtype to the next safer one (int8 -> bfloat16 ->
//                            # float32) for the rest of the job in this process, with a warning
//                            # (dfw/inference/precision_monitor.h). 0: no check. Explicit dtypes too.
//     device: GPU            # GPU | CPU (GPU falls back to CPU with a warning)
// Example: a string. Prediction: a list of hidden_size floats. A non-string or invalid UTF-8
// example is dead-lettered with the reason (CheckExample); an empty string embeds [CLS] [SEP].
// Each batch is sorted by token count and run in sub-batches of 32, each padded only to its
// own longest sequence.
#pragma once

#include <memory>
#include <string_view>

#include "dfw/inference/model_handler.h"

namespace dfw {

inline constexpr std::string_view kSentenceEmbeddingHandlerType = "SentenceEmbeddingHandler";

// Handler-specific config keys (ModelHandlerOptions::extra).
const std::vector<std::string>& SentenceEmbeddingHandlerKeys();

// Reads config.json, the vocabulary and the safetensors header (not the weights) and checks that
// they agree, so a bad model directory is an invalid-invocation error before any record is read.
Result<std::unique_ptr<ModelHandler>> MakeSentenceEmbeddingHandler(ModelHandlerOptions options);

}  // namespace dfw
