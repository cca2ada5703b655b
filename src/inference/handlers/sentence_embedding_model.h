// The model a SentenceEmbeddingHandler lane loads (sentence_embedding_handler.cc): text rows ->
// WordPiece ids -> one BertEncoder per dtype its token-count buckets run -> pooled embeddings, with
// the run-time float32 check (dfw/inference/precision_monitor.h). Private to the inference module.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "dfw/inference/bert_encoder.h"
#include "dfw/inference/device_memory.h"
#include "dfw/inference/model_handler.h"
#include "dfw/inference/precision_choice.h"
#include "dfw/inference/precision_monitor.h"
#include "dfw/inference/safetensors.h"
#include "dfw/tokenizers/wordpiece_tokenizer.h"

namespace dfw::sentence_embedding {

inline constexpr int kEncodeBatch = 32;        // sub-batch of the length-sorted batch (workspace size)
inline constexpr int kDefaultCheckEvery = kDefaultPrecisionCheckEvery;  // precision_monitor.h
inline constexpr int kCheckBatch = 4;          // the float32 check encoder's sub-batch (a small workspace)

// The handler's config, read once (sentence_embedding_handler.h lists the keys).
struct Settings {
  std::string dir;
  BertConfig config;
  WordPieceTokenizer tokenizer;
  BertEncoderOptions encoder;
  std::optional<LinearDType> dtype;  // the config's `dtype`; nullopt = auto
  PrecisionTolerance tolerance;      // `min_cosine` replaces both bounds when given
  int check_every = kDefaultCheckEvery;  // `precision_check_every`; 0 = no run-time check
};

// A lane's model around `encoder` (already in the plan's dtype), its encoders made for the shared
// plan `state`; `precision` is what `dtype: auto` measured (its LoadFigures), unset for an explicit
// dtype; the weights are charged to `charge` (null: no ledger) under `id`.
Result<std::unique_ptr<Model>> MakeModel(Settings s, std::unique_ptr<SafetensorsFile> file,
                                         std::unique_ptr<InferenceBackend> backend, std::unique_ptr<BertEncoder> encoder,
                                         std::shared_ptr<PrecisionPlanState> state, std::string id,
                                         std::optional<PrecisionChoice> precision,
                                         std::unique_ptr<DeviceMemoryCharge> charge);

}  // namespace dfw::sentence_embedding
