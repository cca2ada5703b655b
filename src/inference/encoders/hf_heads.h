// The heads transformers puts on an encoder (BertFor*, DistilBertFor*, RobertaFor*, ModernBertFor*), read from the
// checkpoint by their saved names and run on the host: they touch one token (sequence
// classification, a masked position) or are one small matrix per token (token classification).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dfw/inference/bert_encoder.h"
#include "dfw/inference/safetensors.h"

namespace dfw {

enum class HeadKind : uint8_t { kNone, kSequenceClassification, kTokenClassification, kMaskedLm };

// The head an architecture name carries ("BertForMaskedLM" → kMaskedLm; "BertModel" → kNone);
// an unknown suffix is kInvalidArgument listing the supported ones.
Result<HeadKind> HeadKindOf(const std::string& architecture);
const char* HeadKindName(HeadKind k);

class EncoderHead {
 public:
  // Reads the head's tensors (F32, shapes checked against `config` and `num_labels`).
  static Result<std::unique_ptr<EncoderHead>> Load(HeadKind kind, const BertConfig& config, int num_labels,
                                                   const SafetensorsFile& weights);

  // Logits from the hidden state of the first token (sequence classification), of one token
  // (token classification) or of one masked token (masked LM: vocab_size logits).
  void Logits(const float* hidden, std::vector<float>& out) const;
  HeadKind kind() const { return kind_; }
  // Sequence classification over the mean of every token's hidden state (ModernBERT's
  // classifier_pooling: mean) rather than the first token's: the caller pools and passes the mean.
  bool mean_pooling() const { return mean_pooling_; }
  int outputs() const { return outputs_; }

 private:
  struct Linear {
    std::vector<float> w, b;  // [out x in], [out]
    int out = 0, in = 0;
    void Apply(const float* x, float* y) const;
  };
  EncoderHead() = default;

  HeadKind kind_ = HeadKind::kNone;
  EncoderFamily family_ = EncoderFamily::kBert;
  Activation act_ = Activation::kGelu;
  float eps_ = 1e-12f;
  int outputs_ = 0;
  bool mean_pooling_ = false;
  Linear dense_;   // pooler / pre_classifier / classifier.dense / MLM transform (absent for tokens)
  std::vector<float> ln_g_, ln_b_;  // MLM transform LayerNorm
  Linear out_;     // classifier / out_proj / decoder
  mutable std::vector<float> scratch_;
};

}  // namespace dfw
