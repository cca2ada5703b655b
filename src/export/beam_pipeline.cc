// The Beam YAML half of `dfworker export --to beam`: the dfworker pipeline file, transform by
// transform, into what Beam's own loader and transforms accept (see beam_export.h for the rules).
// Works on the YAML tree (not the loaded spec) so the chain shape, names and order stay as written.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "beam_internal.h"
#include "dfw/export/beam_export.h"
#include "dfw/inference/sentence_transformers_dir.h"

namespace dfw {
namespace {

constexpr const char* kMlpType = "DfworkerMlpInference";
constexpr const char* kSentenceType = "DfworkerSentenceEmbedding";

std::string NameOf(const YAML::Node& t) {
  if (t["name"] && t["name"].IsScalar()) return t["name"].Scalar();
  return t["type"] && t["type"].IsScalar() ? t["type"].Scalar() : "?";
}

// A Python single-quoted string literal.
std::string PyQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// What one SentenceEmbeddingHandler computes, and what sentence-transformers would compute by
// default from the same directory (Beam's SentenceTransformerEmbeddings loads it with defaults).
struct EmbeddingSemantics {
  int max_seq_length = 0;
  std::string pooling;  // mean | cls | other (a pooling mode dfworker does not have)
  bool normalize = true;
  bool operator==(const EmbeddingSemantics&) const = default;
  std::string ToString() const { return fmt::format("pooling {}, normalize {}, max_seq_length {}", pooling, normalize, max_seq_length); }
};

struct EmbeddingPair {
  EmbeddingSemantics dfworker, sentence_transformers;
};

EmbeddingPair CompareEmbedding(const std::string& dir, const YAML::Node& hc) {
  EmbeddingPair p;
  using Pooling = SentenceTransformersDir::Pooling;
  const SentenceTransformersDir st = ReadSentenceTransformersDir(dir);
  const int positions = st.max_position_embeddings.value_or(512);
  // dfworker (sentence_embedding_handler.cc): the handler's keys, else the directory's files.
  EmbeddingSemantics& d = p.dfworker;
  d.max_seq_length = st.max_seq_length ? std::min(positions, *st.max_seq_length) : positions;
  d.pooling = st.pooling == Pooling::kCls ? "cls" : "mean";
  if (hc["max_seq_length"] && hc["max_seq_length"].IsScalar()) d.max_seq_length = hc["max_seq_length"].as<int>(d.max_seq_length);
  if (hc["pooling"] && hc["pooling"].IsScalar()) d.pooling = hc["pooling"].Scalar();
  if (hc["normalize"] && hc["normalize"].IsScalar()) d.normalize = hc["normalize"].as<bool>(true);
  // sentence-transformers' defaults: sentence_bert_config.json's length, else the smaller of the
  // model's positions and the tokenizer's model_max_length; the pooling module's mode, else mean
  // (a plain Hugging Face directory); normalised only with a Normalize module.
  EmbeddingSemantics& s = p.sentence_transformers;
  s.max_seq_length = st.max_seq_length.value_or(positions);
  if (!st.max_seq_length && st.tokenizer_max_length) s.max_seq_length = std::min(positions, *st.tokenizer_max_length);
  s.pooling = st.pooling == Pooling::kCls ? "cls" : st.pooling == Pooling::kOther ? "other" : "mean";
  s.normalize = st.normalize;
  return p;
}

class Exporter {
 public:
  explicit Exporter(const BeamExportOptions& o) : o_(o) {}

  Result<BeamExport> Run(const YAML::Node& root);

 private:
  void Note(const std::string& name, const std::string& type, const std::string& what) {
    out_.notes.push_back(fmt::format("transform '{}' ({}): {}", name, type, what));
  }
  Status Transform(const YAML::Node& t, std::vector<YAML::Node>& nodes);
  Status RunInference(const YAML::Node& t, YAML::Node n, std::vector<YAML::Node>& nodes);
  Status NoEquivalent(const YAML::Node& t, const std::string& why, std::vector<YAML::Node>& nodes);
  void DropErrorOutput(const std::string& name, const std::string& type, YAML::Node cfg, const std::string& why);
  void MaybePython(const std::string& name, const std::string& type, YAML::Node cfg);
  std::vector<YAML::Node> FixInputs(std::vector<YAML::Node> nodes);
  // A composite or chain at any depth: its members exported in place, the form kept.
  Status Nested(const YAML::Node& t, YAML::Node n, std::vector<YAML::Node>& nodes);

  const BeamExportOptions& o_;
  BeamExport out_;
  std::set<std::string> dropped_;  // references Beam will not have: "T.output" or a dropped "T"
  bool mlp_ = false, sentence_ = false, manual_ = false;
};

void Exporter::DropErrorOutput(const std::string& name, const std::string& type, YAML::Node cfg, const std::string& why) {
  if (!cfg || !cfg.IsMap() || !cfg["error_handling"]) return;
  const YAML::Node eh = cfg["error_handling"];
  if (eh["output"] && eh["output"].IsScalar()) dropped_.insert(name + "." + eh["output"].Scalar());
  cfg.remove("error_handling");
  Note(name, type, "its error output is not carried over: " + why);
}

// Beam's generic (language-less) expressions pass only `<` and `>` comparisons (beam-yaml.md §6);
// dfworker also takes ==, !=, <=, >=. Python evaluates the same comparison, so the language is set.
void Exporter::MaybePython(const std::string& name, const std::string& type, YAML::Node cfg) {
  if (!cfg || !cfg.IsMap() || cfg["language"]) return;
  std::vector<std::string> exprs;
  if (cfg["keep"] && cfg["keep"].IsScalar()) exprs.push_back(cfg["keep"].Scalar());
  if (cfg["fields"] && cfg["fields"].IsMap()) {
    for (const auto& kv : cfg["fields"]) {
      if (kv.second.IsScalar()) exprs.push_back(kv.second.Scalar());
      else if (kv.second.IsMap() && kv.second["expression"]) exprs.push_back(kv.second["expression"].Scalar());
    }
  }
  for (const std::string& e : exprs) {
    for (const char* op : {"==", "!=", "<=", ">="}) {
      if (e.find(op) == std::string::npos) continue;
      cfg["language"] = "python";
      Note(name, type, fmt::format("'{}' needs language: python in Beam (its generic expressions pass only < and >); "
                                   "set, and Python evaluates the same comparison", e));
      return;
    }
  }
}

Status Exporter::NoEquivalent(const YAML::Node& t, const std::string& why, std::vector<YAML::Node>& nodes) {
  const std::string name = NameOf(t), type = t["type"].Scalar();
  if (!o_.allow_manual_steps) {
    return Unimplemented(fmt::format("transform '{}' ({}) has no Beam equivalent: {}. Replace it, or export with "
                                     "--allow_manual_steps to write it as a marked manual step", name, type, why));
  }
  // A placeholder Beam's loader accepts and that fails at expansion with the instructions.
  YAML::Node n(YAML::NodeType::Map);
  n["type"] = "PyTransform";
  n["name"] = name;
  if (t["input"]) n["input"] = YAML::Clone(t["input"]);
  n["config"]["constructor"] = "dfworker_beam.ManualStep";
  n["config"]["kwargs"]["transform"] = name;
  n["config"]["kwargs"]["dfworker_type"] = type;
  n["config"]["kwargs"]["reason"] = why;
  std::ostringstream original;
  original << YAML::Dump(t);
  n["config"]["kwargs"]["dfworker_yaml"] = original.str();
  out_.manual_steps.push_back(fmt::format("transform '{}' ({}): {}", name, type, why));
  manual_ = true;
  nodes.push_back(n);
  return Status::OK();
}

Status Exporter::RunInference(const YAML::Node& t, YAML::Node n, std::vector<YAML::Node>& nodes) {
  const std::string name = NameOf(t);
  YAML::Node cfg = n["config"];
  const YAML::Node mh = cfg["model_handler"];
  const std::string htype = mh["type"].Scalar();
  const YAML::Node hc = mh["config"];
  if (htype == "HuggingFacePipelineModelHandler") {
    // Beam's own handler, written as Beam spells it: kept, less the keys only dfworker reads.
    YAML::Node bc = n["config"]["model_handler"]["config"];
    for (const char* key : {"blas_threads", "model_id"}) {
      if (!hc[key]) continue;
      bc.remove(key);
      Note(name, "RunInference", fmt::format("'{}' is not carried over (Beam's HuggingFacePipelineModelHandler has no such key)", key));
    }
    if (hc["max_batch_weight"]) {
      bc.remove("max_batch_weight");
      Note(name, "RunInference", "'max_batch_weight' is not carried over: Beam takes it with an element_size_fn (Python) "
                                 "that YAML cannot give; batches there are counted in examples");
    }
    // text-generation: dfworker's engine arguments (seed, KV cache, batching) are not pipeline()
    // arguments; transformers would refuse them, so they stay behind with a note.
    for (const char* where : {"inference_args", "load_pipeline_args"}) {
      YAML::Node args = std::string(where) == "inference_args" ? n["config"]["inference_args"] : bc["load_pipeline_args"];
      if (!args || !args.IsMap()) continue;
      for (const char* key : {"seed", "max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes"}) {
        if (!args[key]) continue;
        args.remove(key);
        Note(name, "RunInference",
             fmt::format("{} '{}' is not carried over: a dfworker engine setting, not a transformers pipeline argument{}", where, key,
                         std::string(key) == "seed" ? " (Beam samples from torch's unseeded generator)" : ""));
      }
    }
    if (hc["task"] && hc["task"].Scalar() == "text-generation") {
      Note(name, "RunInference",
           "text-generation on Beam runs transformers' generate() per batch, one model per SDK process, without continuous "
           "batching or a shared KV cache (docs/text-generation.md)");
    }
    Note(name, "RunInference",
         "HuggingFacePipelineModelHandler is kept as Beam's own; Beam 2.77's huggingface_inference imports TensorFlow at "
         "load and needs transformers < 5 (docs/beam.md), and 'model' must be a path or hub id the Beam workers can read");
    out_.uses_ml = true;
    nodes.push_back(n);
    return Status::OK();
  }
  const std::string tag = cfg["inference_tag"] ? cfg["inference_tag"].Scalar() : "inference";
  const std::string model_path = hc["model_path"].Scalar();
  const std::string input_field = hc["input_field"].Scalar();
  const std::string model_id = hc["model_id"] ? hc["model_id"].Scalar() : model_path;
  const std::string what = "RunInference";
  for (const char* key : {"large_model", "model_copies"}) {
    if (hc[key]) Note(name, what, fmt::format("'{}' is not carried over: Beam's worker holds one model per SDK process (Beam's Shared)", key));
  }
  if (hc["blas_threads"]) Note(name, what, "'blas_threads' is not carried over (numpy/torch use their own thread pools)");
  if (hc["max_batch_duration_secs"]) Note(name, what, "'max_batch_duration_secs' is not carried over (a streaming setting)");
  if (hc["max_batch_weight"]) {
    Note(name, what, "'max_batch_weight' is not carried over: Beam takes it with an element_size_fn (Python), which the "
                     "exported transform does not set; batches there are counted in examples");
  }

  auto common = [&](YAML::Node c) {
    c["inference_tag"] = tag;
    c["model_path"] = model_path;
    c["input_field"] = input_field;
    c["model_id"] = model_id;
    for (const char* key : {"min_batch_size", "max_batch_size"}) if (hc[key]) c[key] = YAML::Clone(hc[key]);
    if (cfg["error_handling"]) c["error_handling"] = YAML::Clone(cfg["error_handling"]);
  };
  YAML::Node out(YAML::NodeType::Map);
  out["type"] = "";  // set below; first so the file reads type, name, input, config
  out["name"] = name;
  if (t["input"]) out["input"] = YAML::Clone(t["input"]);
  if (t["resource_hints"]) out["resource_hints"] = YAML::Clone(t["resource_hints"]);
  if (htype == "MlpModelHandlerSafetensors") {
    out["type"] = kMlpType;
    YAML::Node c(YAML::NodeType::Map);
    common(c);
    out["config"] = c;
    if (!hc["device"] || hc["device"].Scalar() == "GPU") {
      Note(name, what, "the MLP runs in numpy on the Beam worker's CPU (dfworker's device: GPU is not carried over)");
    }
    mlp_ = true;
    nodes.push_back(out);
    return Status::OK();
  }
  if (htype != "SentenceEmbeddingHandler") {
    return NoEquivalent(t, "model_handler type '" + htype + "' has no Beam transform (the companion package implements "
                                                          "MlpModelHandlerSafetensors and SentenceEmbeddingHandler)", nodes);
  }
  const EmbeddingPair sem = CompareEmbedding(model_path, hc);
  const bool has_errors = static_cast<bool>(cfg["error_handling"]);
  if (sem.dfworker == sem.sentence_transformers && !has_errors) {
    // Beam's own spelling. MLTransform replaces its column, so the text is copied to a scratch
    // column first and the PredictionResult shape is rebuilt after it.
    const std::string col = "dfw_embedding_" + tag;
    const bool chained = !t["input"];
    YAML::Node copy(YAML::NodeType::Map);
    copy["type"] = "MapToFields";
    copy["name"] = name + "-Copy";
    if (t["input"]) copy["input"] = YAML::Clone(t["input"]);
    copy["config"]["language"] = "python";
    copy["config"]["append"] = true;
    copy["config"]["fields"][col] = input_field;
    YAML::Node embed(YAML::NodeType::Map);
    embed["type"] = "MLTransform";
    embed["name"] = name + "-Embed";
    if (!chained) embed["input"] = name + "-Copy";
    embed["config"]["write_artifact_location"] = (o_.out_dir.empty() ? std::string(".") : o_.out_dir) + "/artifacts/" + name;
    YAML::Node st(YAML::NodeType::Map);
    st["type"] = "SentenceTransformerEmbeddings";
    st["config"]["model_name"] = model_path;
    st["config"]["columns"].push_back(col);
    for (const char* key : {"min_batch_size", "max_batch_size"}) if (hc[key]) st["config"][key] = YAML::Clone(hc[key]);
    embed["config"]["transforms"].push_back(st);
    YAML::Node shape(YAML::NodeType::Map);
    shape["type"] = "MapToFields";
    shape["name"] = name;
    if (!chained) shape["input"] = name + "-Embed";
    shape["config"]["language"] = "python";
    shape["config"]["append"] = true;
    shape["config"]["drop"].push_back(col);
    // A declared row type: without it Beam infers the lambda's value types (a dict's values as one
    // union) and fails encoding them; with it WriteToJson writes the object dfworker writes.
    YAML::Node field = shape["config"]["fields"][tag];
    field["callable"] = fmt::format("lambda row: beam.Row(example=row.{}, inference=[float(v) for v in row.{}], model_id={})",
                                    input_field, col, PyQuote(model_id));
    YAML::Node type = field["output_type"];
    type["type"] = "object";
    type["properties"]["example"]["type"] = "string";
    type["properties"]["inference"]["type"] = "array";
    type["properties"]["inference"]["items"]["type"] = "number";
    type["properties"]["model_id"]["type"] = "string";
    nodes.push_back(copy);
    nodes.push_back(embed);
    nodes.push_back(shape);
    out_.uses_ml = true;
    Note(name, what, fmt::format("became MLTransform + SentenceTransformerEmbeddings ({}, as sentence-transformers reads "
                                 "'{}'); the artifacts go to {}", sem.dfworker.ToString(), model_path,
                                 embed["config"]["write_artifact_location"].Scalar()));
    return Status::OK();
  }
  if (sem.dfworker.pooling != "mean" && sem.dfworker.pooling != "cls") {
    return NoEquivalent(t, "pooling '" + sem.dfworker.pooling + "' is not one dfworker or the companion package has", nodes);
  }
  out["type"] = kSentenceType;
  YAML::Node c(YAML::NodeType::Map);
  common(c);
  c["max_seq_length"] = sem.dfworker.max_seq_length;
  c["pooling"] = sem.dfworker.pooling;
  c["normalize"] = sem.dfworker.normalize;
  out["config"] = c;
  sentence_ = true;
  std::string why;
  if (!(sem.dfworker == sem.sentence_transformers)) {
    why = "sentence-transformers' defaults for '" + model_path + "' are " + sem.sentence_transformers.ToString() +
          ", dfworker computes " + sem.dfworker.ToString();
  }
  if (has_errors) why += std::string(why.empty() ? "" : "; and ") + "it has an error output, which Beam's MLTransform does not";
  Note(name, what, "became DfworkerSentenceEmbedding (sentence-transformers built with dfworker's settings), not "
                   "MLTransform, because " + why);
  nodes.push_back(out);
  return Status::OK();
}

Status Exporter::Transform(const YAML::Node& t, std::vector<YAML::Node>& nodes) {
  const std::string name = NameOf(t), type = t["type"].Scalar();
  YAML::Node n = YAML::Clone(t);
  YAML::Node cfg = n["config"];
  if (type == "ReadFromJson" || type == "ReadFromText" || type == "ReadFromCsv" || type == "ReadFromAvro" ||
      type == "ReadFromTFRecord") {
    DropErrorOutput(name, type, cfg, "Beam's reader has no error_handling and fails the pipeline on an unparseable record");
  } else if (type == "MatchAll") {
    DropErrorOutput(name, type, cfg, "Beam's MatchAll has no error_handling and fails the pipeline on a bad pattern");
  } else if (type == "WriteToJson" || type == "WriteToCsv" || type == "WriteToText" || type == "WriteToAvro") {
    if (cfg && cfg["file_name_suffix"]) {
      Note(name, type, fmt::format("'file_name_suffix: {}' is not carried over: Beam's writer takes only path and names files "
                                   "<path>-SSSSS-of-NNNNN", cfg["file_name_suffix"].Scalar()));
      cfg.remove("file_name_suffix");
    }
  } else if (type == "MapToFields" || type == "Filter") {
    MaybePython(name, type, cfg);
    if (cfg && cfg.IsMap() && cfg["language"] && cfg["language"].IsScalar() &&
        (cfg["language"].Scalar() == "sql" || cfg["language"].Scalar() == "calcite")) {
      Note(name, type, "Beam runs language: sql on Beam SQL (Calcite): the job needs Java for the expansion service; "
                       "dfworker ran it on SQLite (docs/beam.md, SQL, lists where the two differ)");
    }
  } else if (type == "Sql") {
    Note(name, type, "Beam runs Sql on Beam SQL (Calcite): the job needs Java for the expansion service; dfworker ran "
                     "the query on SQLite (docs/beam.md, SQL, lists where the two differ)");
  } else if (type == "MLTransform") {
    DropErrorOutput(name, type, cfg, "Beam's MLTransform has no error_handling and fails the pipeline on a bad row");
    out_.uses_ml = true;
  } else if (type == "RunInference") {
    return RunInference(t, n, nodes);
  } else if (type == "Combine") {
    // dfworker's top_largest / top_smallest are Beam's TopCombineFn (reverse: smallest first).
    if (cfg && cfg["combine"] && cfg["combine"].IsMap()) {
      for (auto kv : cfg["combine"]) {
        YAML::Node fn = kv.second.IsMap() ? kv.second["fn"] : YAML::Node();
        if (!fn || !fn.IsMap() || !fn["type"] || !fn["type"].IsScalar()) continue;
        const std::string fn_type = fn["type"].Scalar();
        if (fn_type != "top_largest" && fn_type != "top_smallest") continue;
        fn["type"] = "apache_beam.transforms.combiners.TopCombineFn";
        if (fn_type == "top_smallest") fn["config"]["reverse"] = true;
      }
    }
    out_.uses_combine = true;
  } else if (type == "Join") {
    Note(name, type, "Beam runs a Join as a Beam SQL query (SqlBackedProvider): the job needs Java for the expansion "
                     "service; dfworker joins on its own shuffle with the same semantics (docs/beam.md, Join)");
  } else if (type == "AssignTimestamps") {
    MaybePython(name, type, cfg);
  } else if (type == "composite" || type == "chain") {
    return Nested(t, n, nodes);
  } else if (type != "Create" && type != "Explode" && type != "Flatten" && type != "LogForTesting" && type != "Partition" &&
             type != "WindowInto" && type != "ExtractWindowingInfo" && type != "WriteToTFRecord" && type != "AssertEqual" &&
             type != "Reshuffle" && type != "ValidateWithSchema") {
    return NoEquivalent(t, "dfworker's exporter knows no Beam form for it", nodes);
  }
  nodes.push_back(n);
  return Status::OK();
}

Status Exporter::Nested(const YAML::Node& t, YAML::Node n, std::vector<YAML::Node>& nodes) {
  const bool chain = t["type"].Scalar() == "chain";
  auto list = [&](const char* key) -> Status {
    if (!t[key] || !t[key].IsSequence()) return Status::OK();
    std::vector<YAML::Node> members;
    for (const YAML::Node& m : t[key]) RETURN_IF_ERROR(Transform(m, members));
    // Inside a chain only extra_transforms name their inputs.
    if (!chain || std::string(key) == "extra_transforms") members = FixInputs(std::move(members));
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const YAML::Node& m : members) seq.push_back(m);
    n[key] = seq;
    return Status::OK();
  };
  for (const char* key : {"source", "sink"}) {
    if (!t[key]) continue;
    std::vector<YAML::Node> one;
    RETURN_IF_ERROR(Transform(t[key], one));
    if (one.size() != 1) return NoEquivalent(t, std::string("its ") + key + " becomes several Beam transforms", nodes);
    n[key] = one.front();
  }
  RETURN_IF_ERROR(list("transforms"));
  RETURN_IF_ERROR(list("extra_transforms"));
  nodes.push_back(n);
  return Status::OK();
}

// An input naming an output Beam will not have is removed; a transform left with no input goes too
// (and so, in turn, do its consumers). One input left is written as a name, not a list: Beam's
// implicit Flatten rebuilds rows field by field and turns the mapping fields of the companion
// transforms into lists of their keys.
std::vector<YAML::Node> Exporter::FixInputs(std::vector<YAML::Node> nodes) {
  auto gone = [&](const std::string& ref) {
    for (const std::string& d : dropped_) if (ref == d || ref.rfind(d + ".", 0) == 0) return true;
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = nodes.begin(); it != nodes.end();) {
      YAML::Node in = (*it)["input"];
      std::vector<std::string> refs, kept;
      if (in && in.IsScalar()) refs.push_back(in.Scalar());
      if (in && in.IsSequence()) for (const YAML::Node& r : in) refs.push_back(r.Scalar());
      bool named = in && in.IsMap();  // a Join's tags: every one is needed
      if (named) for (const auto& kv : in) if (kv.second.IsScalar()) refs.push_back(kv.second.Scalar());
      for (const std::string& r : refs) if (!gone(r)) kept.push_back(r);
      if (!refs.empty() && (kept.empty() || (named && kept.size() != refs.size()))) {
        const std::string name = NameOf(*it);
        out_.notes.push_back(fmt::format("transform '{}' ({}) is not carried over: its input {} has no Beam equivalent "
                                         "(see the notes above)", name, (*it)["type"].Scalar(), refs.front()));
        dropped_.insert(name);
        it = nodes.erase(it);
        changed = true;
        continue;
      }
      if (!named && (kept.size() != refs.size() || (in && in.IsSequence() && kept.size() == 1))) {
        if (kept.size() == 1) {
          (*it)["input"] = kept.front();
        } else {
          YAML::Node list(YAML::NodeType::Sequence);
          for (const std::string& k : kept) list.push_back(k);
          (*it)["input"] = list;
        }
      }
      ++it;
    }
  }
  return nodes;
}

Result<BeamExport> Exporter::Run(const YAML::Node& root) {
  const YAML::Node p = root["pipeline"];
  if (!p || !p.IsMap()) return InvalidArgument(o_.pipeline_path + ": no 'pipeline:' mapping");
  const bool chain = p["type"] && p["type"].IsScalar() && p["type"].Scalar() == "chain";
  std::vector<YAML::Node> members, extras;
  auto each = [&](const YAML::Node& list, std::vector<YAML::Node>& into) -> Status {
    if (!list) return Status::OK();
    if (list.IsSequence()) {
      for (const YAML::Node& t : list) RETURN_IF_ERROR(Transform(t, into));
    } else {
      RETURN_IF_ERROR(Transform(list, into));
    }
    return Status::OK();
  };
  std::vector<YAML::Node> source, sink;
  RETURN_IF_ERROR(each(p["source"], source));  // a composite may have them too (Beam's normalize_source_sink)
  RETURN_IF_ERROR(each(p["transforms"], members));
  RETURN_IF_ERROR(each(p["sink"], sink));
  if (chain) RETURN_IF_ERROR(each(p["extra_transforms"], extras));
  if (chain) {
    extras = FixInputs(std::move(extras));
  } else {
    members = FixInputs(std::move(members));
  }

  YAML::Node out(YAML::NodeType::Map);
  if (mlp_ || sentence_) {
    YAML::Node provider(YAML::NodeType::Map);
    provider["type"] = "python";
    provider["config"] = YAML::Node(YAML::NodeType::Map);
    if (mlp_) provider["transforms"][kMlpType] = "dfworker_beam.MlpInference";
    if (sentence_) provider["transforms"][kSentenceType] = "dfworker_beam.SentenceEmbedding";
    out["providers"].push_back(provider);
  }
  out_.uses_companion = mlp_ || sentence_ || manual_;  // manual steps are PyTransforms of the package
  YAML::Node np(YAML::NodeType::Map);
  if (p["type"] && p["type"].IsScalar()) np["type"] = p["type"].Scalar();  // chain or composite, as written
  if (p["resource_hints"]) np["resource_hints"] = YAML::Clone(p["resource_hints"]);
  auto put = [](YAML::Node list_parent, const char* key, const std::vector<YAML::Node>& nodes) {
    for (const YAML::Node& n : nodes) list_parent[key].push_back(n);
  };
  if (chain && source.size() == 1) np["source"] = source.front();
  else put(np, "transforms", source);
  put(np, "transforms", members);
  if (chain && sink.size() == 1) np["sink"] = sink.front();
  else put(np, "transforms", sink);
  if (!extras.empty()) put(np, "extra_transforms", extras);
  out["pipeline"] = np;
  if (out_.uses_ml) out["options"]["yaml_experimental_features"].push_back("ML");
  if (out_.uses_combine) out["options"]["yaml_experimental_features"].push_back("Combine");
  // The pipeline's own tests (Beam's yaml_testing reads the same tests: list).
  if (root["tests"]) out["tests"] = YAML::Clone(root["tests"]);

  YAML::Emitter e;
  e.SetIndent(2);
  e << out;
  if (!e.good()) return Internal("export: cannot write the Beam YAML: " + e.GetLastError());
  std::string header = "# Beam YAML written by `dfworker export --to beam` from " + o_.pipeline_path + ".\n";
  header += "# Run it from the directory the dfworker pipeline runs from (its paths are relative); README.md says how.\n";
  for (const std::string& m : out_.manual_steps) header += "# MANUAL STEP: " + m + "\n";
  out_.pipeline_yaml = header + e.c_str() + "\n";
  return std::move(out_);
}

}  // namespace

Result<BeamExport> ExportPipelineToBeam(std::string_view yaml_text, const PipelineOptions& options,
                                        const BeamExportOptions& export_options) {
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    if (options.streaming) {
      return Unimplemented("--streaming: dfworker pipelines are batch; export a batch pipeline");
    }
    ASSIGN_OR_RETURN(BeamExport exported, Exporter(export_options).Run(root));
    export_internal::AddLaunchFiles(options, export_options, exported);
    return exported;
  } catch (const YAML::Exception& e) {
    return InvalidArgument(export_options.pipeline_path + ": " + e.what());
  } catch (const std::exception& e) {
    return Internal(export_options.pipeline_path + ": export failed: " + e.what());
  }
}

}  // namespace dfw
