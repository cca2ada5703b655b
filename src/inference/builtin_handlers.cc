// The list of built-in model handler types: the single place that knows which handlers exist
// (one line each). A new handler type is one more line here.
#include "inference/builtin_handlers.h"

#include <string>

#include "dfw/inference/hf_pipeline_handler.h"
#include "dfw/inference/mlp_handler.h"
#include "dfw/inference/sentence_embedding_handler.h"

namespace dfw {

std::vector<ModelHandlerTypeInfo> BuiltinModelHandlerTypes() {
  return {
      {std::string(kMlpHandlerType), {"dtype", "precision_check_every", "max_prob_diff"}, MakeMlpModelHandler},
      {std::string(kSentenceEmbeddingHandlerType), SentenceEmbeddingHandlerKeys(), MakeSentenceEmbeddingHandler},
      {std::string(kHfPipelineHandlerType), HfPipelineHandlerKeys(), MakeHfPipelineHandler},
  };
}

}  // namespace dfw
