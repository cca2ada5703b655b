// DecoderModel: weights by their saved names, the paged KV cache, and one forward step over the
// rows of many sequences.
#include "dfw/inference/decoder_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "dfw/backend/decoder_kernels.h"
#include "dfw/backend/registry.h"
#include "dfw/backend/skinny_kernels.h"
#include "inference/weights/dtype_convert.h"

namespace dfw {

// ---------------------------------------------------------------- PagedKvCache

PagedKvCache::PagedKvCache(const DecoderConfig& c, uint64_t max_bytes, Storage storage)
    : storage_(storage), layers_(c.num_layers), kv_heads_(c.num_kv_heads), head_dim_(c.head_dim) {
  block_floats_ = static_cast<uint64_t>(layers_) * 2 * static_cast<uint64_t>(kv_heads_) * kBlockTokens *
                  static_cast<uint64_t>(head_dim_);
  const uint64_t blocks = max_bytes / (block_floats_ * sizeof(float));
  max_blocks_ = static_cast<int>(std::min<uint64_t>(blocks, 1u << 30));
}

uint64_t PagedKvCache::allocated_bytes() const {
  return static_cast<uint64_t>(slabs_.size()) * kSlabBlocks * block_floats_ * sizeof(float);
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
      if (storage_ == Storage::kHost && static_cast<std::size_t>(id / kSlabBlocks) >= slabs_.size()) {
        slabs_.push_back(std::make_unique<float[]>(kSlabBlocks * block_floats_));
      }
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

float* PagedKvCache::Block(int id) {
  return slabs_[static_cast<std::size_t>(id / kSlabBlocks)].get() + static_cast<uint64_t>(id % kSlabBlocks) * block_floats_;
}

float* PagedKvCache::BlockHead(int seq, int pos, int layer, int kv, int kv_head) {
  const int id = tables_[static_cast<std::size_t>(seq)][static_cast<std::size_t>(pos / kBlockTokens)];
  const uint64_t per_head = static_cast<uint64_t>(kBlockTokens) * static_cast<uint64_t>(head_dim_);
  const uint64_t offset = ((static_cast<uint64_t>(layer) * 2 + static_cast<uint64_t>(kv)) * static_cast<uint64_t>(kv_heads_) +
                           static_cast<uint64_t>(kv_head)) * per_head;
  return Block(id) + offset;
}

// ---------------------------------------------------------------- weights

// One projection's weights: prepared for the backend (prefill) and for the streaming kernels
// (decode).
struct DecoderModel::Projection {
  const float* w = nullptr;  // host float32 [n x k] (owned_)
  int n = 0, k = 0;
  std::unique_ptr<PreparedLinear> prepared;
  skinny_kernels::SkinnyWeights skinny;
};

struct DecoderModel::Layer {
  const float* norm1_w = nullptr;  // input_layernorm / ln_1
  const float* norm1_b = nullptr;
  const float* norm2_w = nullptr;  // post_attention_layernorm / ln_2 (before the MLP; gemma2: after attention)
  const float* norm2_b = nullptr;
  const float* pre_ff_w = nullptr;   // gemma2
  const float* post_ff_w = nullptr;  // gemma2
  std::unique_ptr<Projection> qkv, o, up, down;  // up: [gate; up] stacked (gpt2: c_fc)
  const float* qkv_b = nullptr;
  const float* o_b = nullptr;
  const float* up_b = nullptr;
  const float* down_b = nullptr;
};

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

DecoderModel::DecoderModel(const DecoderConfig& config, InferenceBackend* backend, LinearDType dtype)
    : config_(config), backend_(backend), linear_dtype_(dtype) {}
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
  std::unique_ptr<DecoderModel> m(new DecoderModel(c, backend, dtype));
  m->skinny_rows_ = skinny_rows;
  const bool check_only = file == nullptr;
  const bool gpt2 = c.family == DecoderFamily::kGpt2;
  const std::string base = gpt2 ? "transformer." : "model.";
  // Checkpoints saved from the bare model (LlamaModel, GPT2Model) have no prefix.
  const std::string prefix =
      header.Find(base + (gpt2 ? "wte.weight" : "embed_tokens.weight")) != nullptr ? base : "";

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
    std::vector<float>& out = m->owned_.emplace_back(n);
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
    m->weight_bytes_ += static_cast<int64_t>(n * sizeof(float));
    return static_cast<const float*>(out.data());
  };
  // Rows stacked into one [sum(n) x k] matrix (q/k/v, gate/up) so the projection is one product.
  auto stacked = [&](const std::vector<std::pair<std::string, int64_t>>& parts, int64_t k) -> Result<const float*> {
    std::vector<float> all;
    for (const auto& [name, n] : parts) {
      ASSIGN_OR_RETURN(const float* p, tensor(name, {n, k}));
      if (check_only) continue;
      all.insert(all.end(), p, p + n * k);
      m->owned_.pop_back();  // the part's own copy is no longer needed
      m->weight_bytes_ -= static_cast<int64_t>(n * k * sizeof(float));
    }
    if (check_only) return static_cast<const float*>(nullptr);
    m->weight_bytes_ += static_cast<int64_t>(all.size() * sizeof(float));
    m->owned_.push_back(std::move(all));
    return static_cast<const float*>(m->owned_.back().data());
  };
  auto stacked_bias = [&](const std::vector<std::pair<std::string, int64_t>>& parts) -> Result<const float*> {
    std::vector<float> all;
    for (const auto& [name, n] : parts) {
      ASSIGN_OR_RETURN(const float* p, tensor(name, {n}));
      if (check_only) continue;
      all.insert(all.end(), p, p + n);
      m->owned_.pop_back();
      m->weight_bytes_ -= static_cast<int64_t>(n * sizeof(float));
    }
    if (check_only) return static_cast<const float*>(nullptr);
    m->weight_bytes_ += static_cast<int64_t>(all.size() * sizeof(float));
    m->owned_.push_back(std::move(all));
    return static_cast<const float*>(m->owned_.back().data());
  };
  // Noted here; prepared once every weight is read, for the engine the backend gives (PrepareHost
  // or the device decoder).
  auto prepare = [&](const float* w, int64_t n, int64_t k) -> Result<std::unique_ptr<Projection>> {
    if (check_only) return std::unique_ptr<Projection>();
    auto p = std::make_unique<Projection>();
    p->w = w;
    p->n = static_cast<int>(n);
    p->k = static_cast<int>(k);
    return p;
  };

  const int64_t h = c.hidden_size, v = c.vocab_size, inter = c.intermediate_size;
  const int64_t q = static_cast<int64_t>(c.num_heads) * c.head_dim, kv = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  m->layers_.resize(static_cast<std::size_t>(c.num_layers));
  if (gpt2) {
    ASSIGN_OR_RETURN(m->embed_, tensor("wte.weight", {v, h}));
    ASSIGN_OR_RETURN(m->positions_, tensor("wpe.weight", {c.max_position_embeddings, h}));
    for (int l = 0; l < c.num_layers; ++l) {
      Layer& L = m->layers_[static_cast<std::size_t>(l)];
      const std::string p = "h." + std::to_string(l) + ".";
      ASSIGN_OR_RETURN(L.norm1_w, tensor(p + "ln_1.weight", {h}));
      ASSIGN_OR_RETURN(L.norm1_b, tensor(p + "ln_1.bias", {h}));
      ASSIGN_OR_RETURN(L.norm2_w, tensor(p + "ln_2.weight", {h}));
      ASSIGN_OR_RETURN(L.norm2_b, tensor(p + "ln_2.bias", {h}));
      ASSIGN_OR_RETURN(const float* qkv, tensor(p + "attn.c_attn.weight", {3 * h, h}, true));
      ASSIGN_OR_RETURN(L.qkv, prepare(qkv, 3 * h, h));
      ASSIGN_OR_RETURN(L.qkv_b, tensor(p + "attn.c_attn.bias", {3 * h}));
      ASSIGN_OR_RETURN(const float* o, tensor(p + "attn.c_proj.weight", {h, h}, true));
      ASSIGN_OR_RETURN(L.o, prepare(o, h, h));
      ASSIGN_OR_RETURN(L.o_b, tensor(p + "attn.c_proj.bias", {h}));
      ASSIGN_OR_RETURN(const float* up, tensor(p + "mlp.c_fc.weight", {inter, h}, true));
      ASSIGN_OR_RETURN(L.up, prepare(up, inter, h));
      ASSIGN_OR_RETURN(L.up_b, tensor(p + "mlp.c_fc.bias", {inter}));
      ASSIGN_OR_RETURN(const float* down, tensor(p + "mlp.c_proj.weight", {h, inter}, true));
      ASSIGN_OR_RETURN(L.down, prepare(down, h, inter));
      ASSIGN_OR_RETURN(L.down_b, tensor(p + "mlp.c_proj.bias", {h}));
    }
    ASSIGN_OR_RETURN(m->final_norm_w_, tensor("ln_f.weight", {h}));
    ASSIGN_OR_RETURN(m->final_norm_b_, tensor("ln_f.bias", {h}));
  } else {
    ASSIGN_OR_RETURN(m->embed_, tensor("embed_tokens.weight", {v, h}));
    for (int l = 0; l < c.num_layers; ++l) {
      Layer& L = m->layers_[static_cast<std::size_t>(l)];
      const std::string p = "layers." + std::to_string(l) + ".";
      ASSIGN_OR_RETURN(L.norm1_w, tensor(p + "input_layernorm.weight", {h}));
      ASSIGN_OR_RETURN(L.norm2_w, tensor(p + "post_attention_layernorm.weight", {h}));
      if (c.sandwich_norms) {
        ASSIGN_OR_RETURN(L.pre_ff_w, tensor(p + "pre_feedforward_layernorm.weight", {h}));
        ASSIGN_OR_RETURN(L.post_ff_w, tensor(p + "post_feedforward_layernorm.weight", {h}));
      }
      const std::string a = p + "self_attn.";
      ASSIGN_OR_RETURN(const float* qkv, stacked({{a + "q_proj.weight", q}, {a + "k_proj.weight", kv}, {a + "v_proj.weight", kv}}, h));
      ASSIGN_OR_RETURN(L.qkv, prepare(qkv, q + 2 * kv, h));
      if (c.qkv_bias) {
        ASSIGN_OR_RETURN(L.qkv_b, stacked_bias({{a + "q_proj.bias", q}, {a + "k_proj.bias", kv}, {a + "v_proj.bias", kv}}));
      }
      ASSIGN_OR_RETURN(const float* o, tensor(a + "o_proj.weight", {h, q}));
      ASSIGN_OR_RETURN(L.o, prepare(o, h, q));
      if (c.o_bias) {
        ASSIGN_OR_RETURN(L.o_b, tensor(a + "o_proj.bias", {h}));
      }
      const std::string f = p + "mlp.";
      ASSIGN_OR_RETURN(const float* up, stacked({{f + "gate_proj.weight", inter}, {f + "up_proj.weight", inter}}, h));
      ASSIGN_OR_RETURN(L.up, prepare(up, 2 * inter, h));
      if (c.mlp_bias) {
        ASSIGN_OR_RETURN(L.up_b, stacked_bias({{f + "gate_proj.bias", inter}, {f + "up_proj.bias", inter}}));
      }
      ASSIGN_OR_RETURN(const float* down, tensor(f + "down_proj.weight", {h, inter}));
      ASSIGN_OR_RETURN(L.down, prepare(down, h, inter));
      if (c.mlp_bias) {
        ASSIGN_OR_RETURN(L.down_b, tensor(f + "down_proj.bias", {h}));
      }
    }
    ASSIGN_OR_RETURN(m->final_norm_w_, tensor("norm.weight", {h}));
  }
  const float* lm = m->embed_;
  if (!c.tie_word_embeddings || header.Find("lm_head.weight") != nullptr) {
    if (header.Find("lm_head.weight") == nullptr) {
      return InvalidArgument("no tensor 'lm_head.weight' (config.json sets tie_word_embeddings false)");
    }
    ASSIGN_OR_RETURN(lm, tensor("lm_head.weight", {v, h}));
  }
  ASSIGN_OR_RETURN(m->lm_head_, prepare(lm, v, h));
  if (!gpt2) m->inv_freq_ = InverseFrequencies(c);
  if (check_only) return m;

  DecoderSpec spec = DecoderSpecFromConfig(c, dtype);
  spec.embed = m->embed_;
  spec.positions = m->positions_;
  spec.final_norm_w = m->final_norm_w_;
  spec.final_norm_b = m->final_norm_b_;
  spec.lm_head = m->lm_head_->w;
  for (const Layer& L : m->layers_) {
    DecoderLayerWeights& w = spec.layers.emplace_back();
    w.norm1_w = L.norm1_w;
    w.norm1_b = L.norm1_b;
    w.norm2_w = L.norm2_w;
    w.norm2_b = L.norm2_b;
    w.pre_ff_w = L.pre_ff_w;
    w.post_ff_w = L.post_ff_w;
    w.qkv = L.qkv->w;
    w.qkv_b = L.qkv_b;
    w.o = L.o->w;
    w.o_b = L.o_b;
    w.up = L.up->w;
    w.up_b = L.up_b;
    w.down = L.down->w;
    w.down_b = L.down_b;
  }
  Result<std::unique_ptr<DeviceDecoder>> decoder = backend->CreateDecoder(spec);
  if (decoder.ok()) {
    m->decoder_ = std::move(decoder).value();
    m->weight_bytes_ = m->decoder_->weight_bytes();  // what the device holds, in its precision
    // Every product's weights are read once per step, in the device's precision.
    const int64_t bytes_per = dtype == LinearDType::kBFloat16 ? 2 : 4;
    auto count = [&](const Projection& p) { m->streamed_bytes_ += static_cast<int64_t>(p.n) * p.k * bytes_per; };
    for (const Layer& L : m->layers_) {
      for (const auto* p : {L.qkv.get(), L.o.get(), L.up.get(), L.down.get()}) count(*p);
    }
    count(*m->lm_head_);
    // The device holds them now; the host step is never run.
    m->layers_.clear();
    m->lm_head_.reset();
    m->owned_.clear();
    m->owned_.shrink_to_fit();
    m->embed_ = m->positions_ = m->final_norm_w_ = m->final_norm_b_ = nullptr;
    return m;
  }
  if (decoder.status().code() != StatusCode::kUnimplemented) {
    return decoder.status().WithContext(std::string(backend->name()) + " backend: loading the decoder onto the device");
  }
  for (Layer& L : m->layers_) {
    for (Projection* p : {L.qkv.get(), L.o.get(), L.up.get(), L.down.get()}) RETURN_IF_ERROR(m->PrepareHost(*p));
  }
  RETURN_IF_ERROR(m->PrepareHost(*m->lm_head_));
  return m;
}

Status DecoderModel::PrepareHost(Projection& p) {
  ASSIGN_OR_RETURN(auto dev, backend_->UploadWeights(p.w, static_cast<std::size_t>(p.n) * static_cast<std::size_t>(p.k) * sizeof(float)));
  const float* d = dev->f32();
  device_.push_back(std::move(dev));
  ASSIGN_OR_RETURN(p.prepared, backend_->PrepareLinear(d, p.n, p.k, linear_dtype_));
  skinny_kernels::MakeSkinnyWeights(p.w, p.n, p.k, linear_dtype_ == LinearDType::kBFloat16, p.skinny);
  streamed_bytes_ += static_cast<int64_t>(p.skinny.bytes());
  return Status::OK();
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

std::string DecoderModel::engine_description() const {
  if (decoder_ != nullptr) return decoder_->description();
  return std::string(backend_->name()) + " host decoder engine (" + std::string(LinearDTypeName(linear_dtype_)) +
         " products; attention, norms and KV cache on the host)";
}

Status DecoderModel::DeviceStep(std::span<const DecoderRow> rows, const PagedKvCache& cache, std::vector<float>& logits) {
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

// ---------------------------------------------------------------- the step

Status DecoderModel::Attention(std::span<const DecoderRow> rows, int layer, PagedKvCache& cache) {
  const DecoderConfig& c = config_;
  const int hd = c.head_dim, H = c.num_heads, KV = c.num_kv_heads;
  const int qkv_w = (H + 2 * KV) * hd;
  constexpr int B = PagedKvCache::kBlockTokens;
  const bool gpt2 = c.family == DecoderFamily::kGpt2;
  // RoPE on q and k, then every row's k and v into the cache (a row may attend to later rows' keys
  // of no sequence, and to earlier rows of its own sequence in this step).
  for (std::size_t r = 0; r < rows.size(); ++r) {
    float* row = qkv_.data() + r * static_cast<std::size_t>(qkv_w);
    if (!gpt2) {
      for (int head = 0; head < H + KV; ++head) decoder_kernels::RopeRotateHalf(row + head * hd, hd, inv_freq_.data(), rows[r].position);
    }
    const int off = rows[r].position % B;
    for (int g = 0; g < KV; ++g) {
      std::memcpy(cache.BlockHead(rows[r].seq, rows[r].position, layer, 0, g) + off * hd, row + (H + g) * hd, hd * sizeof(float));
      std::memcpy(cache.BlockHead(rows[r].seq, rows[r].position, layer, 1, g) + off * hd, row + (H + KV + g) * hd, hd * sizeof(float));
    }
  }
  const bool window = c.sliding_window > 0 && c.sliding[static_cast<std::size_t>(layer)];
  // Rows are independent here (their keys are all in the cache): split them across the threads
  // when there is enough work (long prompts), each with its own score buffer.
  auto rows_in = [&](int r0, int r1) {
    thread_local std::vector<float> scores;
    for (int ri = r0; ri < r1; ++ri) {
      const std::size_t r = static_cast<std::size_t>(ri);
      const DecoderRow& row = rows[r];
      const int first = window ? std::max(0, row.position - c.sliding_window + 1) : 0;
      const std::span<const float* const> blocks(row_blocks_.data() + row_block_at_[r], row_block_at_[r + 1] - row_block_at_[r]);
      decoder_kernels::PagedAttentionRow(qkv_.data() + r * static_cast<std::size_t>(qkv_w), attn_.data() + r * static_cast<std::size_t>(H) * hd,
                                         row.position, first, blocks, layer, H, KV, hd, c.query_scale, c.attn_logit_softcap, scores);
    }
  };
  int64_t work = 0;
  for (const DecoderRow& row : rows) work += static_cast<int64_t>(row.position + 1) * H * hd;
  skinny_kernels::ParallelFor(static_cast<int>(rows.size()), work > (1 << 18) ? BlasThreads() : 1, rows_in);
  return Status::OK();
}

Status DecoderModel::Project(const float* x, int m, const Projection& p, const float* bias, float* y) {
  if (m <= skinny_rows_) {
    skinny_kernels::SkinnyLinear(x, m, p.skinny, bias, y, BlasThreads());
    return Status::OK();
  }
  return backend_->Linear(x, *p.prepared, bias, y, m, Activation::kNone);
}

Status DecoderModel::Step(std::span<const DecoderRow> rows, PagedKvCache& cache, std::vector<float>& logits) {
  const DecoderConfig& c = config_;
  const int m = static_cast<int>(rows.size());
  const int hidden = c.hidden_size, inter = c.intermediate_size, hd = c.head_dim;
  const int H = c.num_heads, KV = c.num_kv_heads;
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
  if (decoder_ != nullptr) return DeviceStep(rows, cache, logits);
  if (cache.storage() != PagedKvCache::Storage::kHost) {
    return Internal("the host decoder step needs a KV cache with host storage, not an ids-only one");
  }
  row_blocks_.clear();
  row_block_at_.assign(1, 0);
  for (const DecoderRow& r : rows) {
    for (int p = 0; p <= r.position; p += PagedKvCache::kBlockTokens) row_blocks_.push_back(cache.BlockHead(r.seq, p, 0, 0, 0));
    row_block_at_.push_back(row_blocks_.size());
  }
  const std::size_t mh = static_cast<std::size_t>(m) * hidden;
  x_.resize(mh);
  h_.resize(mh);
  qkv_.resize(static_cast<std::size_t>(m) * (H + 2 * KV) * hd);
  attn_.resize(static_cast<std::size_t>(m) * H * hd);
  act_.resize(static_cast<std::size_t>(m) * (gpt2 ? inter : 2 * inter));
  mlp_.resize(static_cast<std::size_t>(m) * inter);
  const float emb_scale = c.scale_embeddings ? std::sqrt(static_cast<float>(hidden)) : 1.0f;
  for (int r = 0; r < m; ++r) {
    const float* e = embed_ + static_cast<std::size_t>(rows[r].token) * hidden;
    float* xr = x_.data() + static_cast<std::size_t>(r) * hidden;
    for (int i = 0; i < hidden; ++i) xr[i] = e[i] * emb_scale;
    if (gpt2) {
      const float* p = positions_ + static_cast<std::size_t>(rows[r].position) * hidden;
      for (int i = 0; i < hidden; ++i) xr[i] += p[i];
    }
  }
  auto norm = [&](const float* w, const float* b, const float* in, float* out) {
    if (gpt2) {
      decoder_kernels::LayerNormRows(in, w, b, out, m, hidden, c.norm_eps);
    } else {
      decoder_kernels::RmsNormRows(in, w, out, m, hidden, c.norm_eps, c.norm_plus_one);
    }
  };
  auto add_into_x = [&](const float* y) {
    for (std::size_t i = 0; i < mh; ++i) x_[i] += y[i];
  };
  for (int l = 0; l < c.num_layers; ++l) {
    const Layer& L = layers_[static_cast<std::size_t>(l)];
    norm(L.norm1_w, L.norm1_b, x_.data(), h_.data());
    RETURN_IF_ERROR(Project(h_.data(), m, *L.qkv, L.qkv_b, qkv_.data()));
    RETURN_IF_ERROR(Attention(rows, l, cache));
    RETURN_IF_ERROR(Project(attn_.data(), m, *L.o, L.o_b, h_.data()));
    if (c.sandwich_norms) norm(L.norm2_w, nullptr, h_.data(), h_.data());
    add_into_x(h_.data());
    norm(c.sandwich_norms ? L.pre_ff_w : L.norm2_w, L.norm2_b, x_.data(), h_.data());
    RETURN_IF_ERROR(Project(h_.data(), m, *L.up, L.up_b, act_.data()));
    decoder_kernels::MlpActivationRows(DecoderGateActivationOf(c.act), !gpt2, act_.data(), m, inter, mlp_.data());
    RETURN_IF_ERROR(Project(mlp_.data(), m, *L.down, L.down_b, h_.data()));
    if (c.sandwich_norms) norm(L.post_ff_w, nullptr, h_.data(), h_.data());
    add_into_x(h_.data());
  }
  // The final norm and the LM head on the rows that want logits only.
  int n = 0;
  for (int r = 0; r < m; ++r) {
    if (!rows[r].logits) continue;
    std::memmove(x_.data() + static_cast<std::size_t>(n) * hidden, x_.data() + static_cast<std::size_t>(r) * hidden,
                 hidden * sizeof(float));
    ++n;
  }
  if (n == 0) return Status::OK();
  last_.resize(static_cast<std::size_t>(n) * hidden);
  if (gpt2) {
    decoder_kernels::LayerNormRows(x_.data(), final_norm_w_, final_norm_b_, last_.data(), n, hidden, c.norm_eps);
  } else {
    decoder_kernels::RmsNormRows(x_.data(), final_norm_w_, last_.data(), n, hidden, c.norm_eps, c.norm_plus_one);
  }
  const std::size_t before = logits.size();
  logits.resize(before + static_cast<std::size_t>(n) * c.vocab_size);
  float* out = logits.data() + before;
  RETURN_IF_ERROR(Project(last_.data(), n, *lm_head_, nullptr, out));
  if (c.final_logit_softcap > 0) {
    const float cap = c.final_logit_softcap;
    for (std::size_t i = 0; i < static_cast<std::size_t>(n) * c.vocab_size; ++i) out[i] = cap * std::tanh(out[i] / cap);
  }
  return Status::OK();
}

}  // namespace dfw
