// MLTransform: Beam YAML's ML transform (`options: {yaml_experimental_features: [ML]}`), for the
// sentence embeddings Beam users write:
//
//   - type: MLTransform
//     config:
//       write_artifact_location: /tmp/artifacts     # required by Beam; embeddings write none here
//       transforms:
//         - type: SentenceTransformerEmbeddings
//           config: {model_name: <local sentence-transformers dir>, columns: [text]}
//
// Each listed column is replaced by its embedding, a list of floats, as Beam's MLTransform does.
// The work is a RunInference stage per column with the C++ encoder (SentenceEmbeddingHandler):
// the same batching, metrics, lanes and error output. Pooling, max_seq_length and normalisation
// follow the model directory as sentence-transformers reads it (1_Pooling/config.json,
// sentence_bert_config.json, a Normalize module in modules.json). What Beam has and dfworker does
// not (read_artifact_location, other embedding providers, image models, inference_args) is refused
// at load with its name. model_name must be a local directory: nothing is downloaded.
// Precision: float32, what Beam's sentence-transformers computes on the CPU, unless the transform's
// config sets `dtype` (auto, bfloat16, int8: SentenceEmbeddingHandler's key; docs/precision.md).

#include <filesystem>

#include "dfw/inference/sentence_transformers_dir.h"
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "run_inference.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;

// One embedded column: its RunInference stage and the field that holds its PredictionResult.
struct Column {
  std::string name;
  std::string tag;
  std::unique_ptr<Stage> stage;
};

struct Plan {
  std::vector<std::pair<std::string, StageConfig>> columns;  // column → the RunInference config for it
};

Status Refuse(const StageConfig& c, const ConfigNode& n, const std::string& what) {
  return Unimplemented(NodeLocation(c, n) + ": transform '" + c.name + "' (MLTransform): " + what);
}

Result<Plan> ParsePlan(const StageConfig& c) {
  const ConfigNode& cfg = c.config;
  if (cfg["read_artifact_location"].IsDefined()) {
    return Refuse(c, cfg["read_artifact_location"],
                  "'read_artifact_location' (reusing artifacts of an earlier MLTransform) is not supported; "
                  "use write_artifact_location (sentence embeddings have no artifacts to reuse)");
  }
  if (!cfg["write_artifact_location"].IsScalar()) {
    return ConfigKeyError(c, "write_artifact_location", "is required (as in Beam): a folder for MLTransform's artifacts");
  }
  const ConfigNode& transforms = cfg["transforms"];
  if (!transforms.IsSequence() || transforms.size() == 0) {
    return ConfigKeyError(c, "transforms", "expected a non-empty list of {type: SentenceTransformerEmbeddings, config: {...}}");
  }
  Plan plan;
  for (const ConfigNode& t : transforms.items()) {
    if (!t.IsMap() || !t["type"].IsScalar()) {
      return ConfigKeyError(c, "transforms", "each entry needs 'type' (SentenceTransformerEmbeddings) and 'config'");
    }
    const std::string type = t["type"].Scalar();
    if (type != "SentenceTransformerEmbeddings") {
      return Refuse(c, t["type"], "transform '" + type + "' is valid in Beam's MLTransform but not supported by dfworker; "
                                  "supported: SentenceTransformerEmbeddings (local model directory)");
    }
    const ConfigNode& tc = t["config"];
    if (!tc.IsMap()) return ConfigKeyError(c, "transforms", "SentenceTransformerEmbeddings needs a 'config' mapping");
    ConfigNode handler = ConfigNode::Map();
    std::vector<std::string> columns;
    for (const ConfigEntry& kv : tc.entries()) {
      const std::string key = kv.key.Scalar();
      if (key == "model_name") {
        const std::string dir = ResolveConfigPath(c, kv.value.Scalar());
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) {
          return Refuse(c, kv.value, "model_name '" + dir + "' is not a local directory; dfworker loads a "
                                      "sentence-transformers / Hugging Face model directory and downloads nothing");
        }
        handler.Set("model_path", ConfigNode::Scalar(dir));
        handler.Set("normalize", ConfigNode::Scalar(ReadSentenceTransformersDir(dir).normalize ? "true" : "false"));
      } else if (key == "columns") {
        if (kv.value.IsScalar()) columns.push_back(kv.value.Scalar());
        for (const ConfigNode& col : kv.value.items()) columns.push_back(col.Scalar());
      } else if (key == "max_seq_length" || key == "min_batch_size" || key == "max_batch_size" || key == "large_model" ||
                 key == "dtype") {
        handler.Set(key, kv.value);
      } else if (key == "image_model" || key == "inference_args" || key == "model_class" || key == "load_model_args") {
        return Refuse(c, kv.key, "SentenceTransformerEmbeddings '" + key + "' is not supported by dfworker");
      } else {
        return ConfigKeyError(c, "transforms", "SentenceTransformerEmbeddings: unknown config key '" + key +
                                                   "'; allowed: model_name, columns, max_seq_length, min_batch_size, "
                                                   "max_batch_size, large_model, dtype");
      }
    }
    if (!handler["model_path"].IsDefined()) return ConfigKeyError(c, "transforms", "SentenceTransformerEmbeddings needs 'model_name'");
    if (columns.empty()) return ConfigKeyError(c, "transforms", "SentenceTransformerEmbeddings needs 'columns' (a list)");
    // Beam computes float32: so does the Beam spelling, unless the pipeline asks for another dtype.
    if (!handler["dtype"].IsDefined()) handler.Set("dtype", ConfigNode::Scalar("float32"));
    for (const std::string& col : columns) {
      StageConfig inner = c;
      inner.type = "RunInference";
      ConfigNode h = handler;
      h.Set("input_field", ConfigNode::Scalar(col));
      h.Set("device", ConfigNode::Scalar("GPU"));  // as Beam's sentence-transformers does: the GPU where there is one, else the CPU
      ConfigNode model_handler = ConfigNode::Map();
      model_handler.Set("type", ConfigNode::Scalar("SentenceEmbeddingHandler"));
      model_handler.Set("config", std::move(h));
      inner.config = ConfigNode::Map();
      inner.config.Set("inference_tag", ConfigNode::Scalar("__dfw_embedding_" + col));
      inner.config.Set("model_handler", std::move(model_handler));
      plan.columns.emplace_back(col, std::move(inner));
    }
  }
  return plan;
}

class MLTransform final : public Stage {
 public:
  MLTransform(StageConfig config, std::vector<Column> columns) : config_(std::move(config)), columns_(std::move(columns)) {}

  int64_t MaxMessageRows() const override {
    int64_t rows = 0;
    for (const Column& c : columns_) {
      const int64_t k = c.stage->MaxMessageRows();
      if (k > 0) rows = rows == 0 ? k : std::min(rows, k);
    }
    return rows;
  }

  int MaxConcurrentCalls() const override {
    int n = 0;
    for (const Column& c : columns_) {
      const int k = c.stage->MaxConcurrentCalls();
      n = n == 0 ? k : std::min(n, k);
    }
    return n;
  }

  Status StartBundle(const BundleContext& bundle) override {
    for (Column& c : columns_) RETURN_IF_ERROR(c.stage->StartBundle(bundle));
    return Status::OK();
  }

  Status Process(RowBatch& in, StageOutput& out) override { return Through(0, in, out); }

  Status FinishBundle(StageOutput& out) override {
    // Flush column k's batcher, send what it let go through columns k+1..; then k+1.
    for (std::size_t k = 0; k < columns_.size(); ++k) {
      StageOutput step(&config_);
      RETURN_IF_ERROR(columns_[k].stage->FinishBundle(step));
      RETURN_IF_ERROR(Deliver(k, step, out));
    }
    return Status::OK();
  }

 private:
  // Rows entering column k's stage; what comes out continues with column k + 1.
  Status Through(std::size_t k, RowBatch& in, StageOutput& out) {
    StageOutput step(&config_);
    RETURN_IF_ERROR(columns_[k].stage->Process(in, step));
    return Deliver(k, step, out);
  }

  // Column k's output: the embedding replaces the column (Beam's shape), errors go out as they are.
  Status Deliver(std::size_t k, StageOutput& step, StageOutput& out) {
    for (Row& e : step.errors()) out.errors().push_back(std::move(e));
    const Column& c = columns_[k];
    for (Row& row : step.main()) {
      Value* result = row.FindMutable(c.tag);
      Value embedding;
      if (result != nullptr && result->is_row()) {
        if (const Value* inference = result->as_row().Find("inference")) embedding = *inference;
      }
      row.Erase(c.tag);
      row.Set(c.name, std::move(embedding));
    }
    if (step.main().empty()) return Status::OK();
    if (k + 1 < columns_.size()) return Through(k + 1, step.main(), out);
    for (Row& row : step.main()) out.Emit(std::move(row));
    return Status::OK();
  }

  StageConfig config_;
  std::vector<Column> columns_;
};

Result<std::unique_ptr<Stage>> MakeMlTransform(const StageConfig& config) {
  ASSIGN_OR_RETURN(Plan plan, ParsePlan(config));
  std::vector<Column> columns;
  for (auto& [name, inner] : plan.columns) {
    ASSIGN_OR_RETURN(auto stage, stages_internal::MakeRunInferenceStage(inner));
    columns.push_back(Column{name, "__dfw_embedding_" + name, std::move(stage)});
  }
  return std::unique_ptr<Stage>(new MLTransform(config, std::move(columns)));
}

Status Check(const StageConfig& config) {
  ASSIGN_OR_RETURN(Plan plan, ParsePlan(config));
  for (auto& [name, inner] : plan.columns) RETURN_IF_ERROR(stages_internal::CheckRunInferenceConfig(inner));
  return Status::OK();
}

// ModelChecks::kConfigOnly: the same, without opening the model files.
Status CheckConfigOnly(const StageConfig& config) {
  ASSIGN_OR_RETURN(Plan plan, ParsePlan(config));
  for (auto& [name, inner] : plan.columns) RETURN_IF_ERROR(stages_internal::CheckRunInferenceOptions(inner));
  return Status::OK();
}

}  // namespace

void RegisterMLTransform(StageRegistry& r, ModelChecks checks) {
  (void)r.Register({"MLTransform", MakeMlTransform, {"write_artifact_location", "read_artifact_location", "transforms"}, {"transforms"},
                    StageTraits{.can_fail_per_record = true}, checks == ModelChecks::kFull ? Check : CheckConfigOnly});
}

}  // namespace dfw
