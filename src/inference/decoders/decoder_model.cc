// DecoderModel: weights by their saved names into a DecoderSpec for the backend's decoder engine,
// the paged KV cache's bookkeeping, and each step's rows and block tables handed to the engine.
#include "dfw/inference/decoder_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "inference/weights/dtype_convert.h"

namespace dfw {

// ---------------------------------------------------------------- PagedKvCache

PagedKvCache::PagedKvCache(const DecoderConfig& c, uint64_t max_bytes) {
  block_floats_ = static_cast<uint64_t>(c.num_layers) * 2 * static_cast<uint64_t>(c.num_kv_heads) * kBlockTokens *
                  static_cast<uint64_t>(c.head_dim);
  const uint64_t blocks = max_bytes / (block_floats_ * sizeof(float));
  max_blocks_ = static_cast<int>(std::min<uint64_t>(blocks, 1u << 30));
}

int PagedKvCache::AddSequence() {
  if (!free_seqs_.empty()) {
    const int id = free_seqs_.back();
    free_seqs_.pop_back();
    return id;
  }
  tables_.emplace_back();
  return static_cast<int>(tables_.size()) - 1;
}

bool PagedKvCache::Reserve(int seq, int tokens) {
  std::vector<int>& table = tables_[static_cast<std::size_t>(seq)];
  const int need = BlocksFor(tokens) - static_cast<int>(table.size());
  if (need <= 0) return true;
  if (need > free_blocks()) return false;
  for (int i = 0; i < need; ++i) {
    int id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = next_block_++;
    }
    table.push_back(id);
    ++used_blocks_;
  }
  return true;
}

void PagedKvCache::Release(int seq) {
  std::vector<int>& table = tables_[static_cast<std::size_t>(seq)];
  used_blocks_ -= static_cast<int>(table.size());
  free_.insert(free_.end(), table.begin(), table.end());
  table.clear();
  free_seqs_.push_back(seq);
}

// ---------------------------------------------------------------- weights

namespace {

std::string Shape(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

DecoderGateActivation DecoderGateActivationOf(DecoderActivation a) {
  switch (a) {
    case DecoderActivation::kSilu: return DecoderGateActivation::kSilu;
    case DecoderActivation::kGeluTanh: return DecoderGateActivation::kGeluTanh;
    case DecoderActivation::kGelu: return DecoderGateActivation::kGelu;
  }
  return DecoderGateActivation::kSilu;
}

// transformers' inverse frequencies: 1 / theta^(2i / d), then the rope_scaling rule.
std::vector<float> InverseFrequencies(const DecoderConfig& c) {
  const int half = c.head_dim / 2;
  std::vector<float> f(static_cast<std::size_t>(half));
  for (int i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.head_dim);
    f[static_cast<std::size_t>(i)] = 1.0f / std::pow(static_cast<float>(c.rope_theta), exponent);
  }
  const RopeScaling& s = c.rope_scaling;
  if (s.kind == RopeScaling::Kind::kLinear) {
    for (float& x : f) x = static_cast<float>(x / s.factor);
  } else if (s.kind == RopeScaling::Kind::kLlama3) {
    const double old_len = s.original_max_position_embeddings;
    const double low_wavelen = old_len / s.low_freq_factor, high_wavelen = old_len / s.high_freq_factor;
    for (float& x : f) {
      const double wavelen = 2 * std::numbers::pi / x;
      double scaled = wavelen > low_wavelen ? x / s.factor : x;
      if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
        const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        scaled = (1 - smooth) * scaled / s.factor + smooth * scaled;
      }
      x = static_cast<float>(scaled);
    }
  }
  return f;
}

}  // namespace

DecoderModel::DecoderModel(const DecoderConfig& config, LinearDType dtype) : config_(config), linear_dtype_(dtype) {}
DecoderModel::~DecoderModel() = default;

Status DecoderModel::CheckWeights(const DecoderConfig& config, const SafetensorsHeader& header) {
  return Read(config, header, nullptr, nullptr, LinearDType::kFloat32, 0).status();
}

Result<std::unique_ptr<DecoderModel>> DecoderModel::Load(const DecoderConfig& c, const SafetensorsFile& file,
                                                         InferenceBackend* backend, LinearDType dtype, int skinny_rows) {
  return Read(c, file.header(), &file, backend, dtype, skinny_rows);
}

Result<std::unique_ptr<DecoderModel>> DecoderModel::Read(const DecoderConfig& c, const SafetensorsHeader& header,
                                                         const SafetensorsFile* file, InferenceBackend* backend,
                                                         LinearDType dtype, int skinny_rows) {
  std::unique_ptr<DecoderModel> m(new DecoderModel(c, dtype));
  const bool check_only = file == nullptr;
  const bool gpt2 = c.family == DecoderFamily::kGpt2;
  const std::string base = gpt2 ? "transformer." : "model.";
  // Checkpoints saved from the bare model (LlamaModel, GPT2Model) have no prefix.
  const std::string prefix =
      header.Find(base + (gpt2 ? "wte.weight" : "embed_tokens.weight")) != nullptr ? base : "";
  // Every weight in float32, held by the spec's owner: the decoder engine keeps it and reads them in
  // place (CPU) or copies them and lets it go (CUDA), so they are freed once uploaded.
  auto owned = std::make_shared<std::vector<std::vector<float>>>();

  // A tensor in float32 (widened from F16/BF16), shape checked; `transpose` for GPT-2's Conv1D.
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape, bool transpose = false) -> Result<const float*> {
    const std::string full = (name.rfind("lm_head", 0) == 0 ? "" : prefix) + name;
    const TensorInfo* t = header.Find(full);
    if (t == nullptr) return InvalidArgument("no tensor '" + full + "' (a " + c.architecture + " checkpoint has it)");
    std::vector<int64_t> want = shape;
    if (transpose) std::swap(want[0], want[1]);
    if (t->shape != want) {
      return InvalidArgument("tensor '" + full + "' has shape " + Shape(t->shape) + ", expected " + Shape(want) +
                             " from config.json");
    }
    if (t->dtype != TensorDType::kF32 && t->dtype != TensorDType::kF16 && t->dtype != TensorDType::kBF16) {
      return InvalidArgument("tensor '" + full + "' is " + std::string(TensorDTypeName(t->dtype)) +
                             "; supported: F32, F16, BF16");
    }
    const std::size_t n = static_cast<std::size_t>(t->num_elements());
    if (check_only) return static_cast<const float*>(nullptr);
    std::vector<float>& out = owned->emplace_back(n);
    const uint8_t* src = file->Data(*t);
    RETURN_IF_ERROR(WidenToFloat32(t->dtype, src, n, out.data()));
    if (transpose) {  // Conv1D [in x out] → nn.Linear [out x in]
      const std::size_t rows = static_cast<std::size_t>(t->shape[0]), cols = static_cast<std::size_t>(t->shape[1]);
      std::vector<float> tr(n);
      for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < cols; ++j) tr[j * rows + i] = out[i * cols + j];
      }
      out.swap(tr);
    }
    return static_cast<const float*>(out.data());
  };
  // Rows stacked into one [sum(n) x k] matrix (q/k/v, gate/up) so the projection is one product.
  auto stacked = [&](const std::vector<std::pair<std::string, int64_t>>& parts, int64_t k) -> Result<const float*> {
    std::vector<float> all;
    for (const auto& [name, n] : parts) {
      ASSIGN_OR_RETURN(const float* p, tensor(name, {n, k}));
      if (check_only) continue;
      all.insert(all.end(), p, p + n * k);
      owned->pop_back();  // the part's own copy is no longer needed
    }
    if (check_only) return static_cast<const float*>(nullptr);
    owned->push_back(std::move(all));
    return static_cast<const float*>(owned->back().data());
  };
  auto stacked_bias = [&](const std::vector<std::pair<std::string, int64_t>>& parts) -> Result<const float*> {
    std::vector<float> all;
    for (const auto& [name, n] : parts) {
      ASSIGN_OR_RETURN(const float* p, tensor(name, {n}));
      if (check_only) continue;
      all.insert(all.end(), p, p + n);
      owned->pop_back();
    }
    if (check_only) return static_cast<const float*>(nullptr);
    owned->push_back(std::move(all));
    return static_cast<const float*>(owned->back().data());
  };

  DecoderSpec spec = DecoderSpecFromConfig(c, dtype);
  spec.skinny_rows = skinny_rows;
  const int64_t h = c.hidden_size, v = c.vocab_size, inter = c.intermediate_size;
  const int64_t q = static_cast<int64_t>(c.num_heads) * c.head_dim, kv = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  spec.layers.resize(static_cast<std::size_t>(c.num_layers));
  if (gpt2) {
    ASSIGN_OR_RETURN(spec.embed, tensor("wte.weight", {v, h}));
    ASSIGN_OR_RETURN(spec.positions, tensor("wpe.weight", {c.max_position_embeddings, h}));
    for (int l = 0; l < c.num_layers; ++l) {
      DecoderLayerWeights& L = spec.layers[static_cast<std::size_t>(l)];
      const std::string p = "h." + std::to_string(l) + ".";
      ASSIGN_OR_RETURN(L.norm1_w, tensor(p + "ln_1.weight", {h}));
      ASSIGN_OR_RETURN(L.norm1_b, tensor(p + "ln_1.bias", {h}));
      ASSIGN_OR_RETURN(L.norm2_w, tensor(p + "ln_2.weight", {h}));
      ASSIGN_OR_RETURN(L.norm2_b, tensor(p + "ln_2.bias", {h}));
      ASSIGN_OR_RETURN(L.qkv, tensor(p + "attn.c_attn.weight", {3 * h, h}, true));
      ASSIGN_OR_RETURN(L.qkv_b, tensor(p + "attn.c_attn.bias", {3 * h}));
      ASSIGN_OR_RETURN(L.o, tensor(p + "attn.c_proj.weight", {h, h}, true));
      ASSIGN_OR_RETURN(L.o_b, tensor(p + "attn.c_proj.bias", {h}));
      ASSIGN_OR_RETURN(L.up, tensor(p + "mlp.c_fc.weight", {inter, h}, true));
      ASSIGN_OR_RETURN(L.up_b, tensor(p + "mlp.c_fc.bias", {inter}));
      ASSIGN_OR_RETURN(L.down, tensor(p + "mlp.c_proj.weight", {h, inter}, true));
      ASSIGN_OR_RETURN(L.down_b, tensor(p + "mlp.c_proj.bias", {h}));
    }
    ASSIGN_OR_RETURN(spec.final_norm_w, tensor("ln_f.weight", {h}));
    ASSIGN_OR_RETURN(spec.final_norm_b, tensor("ln_f.bias", {h}));
  } else {
    ASSIGN_OR_RETURN(spec.embed, tensor("embed_tokens.weight", {v, h}));
    for (int l = 0; l < c.num_layers; ++l) {
      DecoderLayerWeights& L = spec.layers[static_cast<std::size_t>(l)];
      const std::string p = "layers." + std::to_string(l) + ".";
      ASSIGN_OR_RETURN(L.norm1_w, tensor(p + "input_layernorm.weight", {h}));
      ASSIGN_OR_RETURN(L.norm2_w, tensor(p + "post_attention_layernorm.weight", {h}));
      if (c.sandwich_norms) {
        ASSIGN_OR_RETURN(L.pre_ff_w, tensor(p + "pre_feedforward_layernorm.weight", {h}));
        ASSIGN_OR_RETURN(L.post_ff_w, tensor(p + "post_feedforward_layernorm.weight", {h}));
      }
      const std::string a = p + "self_attn.";
      ASSIGN_OR_RETURN(L.qkv, stacked({{a + "q_proj.weight", q}, {a + "k_proj.weight", kv}, {a + "v_proj.weight", kv}}, h));
      if (c.qkv_bias) {
        ASSIGN_OR_RETURN(L.qkv_b, stacked_bias({{a + "q_proj.bias", q}, {a + "k_proj.bias", kv}, {a + "v_proj.bias", kv}}));
      }
      ASSIGN_OR_RETURN(L.o, tensor(a + "o_proj.weight", {h, q}));
      if (c.o_bias) {
        ASSIGN_OR_RETURN(L.o_b, tensor(a + "o_proj.bias", {h}));
      }
      const std::string f = p + "mlp.";
      ASSIGN_OR_RETURN(L.up, stacked({{f + "gate_proj.weight", inter}, {f + "up_proj.weight", inter}}, h));
      if (c.mlp_bias) {
        ASSIGN_OR_RETURN(L.up_b, stacked_bias({{f + "gate_proj.bias", inter}, {f + "up_proj.bias", inter}}));
      }
      ASSIGN_OR_RETURN(L.down, tensor(f + "down_proj.weight", {h, inter}));
      if (c.mlp_bias) {
        ASSIGN_OR_RETURN(L.down_b, tensor(f + "down_proj.bias", {h}));
      }
    }
    ASSIGN_OR_RETURN(spec.final_norm_w, tensor("norm.weight", {h}));
  }
  spec.lm_head = spec.embed;
  if (!c.tie_word_embeddings || header.Find("lm_head.weight") != nullptr) {
    if (header.Find("lm_head.weight") == nullptr) {
      return InvalidArgument("no tensor 'lm_head.weight' (config.json sets tie_word_embeddings false)");
    }
    ASSIGN_OR_RETURN(spec.lm_head, tensor("lm_head.weight", {v, h}));
  }
  if (check_only) return m;

  // Every product's weights are read once per step, in the products' precision (int8 decode steps
  // stream float32: the streaming kernels have float32 and bfloat16 weights only).
  const int64_t bytes_per = dtype == LinearDType::kBFloat16 ? 2 : 4;
  const int64_t up = gpt2 ? inter : 2 * inter;
  const int64_t per_layer = (gpt2 ? 3 * h : q + 2 * kv) * h + h * (gpt2 ? h : q) + up * h + h * inter;
  m->streamed_bytes_ = bytes_per * (c.num_layers * per_layer + v * h);

  spec.host_weights_owner = std::move(owned);
  Result<std::unique_ptr<DeviceDecoder>> decoder = backend->CreateDecoder(spec);
  if (!decoder.ok()) {
    return decoder.status().WithContext(std::string(backend->name()) + " backend: making the decoder engine");
  }
  m->decoder_ = std::move(decoder).value();
  return m;
}

DecoderSpec DecoderSpecFromConfig(const DecoderConfig& c, LinearDType linear_dtype) {
  DecoderSpec s;
  s.gpt2 = c.family == DecoderFamily::kGpt2;
  s.vocab_size = c.vocab_size;
  s.hidden_size = c.hidden_size;
  s.intermediate_size = c.intermediate_size;
  s.num_layers = c.num_layers;
  s.num_heads = c.num_heads;
  s.num_kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.max_positions = c.max_position_embeddings;
  s.norm_eps = c.norm_eps;
  s.norm_plus_one = c.norm_plus_one;
  s.scale_embeddings = c.scale_embeddings;
  s.act = DecoderGateActivationOf(c.act);
  s.sandwich_norms = c.sandwich_norms;
  s.query_scale = c.query_scale;
  s.attn_logit_softcap = c.attn_logit_softcap;
  s.final_logit_softcap = c.final_logit_softcap;
  s.sliding_window = c.sliding_window;
  s.sliding.assign(c.sliding.begin(), c.sliding.end());
  if (!s.gpt2) s.inv_freq = InverseFrequencies(c);
  s.linear_dtype = linear_dtype;
  return s;
}

// ---------------------------------------------------------------- the step

Status DecoderModel::Step(std::span<const DecoderRow> rows, const PagedKvCache& cache, std::vector<float>& logits) {
  const DecoderConfig& c = config_;
  const bool gpt2 = c.family == DecoderFamily::kGpt2;
  for (const DecoderRow& r : rows) {
    if (r.token < 0 || r.token >= c.vocab_size) return InvalidArgument("token id " + std::to_string(r.token) + " is outside the vocabulary");
    if (r.position < 0 || r.position >= cache.capacity_tokens(r.seq)) {
      return Internal("position " + std::to_string(r.position) + " of sequence " + std::to_string(r.seq) + " has no KV-cache block");
    }
    if (gpt2 && r.position >= c.max_position_embeddings) {
      return InvalidArgument("position " + std::to_string(r.position) + " is past GPT-2's n_positions " +
                             std::to_string(c.max_position_embeddings));
    }
  }
  step_rows_.clear();
  table_offsets_.assign(1, 0);
  table_ids_.clear();
  table_seqs_.clear();
  for (const DecoderRow& r : rows) {
    // The engine feeds a sequence's rows together: look at the last table first.
    int t = static_cast<int>(table_seqs_.size()) - 1;
    if (t < 0 || table_seqs_[static_cast<std::size_t>(t)] != r.seq) {
      t = static_cast<int>(std::find(table_seqs_.begin(), table_seqs_.end(), r.seq) - table_seqs_.begin());
      if (t == static_cast<int>(table_seqs_.size())) {
        table_seqs_.push_back(r.seq);
        const std::span<const int> blocks = cache.blocks(r.seq);
        table_ids_.insert(table_ids_.end(), blocks.begin(), blocks.end());
        table_offsets_.push_back(static_cast<int32_t>(table_ids_.size()));
      }
    }
    step_rows_.push_back({r.token, r.position, t, r.logits});
  }
  DeviceBlockTables tables;
  tables.offsets = table_offsets_;
  tables.block_ids = table_ids_;
  tables.pool_blocks = cache.max_blocks();
  return decoder_->Step(step_rows_, tables, logits);
}

}  // namespace dfw
