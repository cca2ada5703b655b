// task: text-generation — arguments resolved as transformers resolves them, prompts built as the
// pipeline builds them (prefix, chat template), the engine, and results shaped as the pipeline's.
#include "inference/handlers/hf_text_generation.h"

#include "inference/decoders/hf_generation_args.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "dfw/backend/cpu_isa.h"
#include "dfw/backend/registry.h"
#include "dfw/common/json_text.h"
#include "dfw/inference/decoder_model.h"
#include "dfw/inference/device_memory.h"
#include "dfw/inference/generation.h"
#include "dfw/inference/hf_pipeline_handler.h"
#include "dfw/tokenizers/tokenizer.h"
#include "dfw/inference/safetensors.h"
#include "dfw/python/python.h"

namespace dfw {
namespace {

using nlohmann::json;
using namespace hf_generation;

class TextGenerationModel;

class TextGenerationHandler final : public ModelHandler {
 public:
  TextGenerationHandler(ModelHandlerOptions options, TextGenSettings s) : ModelHandler(std::move(options)), s_(std::move(s)) {}
  std::string_view type() const override { return kHfPipelineHandlerType; }
  // Rows per message: enough sequences to keep the engine's batch full.
  int64_t MaxMessageRows() const override { return s_.engine.max_sequences; }

  std::optional<WorkspaceEstimate> EstimateWorkspace() const override;
  std::optional<WorkEstimate> EstimateWork() const override;

  Result<std::unique_ptr<Model>> LoadModel(const ModelProcessContext& process) const override;

 private:
  TextGenSettings s_;
};

class TextGenerationModel final : public Model {
 public:
  TextGenerationModel(const TextGenSettings& s, std::unique_ptr<SafetensorsFile> file, std::unique_ptr<InferenceBackend> backend,
                      std::unique_ptr<DecoderModel> model)
      : s_(s), file_(std::move(file)), backend_(std::move(backend)), model_(std::move(model)),
        engine_(model_.get(), s.engine) {}

  Status CheckExample(const Value& example) const override {
    std::vector<int32_t> ids;
    std::string text;
    return Prompt(example, ids, text);
  }

  void ChargeWeights(std::unique_ptr<DeviceMemoryCharge> charge, const std::string& name) {
    charge_ = std::move(charge);
    if (charge_ != nullptr) charge_->ChargeOrDefer(static_cast<uint64_t>(byte_size()), "model weights of '" + name + "'");
  }

  Status RunInference(std::span<const Value* const> batch, std::vector<Value>& predictions) override {
    if (charge_ != nullptr) RETURN_IF_ERROR(charge_->Settle());
    std::vector<GenerationRequest> requests(batch.size());
    std::vector<GenerationParams> params(batch.size(), s_.params);
    std::vector<std::string> prompt_texts(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      RETURN_IF_ERROR(Prompt(*batch[i], requests[i].prompt, prompt_texts[i]).WithContext("example " + std::to_string(i)));
      if (!s_.max_new_tokens_set) {
        params[i].max_new_tokens = std::max(0, s_.max_length - static_cast<int>(requests[i].prompt.size()));
      }
      requests[i].params = &params[i];
      requests[i].key = std::hash<std::string>{}(batch[i]->ToJson());
      if (!s_.stop.empty()) {
        requests[i].stop = [this](std::span<const int32_t> generated) { return HitsStopString(generated); };
      }
    }
    // max_new_tokens 0 (or a max_length the prompt already reaches): nothing is generated.
    std::vector<std::size_t> run;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (params[i].max_new_tokens > 0) run.push_back(i);
    }
    std::vector<GenerationRequest> live;
    for (std::size_t i : run) live.push_back(requests[i]);
    std::vector<std::vector<GeneratedSequence>> out;
    GenerationStats stats;
    RETURN_IF_ERROR(engine_.Run(live, out, stats));
    std::vector<std::vector<GeneratedSequence>> all(batch.size());
    for (std::size_t k = 0; k < run.size(); ++k) all[run[k]] = std::move(out[k]);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (all[i].empty()) all[i].resize(static_cast<std::size_t>(params[i].num_return_sequences));
      List results;
      for (const GeneratedSequence& g : all[i]) {
        results.push_back(PipelineResult(*batch[i], prompt_texts[i], requests[i].prompt, g));
      }
      predictions.push_back(Value::FromList(std::move(results)));
    }
    last_.clear();
    last_.emplace_back("num_generated_tokens", stats.generated_tokens);
    last_.emplace_back("num_prefill_tokens", stats.prefill_tokens);
    last_.emplace_back("generation_steps", stats.steps);
    last_.emplace_back("kv_cache_preemptions", stats.preemptions);
    last_.emplace_back("max_concurrent_sequences", stats.max_active);
    for (double t : stats.time_to_first_token_s) last_.emplace_back("time_to_first_token_ms", static_cast<int64_t>(t * 1e3));
    if (stats.decode_seconds > 0) {
      const double decoded = static_cast<double>(stats.generated_tokens);
      last_.emplace_back("decode_tokens_per_sec", static_cast<int64_t>(decoded / (stats.decode_seconds + stats.prefill_seconds)));
    }
    if (stats.prefill_seconds > 0) {
      last_.emplace_back("prefill_tokens_per_sec", static_cast<int64_t>(static_cast<double>(stats.prefill_tokens) / stats.prefill_seconds));
    }
    return Status::OK();
  }

  std::vector<std::pair<std::string, int64_t>> BatchFigures() const override { return last_; }
  std::vector<std::pair<std::string, int64_t>> LoadFigures() const override {
    return {{"linear_dtype_bits", LinearDTypeBits(model_->linear_dtype())},
            {"kv_cache_bytes", static_cast<int64_t>(s_.engine.kv_cache_bytes)}};
  }

  int64_t GetNumBytes(std::span<const Value* const> batch) const override {
    int64_t n = 0;
    for (const Value* v : batch) n += static_cast<int64_t>(v->is_string() ? v->as_string().size() : v->ToJson().size());
    return n;
  }
  int64_t byte_size() const override { return model_->weight_bytes(); }
  std::string_view device() const override { return backend_->name(); }

 private:
  // The prompt's ids and text (the string, or the rendered chat) for one example, with every check
  // an example can fail: its type, UTF-8, the chat's shape, the template, the context length.
  Status Prompt(const Value& example, std::vector<int32_t>& ids, std::string& text) const {
    const HfTokenizer& tok = *s_.tokenizer;
    TokenEncoding enc;
    bool drop_special = false;
    if (example.is_string()) {
      text = example.as_string();
      RETURN_IF_ERROR(tok.Encode(s_.prefix + text, std::nullopt, 0, enc));
      drop_special = s_.add_special_tokens.has_value() && !*s_.add_special_tokens;
    } else if (example.is_list()) {
      std::string rendered;
      RETURN_IF_ERROR(RenderChat(example.as_list(), rendered));
      RETURN_IF_ERROR(tok.Encode(rendered, std::nullopt, 0, enc));
      drop_special = true;  // apply_chat_template tokenizes with add_special_tokens=False
    } else {
      return InvalidArgument("text-generation takes a string or a chat (a list of {role, content} rows), got " +
                             std::string(example.TypeName()) + " " + example.ToJson());
    }
    ids.clear();
    for (std::size_t i = 0; i < enc.size(); ++i) {
      if (drop_special && enc.sequence[i] < 0) continue;
      ids.push_back(enc.ids[i]);
    }
    if (ids.empty()) return InvalidArgument("the prompt has no tokens (transformers cannot generate from an empty prompt either)");
    const int limit = s_.config.max_position_embeddings;
    if (static_cast<int>(ids.size()) > limit) {
      return InvalidArgument("the prompt is " + std::to_string(ids.size()) + " tokens, longer than the model's context (" +
                             "max_position_embeddings " + std::to_string(limit) + "); it is not truncated");
    }
    const int new_tokens = s_.max_new_tokens_set ? s_.params.max_new_tokens : std::max(0, s_.max_length - static_cast<int>(ids.size()));
    if (s_.config.family == DecoderFamily::kGpt2 && static_cast<int>(ids.size()) + new_tokens > limit) {
      return InvalidArgument("the prompt is " + std::to_string(ids.size()) + " tokens; with max_new_tokens " + std::to_string(new_tokens) +
                             " it passes GPT-2's n_positions " + std::to_string(limit) + " (learned positions end there)");
    }
    return engine_.CheckFits(static_cast<int>(ids.size()) + new_tokens).WithContext("prompt of " + std::to_string(ids.size()) + " tokens");
  }

  Status RenderChat(const List& messages, std::string& out) const {
    if (s_.chat_template.empty()) {
      return InvalidArgument("the input is a chat (a list of messages) but '" + s_.dir +
                             "' has no chat template (tokenizer_config.json \"chat_template\" or chat_template.jinja)");
    }
    if (messages.empty()) return InvalidArgument("the chat has no messages");
    for (const Value& m : messages) {
      if (!m.is_row() || m.as_row().Find("role") == nullptr || !m.as_row().Find("role")->is_string()) {
        return InvalidArgument("a chat message must be a row with a string 'role' (and 'content'), got " + m.ToJson());
      }
    }
    const Value* last_role = messages.back().as_row().Find("role");
    const bool cont = s_.continue_final_message.value_or(last_role->as_string() == "assistant");
    // Jinja2 in transformers' apply_chat_template environment (dfw/python/python.h), with the
    // variables it passes: the messages, tools/documents (none), the prompt flag, special tokens.
    std::string vars = "{\"messages\": [";
    for (std::size_t i = 0; i < messages.size(); ++i) vars += (i ? ", " : "") + messages[i].ToJson();
    vars += "], \"add_generation_prompt\": " + std::string(cont ? "false" : "true") + ", \"tools\": null, \"documents\": null";
    for (const auto& [name, token] : {std::pair<const char*, const std::string*>{"bos_token", &s_.bos_token},
                                      {"eos_token", &s_.eos_token}, {"pad_token", &s_.pad_token}, {"unk_token", &s_.unk_token}}) {
      vars += std::string(", \"") + name + "\": " + json(*token).dump(-1, ' ', false, json::error_handler_t::replace);
    }
    vars += "}";
    ASSIGN_OR_RETURN(out, python::RenderChatTemplate("chat_template", s_.chat_template, vars));
    if (cont) {
      // transformers: the rendered chat ends right after the final message's content.
      const Value* content = messages.back().as_row().Find("content");
      const std::string final = content != nullptr && content->is_string() ? content->as_string() : "";
      const std::size_t at = final.empty() ? std::string::npos : out.rfind(final);
      if (at == std::string::npos) {
        return InvalidArgument("continue_final_message: the final message's content is not in the rendered chat");
      }
      out.resize(at + final.size());
    }
    return Status::OK();
  }

  // transformers' StopStringCriteria: a stop string that ends in the text of the last token.
  bool HitsStopString(std::span<const int32_t> generated) const {
    std::size_t longest = 0;
    for (const std::string& s : s_.stop) longest = std::max(longest, s.size());
    const std::size_t take = std::min(generated.size(), longest + 1);
    const std::span<const int32_t> tail = generated.subspan(generated.size() - take);
    const std::string all = s_.tokenizer->Decode(tail, false);
    const std::string before = s_.tokenizer->Decode(tail.first(tail.size() - 1), false);
    // The text the last token changed starts where `before` and `all` part (a character split
    // across tokens decodes to U+FFFD in `before`, so lengths alone do not tell).
    std::size_t stable = 0;
    while (stable < before.size() && stable < all.size() && before[stable] == all[stable]) ++stable;
    for (const std::string& s : s_.stop) {
      const std::size_t at = all.rfind(s);
      if (at != std::string::npos && at + s.size() > stable) return true;
    }
    return false;
  }

  Value PipelineResult(const Value& example, const std::string& prompt_text, const std::vector<int32_t>& prompt,
               const GeneratedSequence& g) const {
    Row r;
    if (s_.return_tensors) {
      List ids;
      for (int32_t id : prompt) ids.push_back(Value::Int(id));
      for (int32_t id : g.tokens) ids.push_back(Value::Int(id));
      r.Append("generated_token_ids", Value::FromList(std::move(ids)));
      return Value::FromRow(std::move(r));
    }
    std::string text = s_.tokenizer->Decode(g.tokens, s_.skip_special_tokens);
    if (!s_.return_full_text) {
      r.Append("generated_text", Value::String(std::move(text)));
    } else if (example.is_string()) {
      r.Append("generated_text", Value::String(prompt_text + text));
    } else {
      List messages = example.as_list();
      const bool cont = s_.continue_final_message.value_or(messages.back().as_row().Find("role")->as_string() == "assistant");
      if (cont) {
        Row last = messages.back().as_row();
        Value* content = last.FindMutable("content");
        const std::string before = content != nullptr && content->is_string() ? content->as_string() : "";
        Row rebuilt;
        rebuilt.Append("role", *last.Find("role"));
        rebuilt.Append("content", Value::String(before + text));
        messages.back() = Value::FromRow(std::move(rebuilt));
      } else {
        Row added;
        added.Append("role", Value::String("assistant"));
        added.Append("content", Value::String(std::move(text)));
        messages.push_back(Value::FromRow(std::move(added)));
      }
      r.Append("generated_text", Value::FromList(std::move(messages)));
    }
    (void)prompt;
    return Value::FromRow(std::move(r));
  }

  TextGenSettings s_;
  std::unique_ptr<SafetensorsFile> file_;
  std::unique_ptr<InferenceBackend> backend_;
  std::unique_ptr<DecoderModel> model_;
  mutable GenerationEngine engine_;
  std::unique_ptr<DeviceMemoryCharge> charge_;
  std::vector<std::pair<std::string, int64_t>> last_;
};

Result<std::unique_ptr<Model>> TextGenerationHandler::LoadModel(const ModelProcessContext& process) const {
  ASSIGN_OR_RETURN(auto charge, DeviceMemoryCharge::Open(process));
  ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(s_.dir + "/model.safetensors"));
  RETURN_IF_ERROR(file->CheckFiniteTensors());
  // device GPU: the CUDA backend, whose decoder engine runs the whole step on the GPU; otherwise,
  // or when no GPU is usable (MakeBackendForDevice logs why), the CPU backend's decoder engine.
  std::unique_ptr<InferenceBackend> backend = MakeBackendForDevice();
  ASSIGN_OR_RETURN(auto model, DecoderModel::Load(s_.config, *file, backend.get(), s_.dtype));
  spdlog::info("text generation engine: {}", model->engine_description());
  auto m = std::make_unique<TextGenerationModel>(s_, std::move(file), std::move(backend), std::move(model));
  m->ChargeWeights(std::move(charge), ModelId());
  return std::unique_ptr<Model>(std::move(m));
}

// ---------------------------------------------------------------- planning (no weights loaded)

// A pipeline argument as given (load_pipeline_args merged with inference_args), or nullptr.
const Value* PipelineArg(const ModelHandlerOptions& o, const char* name) {
  const Value* args = o.extra.Find("pipeline_args");
  return args != nullptr && args->is_row() ? args->as_row().Find(name) : nullptr;
}

// Bytes per value of weights, KV cache and activations where the model runs: on a GPU the
// checkpoint's torch_dtype (what transformers and vLLM load with dtype auto) unless the pipeline
// asks for float32 or bfloat16; on the CPU backend float32, which DecoderModel converts every
// weight to and PagedKvCache stores.
struct PlanDType {
  uint64_t bytes = 4;
  std::string name = "float32";
  std::string why;
};
PlanDType DTypeForPlan(const ModelHandlerOptions& o, const DecoderConfig& c) {
  if (o.device != "GPU") return {4, "float32", "device CPU: the CPU engine holds float32"};
  for (const char* key : {"dtype", "torch_dtype"}) {
    const Value* v = PipelineArg(o, key);
    if (v == nullptr || !v->is_string()) continue;
    const std::string d = v->as_string().starts_with("torch.") ? v->as_string().substr(6) : v->as_string();
    if (d == "float32") return {4, "float32", "device GPU, " + std::string(key) + " float32"};
    if (d == "bfloat16") return {2, "bfloat16", "device GPU, " + std::string(key) + " bfloat16"};
  }
  return {c.SavedBytesPerValue(), c.torch_dtype, "device GPU: the checkpoint's torch_dtype"};
}

std::string Int(uint64_t v) { return std::to_string(v); }

// One sequence's longest context, and which figure gave it.
std::pair<int64_t, std::string> PlanContext(const TextGenSettings& s) {
  const int mpe = s.config.max_position_embeddings;
  if (!s.max_new_tokens_set) {
    return {s.max_length, "max_length " + std::to_string(s.max_length) + " (prompt + new tokens, as transformers counts it)"};
  }
  return {mpe, "max_position_embeddings " + std::to_string(mpe) + " (no prompt limit is set, so a prompt may fill the "
                   "model's context; max_new_tokens " + std::to_string(s.params.max_new_tokens) + ")"};
}

std::optional<WorkspaceEstimate> TextGenerationHandler::EstimateWorkspace() const {
  const DecoderConfig& c = s_.config;
  const PlanDType dt = DTypeForPlan(options(), c);
  KvCacheEstimate kv;
  kv.bytes_per_token = c.KvBytesPerToken(dt.bytes);
  kv.bytes_per_token_how = std::to_string(c.num_layers) + " layers x " + std::to_string(c.num_kv_heads) + " KV heads x " +
                           std::to_string(c.head_dim) + " head_dim x 2 (K, V) x " + Int(dt.bytes) + " B " + dt.name;
  std::tie(kv.context_tokens, kv.context_how) = PlanContext(s_);
  kv.block_tokens = PagedKvCache::kBlockTokens;
  kv.max_sequences = s_.engine.max_sequences;
  kv.cache_bytes = s_.engine.kv_cache_bytes;
  kv.cache_bytes_given = PipelineArg(options(), "kv_cache_memory_bytes") != nullptr;
  // DecoderModel::Step's scratch for its largest step: per row the hidden state twice, q/k/v,
  // the attention output, the MLP's up (and gate) and its product; per logits row the final norm
  // and the vocabulary; one row of attention scores.
  const uint64_t rows = static_cast<uint64_t>(s_.engine.max_step_tokens);
  const uint64_t logit_rows = static_cast<uint64_t>(std::min(s_.engine.max_sequences, s_.engine.max_step_tokens));
  const uint64_t h = static_cast<uint64_t>(c.hidden_size), inter = static_cast<uint64_t>(c.intermediate_size);
  const uint64_t hd = static_cast<uint64_t>(c.head_dim), heads = static_cast<uint64_t>(c.num_heads);
  const uint64_t kvh = static_cast<uint64_t>(c.num_kv_heads);
  const uint64_t up = c.family == DecoderFamily::kGpt2 ? inter : 2 * inter;
  const uint64_t per_row = 2 * h + (heads + 2 * kvh) * hd + heads * hd + up + inter;
  const uint64_t per_logit_row = h + static_cast<uint64_t>(c.vocab_size);
  const uint64_t values = rows * per_row + logit_rows * per_logit_row + static_cast<uint64_t>(kv.context_tokens);
  kv.activation_bytes = values * dt.bytes;
  kv.activation_how = Int(rows) + " step rows (max_num_batched_tokens) x " + Int(per_row) + " (2 x hidden " + Int(h) +
                      " + q/k/v " + Int((heads + 2 * kvh) * hd) + " + attention " + Int(heads * hd) + " + MLP " + Int(up) +
                      " + " + Int(inter) + ") + " + Int(logit_rows) + " logits rows x (hidden + vocab " + Int(c.vocab_size) +
                      ") + " + std::to_string(kv.context_tokens) + " scores, x " + Int(dt.bytes) + " B";
  WorkspaceEstimate e;
  e.bytes = kv.cache_bytes + kv.activation_bytes;
  e.how = "KV cache " + Int(kv.cache_bytes) + " B (" + (kv.cache_bytes_given ? "kv_cache_memory_bytes" : "the engine's default") +
          "; " + Int(kv.bytes_per_token) + " B per token: " + kv.bytes_per_token_how + ") + activations " +
          Int(kv.activation_bytes) + " B (" + kv.activation_how + ")";
  const uint64_t params = c.ParameterCount();
  e.weight_bytes = params * dt.bytes;
  e.weight_how = Int(params) + " parameters (config.json) x " + Int(dt.bytes) + " B " + dt.name + " (" + dt.why + ")";
  e.weights_absent = s_.weights_absent;
  e.kv_cache = std::move(kv);
  return e;
}

std::optional<WorkEstimate> TextGenerationHandler::EstimateWork() const {
  const DecoderConfig& c = s_.config;
  const PlanDType dt = DTypeForPlan(options(), c);
  const auto [context, context_how] = PlanContext(s_);
  const double C = static_cast<double>(std::max<int64_t>(context, 1));
  // Generated tokens per sequence: max_new_tokens, or (max_length alone) all but one of the context;
  // the prompt fills the rest of the context — an upper bound, as the prompts are not known here.
  const double gen = std::clamp(static_cast<double>(s_.max_new_tokens_set ? s_.params.max_new_tokens : context - 1), 0.0, C - 1);
  const double prompt = C - gen;
  const double n = std::max(1, s_.params.num_return_sequences);
  const double params = static_cast<double>(c.ParameterCount());
  // Every token passes every weight once (2 FLOPs a multiply-add); a token at position p attends
  // to p cached keys: q.k and the weighted sum of values, 2 x 2 x head_dim FLOPs per head and
  // layer, summed over p = 1..C. Sliding windows are not counted (an upper bound).
  const double lhd = static_cast<double>(c.num_layers) * c.num_heads * c.head_dim;
  const double attention = n * 2 * lhd * C * (C + 1);
  WorkEstimate w;
  w.flops_per_record = 2 * params * (prompt + n * gen) + attention;
  // Weights are read once per step, shared by the step's rows: a decode step serves the concurrent
  // sequences (max_num_seqs, or fewer when the cache holds fewer of this context); a prefill step
  // serves max_num_batched_tokens prompt rows.
  const uint64_t per_token = c.KvBytesPerToken(dt.bytes);
  const uint64_t seq_bytes = per_token * static_cast<uint64_t>(PagedKvCache::BlocksFor(static_cast<int>(C))) * PagedKvCache::kBlockTokens;
  const int64_t cache_seqs = seq_bytes > 0 ? static_cast<int64_t>(s_.engine.kv_cache_bytes / seq_bytes) : 0;
  const double concurrent = static_cast<double>(std::max<int64_t>(1, std::min<int64_t>(s_.engine.max_sequences, cache_seqs)));
  w.weight_reads_per_record = n * gen / concurrent + prompt / static_cast<double>(s_.engine.max_step_tokens);
  // Attention reads the sequence's K and V at every position and writes each token's once.
  w.activation_bytes_per_record = static_cast<double>(per_token) * (n * C * (C + 1) / 2 + prompt + n * gen);
  w.batch_size = static_cast<int64_t>(concurrent);
  w.dtype = dt.name;
  w.default_efficiency = 0.3;
  char how[768];
  std::snprintf(how, sizeof how,
                "text generation, per record at context %.0f (%s): %.0f prompt + %.0f x %.0f generated tokens; FLOPs = 2 x "
                "%.4g parameters x tokens + attention 2 x %.0f layers x %d heads x %d head_dim x C(C+1) x %.0f; weight "
                "reads = %.0f x %.0f / %.0f concurrent sequences + %.0f / %d prefill rows per step; KV bytes %llu per token "
                "read at every position",
                C, context_how.c_str(), prompt, n, gen, params, static_cast<double>(c.num_layers), c.num_heads, c.head_dim,
                n, n, gen, concurrent, prompt, s_.engine.max_step_tokens, static_cast<unsigned long long>(per_token));
  w.how = how;
  return w;
}

// The config-only handler (ModelHandlerOptions::config_only, no model.safetensors): config.json,
// generation_config.json, the pipeline arguments, and the tokenizer when there is one, checked as
// in full; the weights' names and shapes cannot be, and LoadModel fails naming the missing file.
Result<std::unique_ptr<ModelHandler>> MakeConfigOnlyHandler(ModelHandlerOptions options, TextGenSettings s) {
  Row args;
  if (const Value* a = options.extra.Find("pipeline_args"); a != nullptr && a->is_row()) args = a->as_row();
  const std::string tok_path = s.dir + "/tokenizer.json";
  if (std::filesystem::exists(tok_path)) {
    ASSIGN_OR_RETURN(auto t, HfTokenizer::Load(tok_path));
    if (static_cast<int>(t->vocab_size()) > s.config.vocab_size) {
      return InvalidArgument("'" + tok_path + "' has " + std::to_string(t->vocab_size()) + " tokens but config.json's vocab_size is " +
                             std::to_string(s.config.vocab_size));
    }
    s.tokenizer = std::move(t);
  } else if (const Value* v = args.Find("clean_up_tokenization_spaces"); v != nullptr) {
    // Only the tokenizer reads it; checked here, as there is none to set.
    if (!v->is_bool()) return InvalidArgument("text-generation: 'clean_up_tokenization_spaces' must be true or false, got " + v->ToJson());
    Row rest;
    for (const Field& f : args.fields()) {
      if (f.name != "clean_up_tokenization_spaces") rest.Append(f.name, f.value);
    }
    args = std::move(rest);
  }
  ASSIGN_OR_RETURN(Row gen_config, ReadGenerationConfig(s.dir + "/generation_config.json"));
  RETURN_IF_ERROR(ApplyArguments(gen_config, args, s).WithContext("model_handler " + std::string(kHfPipelineHandlerType)));
  s.weights_absent = true;
  return std::unique_ptr<ModelHandler>(std::make_unique<TextGenerationHandler>(std::move(options), std::move(s)));
}

}  // namespace

const std::vector<std::string>& TextGenerationArgumentNames() { return AllArgumentNames(); }
const std::vector<std::string>& TextGenerationEngineArgumentNames() { return EngineKeys(); }

Result<std::unique_ptr<ModelHandler>> MakeHfTextGenerationHandler(ModelHandlerOptions options, const std::string& dir) {
  TextGenSettings s;
  s.dir = dir;
  ASSIGN_OR_RETURN(s.config, DecoderConfig::Load(dir + "/config.json"));
  const std::string tok_path = dir + "/tokenizer.json";
  // The plan needs config.json alone: a directory written for planning (no weights, no tokenizer) is
  // described from it; whatever files are there are checked in full.
  if (options.config_only && !std::filesystem::exists(dir + "/model.safetensors")) return MakeConfigOnlyHandler(std::move(options), std::move(s));
  auto tok = HfTokenizer::Load(tok_path);
  if (!tok.ok()) {
    if (tok.status().code() == StatusCode::kNotFound) {
      return InvalidArgument("'" + dir + "' has no tokenizer.json (dfworker builds the tokenizer from it; save the "
                             "tokenizer with a transformers fast tokenizer's save_pretrained)");
    }
    return tok.status();
  }
  std::unique_ptr<HfTokenizer> t = std::move(tok).value();
  ASSIGN_OR_RETURN(const std::string tc_text, ReadOptionalFile(dir + "/tokenizer_config.json", kTokenizerConfigFile));
  const json tc = json::parse(tc_text, nullptr, false);
  RETURN_IF_ERROR(CheckJsonDepth(tc, dir + "/tokenizer_config.json"));
  if (tc.is_object() && tc.contains("clean_up_tokenization_spaces") && tc["clean_up_tokenization_spaces"].is_boolean()) {
    t->set_clean_up_tokenization_spaces(tc["clean_up_tokenization_spaces"].get<bool>());
  }
  s.bos_token = SpecialToken(tc, "bos_token");
  s.eos_token = SpecialToken(tc, "eos_token");
  s.pad_token = SpecialToken(tc, "pad_token");
  s.unk_token = SpecialToken(tc, "unk_token");
  if (std::filesystem::exists(dir + "/chat_template.jinja")) {
    ASSIGN_OR_RETURN(s.chat_template, ReadOptionalFile(dir + "/chat_template.jinja", kTokenizerConfigFile));
  } else if (tc.is_object() && tc.contains("chat_template")) {
    const json& ct = tc["chat_template"];
    if (ct.is_string()) {
      s.chat_template = ct.get<std::string>();
    } else if (ct.is_array()) {  // named templates: the "default" one
      for (const json& e : ct) {
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string()) {
          s.chat_template = e["template"].get<std::string>();
        }
      }
    }
  }
  if (static_cast<int>(t->vocab_size()) > s.config.vocab_size) {
    return InvalidArgument("'" + tok_path + "' has " + std::to_string(t->vocab_size()) + " tokens but config.json's vocab_size is " +
                           std::to_string(s.config.vocab_size));
  }
  s.tokenizer = std::move(t);
  ASSIGN_OR_RETURN(Row gen_config, ReadGenerationConfig(dir + "/generation_config.json"));
  const Value* args = options.extra.Find("pipeline_args");
  RETURN_IF_ERROR(ApplyArguments(gen_config, args != nullptr && args->is_row() ? args->as_row() : Row(), s)
                      .WithContext("model_handler " + std::string(kHfPipelineHandlerType)));
  // The weights' names and shapes, checked now (before any record is read) from the header, and
  // on device CPU the dtype against this CPU's instructions (on a GPU the CUDA engine runs bfloat16
  // products on the tensor cores; a run that falls back to the CPU checks it at load); no backend
  // is made (the launcher plans with this).
  ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(dir + "/model.safetensors"));
  RETURN_IF_ERROR(DecoderModel::CheckWeights(s.config, file->header()));
  if (options.device == "CPU") {
    RETURN_IF_ERROR(CheckLinearDTypeOn(DetectCpuIsa(), s.dtype).WithContext("text-generation dtype"));
  }
  return std::unique_ptr<ModelHandler>(std::make_unique<TextGenerationHandler>(std::move(options), std::move(s)));
}

}  // namespace dfw
