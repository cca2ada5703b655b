// Encoder heads by family: tensor names as transformers saves them, run on the host.
#include "inference/encoders/hf_heads.h"

#include <cmath>
#include <cstring>

#include "dfw/backend/encoder_kernels.h"

namespace dfw {
namespace {

Result<std::vector<float>> ReadF32(const SafetensorsFile& f, const std::string& name, std::vector<int64_t> shape) {
  const TensorInfo* t = f.header().Find(name);
  if (t == nullptr) return InvalidArgument("no tensor '" + name + "' in '" + f.path() + "' (the head needs it)");
  if (t->dtype != TensorDType::kF32) {
    return InvalidArgument("tensor '" + name + "' is " + std::string(TensorDTypeName(t->dtype)) + "; heads load F32 weights");
  }
  if (t->shape != shape) {
    std::string want, got;
    for (int64_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
    for (int64_t d : t->shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
    return InvalidArgument("tensor '" + name + "' has shape [" + got + "], expected [" + want + "]");
  }
  std::vector<float> v(t->num_bytes() / sizeof(float));
  std::memcpy(v.data(), f.Data(*t), t->num_bytes());
  return v;
}

// The first of `names` the file has.
std::string FirstPresent(const SafetensorsFile& f, std::initializer_list<std::string> names) {
  for (const std::string& n : names) {
    if (f.header().Find(n) != nullptr) return n;
  }
  return *names.begin();
}

}  // namespace

Result<HeadKind> HeadKindOf(const std::string& a) {
  auto ends = [&](const std::string& s) { return a.size() >= s.size() && a.compare(a.size() - s.size(), s.size(), s) == 0; };
  if (ends("ForSequenceClassification")) return HeadKind::kSequenceClassification;
  if (ends("ForTokenClassification")) return HeadKind::kTokenClassification;
  if (ends("ForMaskedLM")) return HeadKind::kMaskedLm;
  if (ends("Model") || a.empty()) return HeadKind::kNone;
  return InvalidArgument("architecture \"" + a +
                         "\" has a head dfworker does not run; supported: *Model, *ForSequenceClassification, "
                         "*ForTokenClassification, *ForMaskedLM");
}

const char* HeadKindName(HeadKind k) {
  switch (k) {
    case HeadKind::kSequenceClassification: return "ForSequenceClassification";
    case HeadKind::kTokenClassification: return "ForTokenClassification";
    case HeadKind::kMaskedLm: return "ForMaskedLM";
    default: return "Model (no head)";
  }
}

void EncoderHead::Linear::Apply(const float* x, float* y) const {
  for (int o = 0; o < out; ++o) {
    const float* row = w.data() + static_cast<std::size_t>(o) * static_cast<std::size_t>(in);
    double acc = b.empty() ? 0.0 : b[static_cast<std::size_t>(o)];
    for (int i = 0; i < in; ++i) acc += static_cast<double>(row[i]) * x[i];
    y[o] = static_cast<float>(acc);
  }
}

Result<std::unique_ptr<EncoderHead>> EncoderHead::Load(HeadKind kind, const BertConfig& c, int num_labels,
                                                       const SafetensorsFile& f) {
  std::unique_ptr<EncoderHead> h(new EncoderHead());
  h->kind_ = kind;
  h->family_ = c.family;
  const int64_t H = c.hidden_size, L = num_labels, V = c.vocab_size;
  auto linear = [&](Linear& l, const std::string& w, const std::string& b, int64_t out, int64_t in) -> Status {
    ASSIGN_OR_RETURN(l.w, ReadF32(f, w, {out, in}));
    ASSIGN_OR_RETURN(l.b, ReadF32(f, b, {out}));
    l.out = static_cast<int>(out);
    l.in = static_cast<int>(in);
    return Status::OK();
  };
  if (c.family == EncoderFamily::kModernBert) {
    // ModernBertPredictionHead (dense → classifier_activation → LayerNorm) before every head's
    // output: classifier (labels) or decoder (the vocabulary, tied to the token embeddings).
    if (kind == HeadKind::kNone) return InvalidArgument("the model has no head (a bare encoder)");
    const ModernBertFields& m = c.modern;
    ASSIGN_OR_RETURN(h->dense_.w, ReadF32(f, "head.dense.weight", {H, H}));
    if (m.classifier_bias) {
      ASSIGN_OR_RETURN(h->dense_.b, ReadF32(f, "head.dense.bias", {H}));
    }
    h->dense_.out = h->dense_.in = static_cast<int>(H);
    ASSIGN_OR_RETURN(h->ln_g_, ReadF32(f, "head.norm.weight", {H}));
    if (m.norm_bias) {
      ASSIGN_OR_RETURN(h->ln_b_, ReadF32(f, "head.norm.bias", {H}));
    } else {
      h->ln_b_.assign(static_cast<std::size_t>(H), 0.f);
    }
    h->act_ = m.classifier_act;
    h->eps_ = c.layer_norm_eps;
    if (kind == HeadKind::kMaskedLm) {
      ASSIGN_OR_RETURN(h->out_.w, ReadF32(f, FirstPresent(f, {"decoder.weight", "model.embeddings.tok_embeddings.weight"}), {V, H}));
      if (m.decoder_bias) {
      ASSIGN_OR_RETURN(h->out_.b, ReadF32(f, "decoder.bias", {V}));
    }
      h->out_.out = static_cast<int>(V);
      h->outputs_ = c.vocab_size;
    } else {
      RETURN_IF_ERROR(linear(h->out_, "classifier.weight", "classifier.bias", L, H));
      h->outputs_ = num_labels;
    }
    h->out_.in = static_cast<int>(H);
    h->mean_pooling_ = kind == HeadKind::kSequenceClassification && m.mean_pooling;
    return h;
  }
  const bool distil = c.family == EncoderFamily::kDistilBert, roberta = c.family == EncoderFamily::kRoberta;
  const std::string base = distil ? "distilbert." : roberta ? "roberta." : "bert.";
  switch (kind) {
    case HeadKind::kNone:
      return InvalidArgument("the model has no head (a bare encoder)");
    case HeadKind::kSequenceClassification:
      if (distil) {
        RETURN_IF_ERROR(linear(h->dense_, "pre_classifier.weight", "pre_classifier.bias", H, H));
        h->act_ = Activation::kRelu;
        RETURN_IF_ERROR(linear(h->out_, "classifier.weight", "classifier.bias", L, H));
      } else if (roberta) {
        RETURN_IF_ERROR(linear(h->dense_, "classifier.dense.weight", "classifier.dense.bias", H, H));
        h->act_ = Activation::kNone;  // tanh, applied in Logits
        RETURN_IF_ERROR(linear(h->out_, "classifier.out_proj.weight", "classifier.out_proj.bias", L, H));
      } else {
        RETURN_IF_ERROR(linear(h->dense_, "bert.pooler.dense.weight", "bert.pooler.dense.bias", H, H));
        h->act_ = Activation::kNone;  // tanh
        RETURN_IF_ERROR(linear(h->out_, "classifier.weight", "classifier.bias", L, H));
      }
      h->outputs_ = num_labels;
      break;
    case HeadKind::kTokenClassification:
      RETURN_IF_ERROR(linear(h->out_, "classifier.weight", "classifier.bias", L, H));
      h->outputs_ = num_labels;
      break;
    case HeadKind::kMaskedLm: {
      std::string dense = "cls.predictions.transform.dense", ln = "cls.predictions.transform.LayerNorm";
      std::string decoder = FirstPresent(f, {"cls.predictions.decoder.weight", base + "embeddings.word_embeddings.weight"});
      std::string bias = FirstPresent(f, {"cls.predictions.bias", "cls.predictions.decoder.bias"});
      h->act_ = c.hidden_act;
      h->eps_ = c.layer_norm_eps;
      if (distil) {
        dense = "vocab_transform";
        ln = "vocab_layer_norm";
        decoder = FirstPresent(f, {"vocab_projector.weight", base + "embeddings.word_embeddings.weight"});
        bias = "vocab_projector.bias";
        h->eps_ = 1e-12f;
      } else if (roberta) {
        dense = "lm_head.dense";
        ln = "lm_head.layer_norm";
        decoder = FirstPresent(f, {"lm_head.decoder.weight", base + "embeddings.word_embeddings.weight"});
        bias = FirstPresent(f, {"lm_head.bias", "lm_head.decoder.bias"});
        h->act_ = Activation::kGelu;  // RobertaLMHead uses gelu whatever hidden_act says
      }
      RETURN_IF_ERROR(linear(h->dense_, dense + ".weight", dense + ".bias", H, H));
      ASSIGN_OR_RETURN(h->ln_g_, ReadF32(f, ln + ".weight", {H}));
      ASSIGN_OR_RETURN(h->ln_b_, ReadF32(f, ln + ".bias", {H}));
      RETURN_IF_ERROR(linear(h->out_, decoder, bias, V, H));
      h->outputs_ = c.vocab_size;
      break;
    }
  }
  return h;
}

void EncoderHead::Logits(const float* hidden, std::vector<float>& out) const {
  out.resize(static_cast<std::size_t>(outputs_));
  if (family_ == EncoderFamily::kModernBert) {  // dense → act → LayerNorm → out, for every head
    scratch_.resize(static_cast<std::size_t>(dense_.out));
    dense_.Apply(hidden, scratch_.data());
    for (float& v : scratch_) v = encoder_kernels::Activate(act_, v);
    encoder_kernels::LayerNormRow(scratch_.data(), ln_g_.data(), ln_b_.data(), scratch_.data(), scratch_.size(), eps_);
    out_.Apply(scratch_.data(), out.data());
    return;
  }
  if (kind_ == HeadKind::kTokenClassification) {
    out_.Apply(hidden, out.data());
    return;
  }
  scratch_.resize(static_cast<std::size_t>(dense_.out));
  dense_.Apply(hidden, scratch_.data());
  const bool tanh = kind_ == HeadKind::kSequenceClassification && family_ != EncoderFamily::kDistilBert;
  for (float& v : scratch_) v = tanh ? std::tanh(v) : encoder_kernels::Activate(act_, v);
  if (kind_ == HeadKind::kMaskedLm) encoder_kernels::LayerNormRow(scratch_.data(), ln_g_.data(), ln_b_.data(), scratch_.data(), scratch_.size(), eps_);
  out_.Apply(scratch_.data(), out.data());
}

}  // namespace dfw
