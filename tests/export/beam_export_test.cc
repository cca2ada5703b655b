// ExportPipelineToBeam: the Beam YAML it writes, parsed back with yaml-cpp, transform by transform
// and key by key; the notes; the launch files; and what has no Beam equivalent.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

#include "dfw/export/beam_export.h"
#include "dfw/options/parse.h"

namespace dfw {
namespace {

const std::string kSource = DFW_SOURCE_DIR;

std::string ReadSource(const std::string& rel) {
  std::ifstream in(kSource + "/" + rel);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Exported {
  BeamExport e;
  YAML::Node yaml;
};

Result<Exported> Export(const std::string& text, const std::vector<std::string>& flags = {}, bool manual = false) {
  BeamExportOptions eo;
  eo.pipeline_path = "p.yaml";
  eo.out_dir = "out/beam";
  eo.companion_dir = kSource + "/python";
  eo.allow_manual_steps = manual;
  ASSIGN_OR_RETURN(BeamExport e, ExportPipelineToBeam(text, ParsePipelineOptions(flags, text, "p.yaml"), eo));
  YAML::Node y = YAML::Load(e.pipeline_yaml);
  return Exported{std::move(e), y};
}

bool AnyContains(const std::vector<std::string>& v, const std::string& fragment) {
  for (const std::string& s : v) if (s.find(fragment) != std::string::npos) return true;
  return false;
}

// pipelines/default.yaml with the tiny MLP (run from the source root, as its paths are relative).
TEST(BeamExport, DefaultPipelineRunsTheMlpThroughTheCompanionProvider) {
  std::filesystem::current_path(kSource);
  auto r = Export(ReadSource("pipelines/default.yaml"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node& y = r->yaml;
  ASSERT_TRUE(y["providers"].IsSequence());
  ASSERT_EQ(y["providers"].size(), 1u);
  EXPECT_EQ(y["providers"][0]["type"].Scalar(), "python");
  EXPECT_FALSE(y["providers"][0]["config"]["packages"]) << "a python provider with packages pip-installs at run time";
  EXPECT_EQ(y["providers"][0]["transforms"]["DfworkerMlpInference"].Scalar(), "dfworker_beam.MlpInference");
  const YAML::Node p = y["pipeline"];
  EXPECT_EQ(p["type"].Scalar(), "chain");
  EXPECT_EQ(p["source"]["type"].Scalar(), "ReadFromJson");
  EXPECT_FALSE(p["source"]["config"]["error_handling"]) << "Beam's ReadFromJson has no error_handling";
  EXPECT_EQ(p["source"]["config"]["path"].Scalar(), "pipelines/data/breast_cancer_demo.jsonl");
  ASSERT_EQ(p["transforms"].size(), 1u);
  const YAML::Node t = p["transforms"][0];
  EXPECT_EQ(t["type"].Scalar(), "DfworkerMlpInference");
  EXPECT_EQ(t["name"].Scalar(), "Classify");
  const YAML::Node c = t["config"];
  EXPECT_EQ(c["model_path"].Scalar(), "pipelines/models/breast_cancer_mlp");
  EXPECT_EQ(c["input_field"].Scalar(), "features");
  EXPECT_EQ(c["inference_tag"].Scalar(), "inference");
  EXPECT_EQ(c["model_id"].Scalar(), "pipelines/models/breast_cancer_mlp");
  EXPECT_EQ(c["min_batch_size"].as<int>(), 1);
  EXPECT_EQ(c["max_batch_size"].as<int>(), 256);
  EXPECT_EQ(c["error_handling"]["output"].Scalar(), "failed");
  EXPECT_FALSE(c["device"]);
  EXPECT_FALSE(p["sink"]["config"]["file_name_suffix"]);
  ASSERT_EQ(p["extra_transforms"].size(), 1u);
  // [ReadSamples.unparseable, Classify.failed] loses the reader's output and becomes one name.
  ASSERT_TRUE(p["extra_transforms"][0]["input"].IsScalar());
  EXPECT_EQ(p["extra_transforms"][0]["input"].Scalar(), "Classify.failed");
  EXPECT_FALSE(y["options"]) << "runner and worker flags go to the launch command, not the file";
  EXPECT_TRUE(AnyContains(r->e.notes, "'ReadSamples' (ReadFromJson): its error output is not carried over"));
  EXPECT_TRUE(AnyContains(r->e.notes, "'file_name_suffix: .jsonl' is not carried over"));
  EXPECT_TRUE(AnyContains(r->e.notes, "numpy on the Beam worker's CPU"));
  EXPECT_TRUE(r->e.uses_companion);
  EXPECT_FALSE(r->e.uses_ml);
}

const char* kEmbedChain = R"(pipeline:
  type: chain
  source: {type: ReadFromJson, config: {path: in.jsonl}}
  transforms:
    - type: RunInference
      name: Embed
      config:
        inference_tag: embedding
        model_handler:
          type: SentenceEmbeddingHandler
          config: {model_path: testdata/tiny_bert, input_field: text, max_batch_size: 64%s}
%s  sink: {type: WriteToJson, config: {path: out/e}}
%s)";

std::string EmbedChain(const std::string& handler_extra, bool errors) {
  char buf[2048];
  std::snprintf(buf, sizeof buf, kEmbedChain, handler_extra.c_str(),
                errors ? "        error_handling: {output: failed}\n" : "",
                errors ? "  extra_transforms:\n    - {type: WriteToJson, input: Embed.failed, config: {path: out/err}}\n" : "");
  return buf;
}

// The tiny BERT is a plain Hugging Face directory: sentence-transformers would mean-pool it to 128
// tokens without normalising, dfworker normalises by default: the companion transform, explicitly.
TEST(BeamExport, EmbeddingWhoseSettingsDifferFromSentenceTransformersDefaultsUsesTheCompanionTransform) {
  std::filesystem::current_path(kSource);
  auto r = Export(EmbedChain("", false));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node t = r->yaml["pipeline"]["transforms"][0];
  EXPECT_EQ(t["type"].Scalar(), "DfworkerSentenceEmbedding");
  EXPECT_EQ(t["config"]["max_seq_length"].as<int>(), 128);
  EXPECT_EQ(t["config"]["pooling"].Scalar(), "mean");
  EXPECT_TRUE(t["config"]["normalize"].as<bool>());
  EXPECT_EQ(t["config"]["inference_tag"].Scalar(), "embedding");
  EXPECT_EQ(r->yaml["providers"][0]["transforms"]["DfworkerSentenceEmbedding"].Scalar(), "dfworker_beam.SentenceEmbedding");
  EXPECT_TRUE(AnyContains(r->e.notes, "normalize false")) << r->e.notes.front();
}

// With normalize: false the settings are sentence-transformers' own: Beam's MLTransform, with the
// PredictionResult shape rebuilt around it (MLTransform replaces the column it embeds).
TEST(BeamExport, EmbeddingWithSentenceTransformersSemanticsBecomesMLTransform) {
  std::filesystem::current_path(kSource);
  auto r = Export(EmbedChain(", normalize: false", false));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node ts = r->yaml["pipeline"]["transforms"];
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_EQ(ts[0]["type"].Scalar(), "MapToFields");
  EXPECT_EQ(ts[0]["config"]["fields"]["dfw_embedding_embedding"].Scalar(), "text");
  EXPECT_EQ(ts[1]["type"].Scalar(), "MLTransform");
  EXPECT_EQ(ts[1]["config"]["write_artifact_location"].Scalar(), "out/beam/artifacts/Embed");
  const YAML::Node st = ts[1]["config"]["transforms"][0];
  EXPECT_EQ(st["type"].Scalar(), "SentenceTransformerEmbeddings");
  EXPECT_EQ(st["config"]["model_name"].Scalar(), "testdata/tiny_bert");
  EXPECT_EQ(st["config"]["columns"][0].Scalar(), "dfw_embedding_embedding");
  EXPECT_EQ(st["config"]["max_batch_size"].as<int>(), 64);
  EXPECT_EQ(ts[2]["name"].Scalar(), "Embed");
  EXPECT_EQ(ts[2]["config"]["drop"][0].Scalar(), "dfw_embedding_embedding");
  const YAML::Node field = ts[2]["config"]["fields"]["embedding"];
  EXPECT_NE(field["callable"].Scalar().find("beam.Row(example=row.text, inference=[float(v) for v in row.dfw_embedding_embedding], "
                                            "model_id='testdata/tiny_bert')"),
            std::string::npos)
      << field["callable"].Scalar();
  EXPECT_EQ(field["output_type"]["properties"]["inference"]["items"]["type"].Scalar(), "number");
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(ts[i]["input"]) << "chain members take implicit inputs";
  EXPECT_EQ(r->yaml["options"]["yaml_experimental_features"][0].Scalar(), "ML");
  EXPECT_FALSE(r->yaml["providers"]) << "MLTransform needs no companion package";
}

// The same settings but an error output: MLTransform has none, so the companion transform keeps it.
TEST(BeamExport, EmbeddingWithAnErrorOutputKeepsItThroughTheCompanionTransform) {
  std::filesystem::current_path(kSource);
  auto r = Export(EmbedChain(", normalize: false", true));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node t = r->yaml["pipeline"]["transforms"][0];
  EXPECT_EQ(t["type"].Scalar(), "DfworkerSentenceEmbedding");
  EXPECT_EQ(t["config"]["error_handling"]["output"].Scalar(), "failed");
  EXPECT_EQ(r->yaml["pipeline"]["extra_transforms"][0]["input"].Scalar(), "Embed.failed");
  EXPECT_TRUE(AnyContains(r->e.notes, "it has an error output"));
}

// Beam's own spelling passes through; what Beam's MLTransform lacks (error_handling) goes, and so
// does the writer that consumed it.
// pipelines/beam_ml_embeddings.yaml is written to run unchanged on Beam: exported as it is.
TEST(BeamExport, BeamSpellingMLTransformIsKeptAsItIs) {
  std::filesystem::current_path(kSource);
  auto r = Export(ReadSource("pipelines/beam_ml_embeddings.yaml"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node ts = r->yaml["pipeline"]["transforms"];
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_EQ(ts[1]["type"].Scalar(), "MLTransform");
  EXPECT_FALSE(ts[1]["config"]["error_handling"]);
  EXPECT_EQ(ts[1]["config"]["transforms"][0]["config"]["model_name"].Scalar(), "testdata/tiny_bert");
  EXPECT_FALSE(r->yaml["pipeline"]["extra_transforms"]);
  EXPECT_FALSE(AnyContains(r->e.notes, "is not carried over"));
  EXPECT_EQ(ts[0]["config"]["path"].Scalar(), "pipelines/data/sentences.jsonl");
  EXPECT_EQ(r->yaml["options"]["yaml_experimental_features"][0].Scalar(), "ML");
}

TEST(BeamExport, AnMLTransformErrorOutputIsDroppedWithANote) {
  // Beam 2.77's MLTransform takes no error_handling: its writer has no input left and goes too.
  std::filesystem::current_path(kSource);
  auto r = Export(R"(options: {yaml_experimental_features: [ML]}
pipeline:
  type: chain
  transforms:
    - {type: ReadFromJson, config: {path: testdata/tiny_bert/sentences.jsonl}}
    - type: MLTransform
      name: Embed
      config:
        write_artifact_location: out/x/artifacts
        error_handling: {output: failed}
        transforms: [{type: SentenceTransformerEmbeddings, config: {model_name: testdata/tiny_bert, columns: [text]}}]
    - {type: WriteToJson, config: {path: out/x/embeddings}}
  extra_transforms:
    - {type: WriteToJson, name: WriteErrors, input: Embed.failed, config: {path: out/x/errors}}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->yaml["pipeline"]["transforms"][1]["config"]["error_handling"]);
  EXPECT_FALSE(r->yaml["pipeline"]["extra_transforms"]);
  EXPECT_TRUE(AnyContains(r->e.notes, "transform 'WriteErrors' (WriteToJson) is not carried over"));
}

const char* kExplicit = R"(pipeline:
  transforms:
    - {type: Create, name: Rows, config: {elements: [{x: 1}, {x: 2}]}}
    - {type: Filter, name: One, input: Rows, config: {keep: "x == 1"}}
    - type: RunInference
      name: Score
      input: One
      config:
        model_handler: {type: SomeCustomHandler, config: {model_path: m, input_field: x}}
    - {type: LogForTesting, input: Score}
)";

TEST(BeamExport, AHandlerWithNoBeamEquivalentIsRefusedNamingIt) {
  auto r = Export(kExplicit);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("transform 'Score' (RunInference) has no Beam equivalent: model_handler type "
                                      "'SomeCustomHandler'"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("--allow_manual_steps"), std::string::npos);
}

TEST(BeamExport, WithAllowManualStepsItIsAMarkedPlaceholderInItsPlace) {
  auto r = Export(kExplicit, {}, /*manual=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node ts = r->yaml["pipeline"]["transforms"];
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_EQ(ts[2]["type"].Scalar(), "PyTransform");
  EXPECT_EQ(ts[2]["name"].Scalar(), "Score");
  EXPECT_EQ(ts[2]["input"].Scalar(), "One");
  EXPECT_EQ(ts[2]["config"]["constructor"].Scalar(), "dfworker_beam.ManualStep");
  EXPECT_EQ(ts[2]["config"]["kwargs"]["dfworker_type"].Scalar(), "RunInference");
  EXPECT_EQ(ts[3]["input"].Scalar(), "Score");
  EXPECT_FALSE(r->yaml["providers"]) << "the placeholder is a PyTransform: no provider entry";
  EXPECT_TRUE(r->e.uses_companion) << "dfworker_beam.ManualStep is in the companion package";
  ASSERT_EQ(r->e.manual_steps.size(), 1u);
  EXPECT_NE(r->e.pipeline_yaml.find("# MANUAL STEP: transform 'Score'"), std::string::npos);
  EXPECT_NE(r->e.readme.find("MANUAL STEPS"), std::string::npos);
  // Beam's generic expressions pass only < and >: the == comparison is given language python.
  EXPECT_EQ(ts[1]["config"]["language"].Scalar(), "python");
  EXPECT_TRUE(AnyContains(r->e.notes, "'x == 1' needs language: python"));
}

TEST(BeamExport, LaunchCommandsCarryTheValidatedFlags) {
  std::filesystem::current_path(kSource);
  auto r = Export(ReadSource("pipelines/default.yaml"),
                  {"--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps",
                   "--machine_type=g2-standard-8", "--project=my-proj"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string& sh = r->e.launch_sh;
  for (const std::string& want :
       {std::string("--runner='DataflowRunner'"),
        std::string("--dataflow_service_options='worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps'"),
        std::string("--machine_type='g2-standard-8'"), std::string("--experiments='use_runner_v2'"),
        std::string("--number_of_worker_harness_threads='2'"), std::string("--project='my-proj'"),
        std::string("--region=\"${REGION}\""), std::string("--sdk_container_image=\"${SDK_CONTAINER_IMAGE}\""),
        std::string("--extra_package=\"$here/dist/dfworker_beam-0.1.0-py3-none-any.whl\""),
        std::string("gcloud dataflow yaml run"), std::string("pip wheel --no-deps"),
        std::string(": \"${SDK_CONTAINER_IMAGE:?set SDK_CONTAINER_IMAGE")}) {
    EXPECT_NE(sh.find(want), std::string::npos) << want << "\n" << sh;
  }
  EXPECT_EQ(sh.find("PROJECT:?"), std::string::npos) << "the project was given";
  EXPECT_NE(r->e.readme.find("## Not carried over, or changed"), std::string::npos);
  EXPECT_NE(r->e.readme.find("file_name_suffix"), std::string::npos);
}

TEST(BeamExport, WriteBeamExportWritesTheThreeFilesWithAnExecutableLaunchScript) {
  std::filesystem::current_path(kSource);
  auto r = Export(ReadSource("pipelines/json_clean.yaml"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->e.uses_companion);
  EXPECT_FALSE(r->yaml["providers"]);
  const std::string dir = ::testing::TempDir() + "/beam_export_test_out";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteBeamExport(r->e, dir).ok());
  for (const char* f : {"pipeline.yaml", "README.md", "launch.sh"}) EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  struct stat st{};
  ASSERT_EQ(::stat((dir + "/launch.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  std::ifstream in(dir + "/pipeline.yaml");
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(YAML::Load(s.str())["pipeline"]["transforms"][0]["name"].Scalar(), "Features");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(BeamExport, CombineIsKeptWithBeamsFeatureFlagAndTopFnsInBeamsSpelling) {
  auto r = Export(R"(pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [{k: a, x: 1}]}
    - type: Combine
      config:
        group_by: k
        combine:
          total: {value: x, fn: sum}
          big: {value: x, fn: {type: top_largest, config: {n: 2}}}
          small: {value: x, fn: {type: top_smallest, config: {n: 3}}}
    - type: LogForTesting
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node combine = r->yaml["pipeline"]["transforms"][1];
  ASSERT_EQ(combine["type"].as<std::string>(), "Combine");
  EXPECT_EQ(combine["config"]["combine"]["total"]["fn"].as<std::string>(), "sum");
  const YAML::Node big = combine["config"]["combine"]["big"]["fn"];
  EXPECT_EQ(big["type"].as<std::string>(), "apache_beam.transforms.combiners.TopCombineFn");
  EXPECT_EQ(big["config"]["n"].as<int>(), 2);
  EXPECT_FALSE(big["config"]["reverse"].IsDefined());
  const YAML::Node small = combine["config"]["combine"]["small"]["fn"];
  EXPECT_EQ(small["type"].as<std::string>(), "apache_beam.transforms.combiners.TopCombineFn");
  EXPECT_EQ(small["config"]["n"].as<int>(), 3);
  EXPECT_TRUE(small["config"]["reverse"].as<bool>());
  ASSERT_TRUE(r->yaml["options"]["yaml_experimental_features"].IsSequence());
  EXPECT_EQ(r->yaml["options"]["yaml_experimental_features"][0].as<std::string>(), "Combine");
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(BeamExport, WindowingTransformsAndACombinesWindowingAreKept) {
  auto r = Export(R"(pipeline:
  type: chain
  transforms:
    - type: Create
      config: {elements: [{u: a, t: 1}]}
    - type: AssignTimestamps
      config: {timestamp: t}
    - type: WindowInto
      windowing: {type: fixed, size: 10s}
    - type: Combine
      config: {group_by: u, combine: {n: {value: u, fn: count}}}
      windowing: {type: sessions, gap: 5s}
    - type: ExtractWindowingInfo
      config: {fields: [window_string]}
    - type: LogForTesting
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node t = r->yaml["pipeline"]["transforms"];
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[1]["type"].as<std::string>(), "AssignTimestamps");
  EXPECT_EQ(t[2]["windowing"]["size"].as<std::string>(), "10s");
  EXPECT_EQ(t[3]["windowing"]["type"].as<std::string>(), "sessions");
  EXPECT_EQ(t[4]["config"]["fields"][0].as<std::string>(), "window_string");
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(BeamExport, PartitionAndThePipelinesTestsAreKept) {
  auto r = Export(R"(pipeline:
  transforms:
    - {type: Create, config: {elements: [{k: a}]}}
    - {type: Partition, name: P, input: Create, config: {by: k, outputs: [a, b]}}
    - {type: LogForTesting, input: P.a}
    - {type: LogForTesting, name: B, input: P.b}
tests:
  - name: t
    expected_outputs: [{name: P.a, elements: [{k: a}]}]
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node partition = r->yaml["pipeline"]["transforms"][1];
  EXPECT_EQ(partition["type"].as<std::string>(), "Partition");
  EXPECT_EQ(partition["config"]["outputs"][1].as<std::string>(), "b");
  EXPECT_EQ(r->yaml["pipeline"]["transforms"][2]["input"].as<std::string>(), "P.a");
  ASSERT_TRUE(r->yaml["tests"].IsSequence());
  EXPECT_EQ(r->yaml["tests"][0]["expected_outputs"][0]["name"].as<std::string>(), "P.a");
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(BeamExport, JoinKeepsItsNamedInputsAndSaysBeamRunsItOnSql) {
  auto r = Export(R"(pipeline:
  transforms:
    - {type: Create, name: A, config: {elements: [{k: 1, x: 1}]}}
    - {type: Create, name: B, config: {elements: [{k: 1, y: 2}]}}
    - type: Join
      name: J
      input: {a: A, b: B}
      config: {type: left, equalities: k, fields: {a: [x], b: {why: y}}}
    - {type: LogForTesting, input: J}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node join = r->yaml["pipeline"]["transforms"][2];
  EXPECT_EQ(join["type"].as<std::string>(), "Join");
  EXPECT_EQ(join["input"]["a"].as<std::string>(), "A");
  EXPECT_EQ(join["input"]["b"].as<std::string>(), "B");
  EXPECT_EQ(join["config"]["fields"]["b"]["why"].as<std::string>(), "y");
  bool said = false;
  for (const std::string& n : r->e.notes) said = said || n.find("Beam SQL") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(BeamExport, SqlAndLanguageSqlAreKeptAndSayBeamRunsThemOnBeamSql) {
  auto r = Export(R"(pipeline:
  type: chain
  transforms:
    - {type: Create, config: {elements: [{a: x, b: 1}]}}
    - {type: Sql, config: {query: "SELECT a, sum(b) AS s FROM PCOLLECTION GROUP BY a"}}
    - {type: Filter, config: {language: sql, keep: "s > 0"}}
    - {type: MapToFields, config: {language: sql, append: true, fields: {t: "s * 2"}}}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node ts = r->yaml["pipeline"]["transforms"];
  EXPECT_EQ(ts[1]["type"].as<std::string>(), "Sql");
  EXPECT_EQ(ts[1]["config"]["query"].as<std::string>(), "SELECT a, sum(b) AS s FROM PCOLLECTION GROUP BY a");
  EXPECT_EQ(ts[2]["config"]["language"].as<std::string>(), "sql");
  EXPECT_EQ(ts[2]["config"]["keep"].as<std::string>(), "s > 0");
  EXPECT_EQ(ts[3]["config"]["language"].as<std::string>(), "sql");
  int said = 0;
  for (const std::string& n : r->e.notes) said += n.find("Beam SQL (Calcite)") != std::string::npos ? 1 : 0;
  EXPECT_EQ(said, 3);
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

// The file IOs of src/stages/io/ have Beam YAML forms of the same names and keys.
TEST(BeamExport, AvroTfRecordAndMatchAllAreKept) {
  auto r = Export(R"(pipeline:
  transforms:
    - {type: ReadFromAvro, name: RA, config: {path: in.avro*, error_handling: {output: bad}}}
    - {type: WriteToAvro, input: RA, config: {path: out/a, file_name_suffix: .avro}}
    - {type: WriteToJson, input: RA.bad, config: {path: out/bad}}
    - {type: Create, name: C, config: {elements: [{pattern: 'in*'}]}}
    - {type: MatchAll, name: M, input: C, config: {file_pattern: pattern, empty_match_treatment: ALLOW}}
    - {type: LogForTesting, input: M}
    - {type: ReadFromTFRecord, name: RT, config: {file_pattern: 'r*', compression_type: AUTO, validate: true}}
    - type: WriteToTFRecord
      input: RT
      config: {file_path_prefix: out/t, file_name_suffix: .tfrecords, compression_type: UNCOMPRESSED, num_shards: 1}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const YAML::Node t = r->yaml["pipeline"]["transforms"];
  auto find = [&](const std::string& type) {
    for (const YAML::Node& n : t) if (n["type"].as<std::string>() == type) return n;
    return YAML::Node();
  };
  std::vector<std::string> types;
  for (const YAML::Node& n : t) types.push_back(n["type"].as<std::string>());
  // The error output's writer goes with the error output.
  EXPECT_EQ(std::count(types.begin(), types.end(), "WriteToJson"), 0) << r->e.pipeline_yaml;
  for (const char* type : {"ReadFromAvro", "WriteToAvro", "MatchAll", "ReadFromTFRecord", "WriteToTFRecord"}) {
    ASSERT_TRUE(find(type)) << type << " missing from\n" << r->e.pipeline_yaml;
  }
  EXPECT_FALSE(find("ReadFromAvro")["config"]["error_handling"]);
  EXPECT_FALSE(find("WriteToAvro")["config"]["file_name_suffix"]);
  EXPECT_EQ(find("MatchAll")["config"]["file_pattern"].as<std::string>(), "pattern");
  EXPECT_EQ(find("ReadFromTFRecord")["config"]["compression_type"].as<std::string>(), "AUTO");
  EXPECT_EQ(find("WriteToTFRecord")["config"]["file_name_suffix"].as<std::string>(), ".tfrecords");
  EXPECT_EQ(find("WriteToTFRecord")["config"]["num_shards"].as<int>(), 1);
  EXPECT_TRUE(AnyContains(r->e.notes, "file_name_suffix: .avro"));
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

// The forms of Beam's own YAML tests (windowing.yaml: chains inside a composite) and the
// transforms dfworker runs under Beam's names (AssertEqual, Reshuffle, ValidateWithSchema) are
// exported as written.
TEST(BeamExport, CompositesNestedChainsAssertEqualReshuffleAndValidateWithSchemaAreKept) {
  auto r = Export(R"(pipeline:
  type: composite
  transforms:
    - type: Create
      config: {elements: [{k: x, t: 1}]}
    - type: chain
      name: Global
      input: Create
      transforms:
        - type: Reshuffle
        - type: ValidateWithSchema
          config: {schema: {type: object, properties: {t: {type: integer}}}}
        - type: Combine
          config: {group_by: k, combine: {t: sum}}
          windowing: {type: global}
        - type: AssertEqual
          config:
            elements: [{k: x, t: 1}]
    - type: composite
      name: Inner
      input: {one: Create}
      output: Log
      transforms:
        - {type: LogForTesting, name: Log, input: one}
)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->yaml["pipeline"]["type"].as<std::string>(), "composite");
  const YAML::Node chain = r->yaml["pipeline"]["transforms"][1];
  EXPECT_EQ(chain["type"].as<std::string>(), "chain");
  EXPECT_EQ(chain["input"].as<std::string>(), "Create");
  ASSERT_EQ(chain["transforms"].size(), 4u);
  EXPECT_EQ(chain["transforms"][0]["type"].as<std::string>(), "Reshuffle");
  EXPECT_EQ(chain["transforms"][1]["config"]["schema"]["properties"]["t"]["type"].as<std::string>(), "integer");
  EXPECT_EQ(chain["transforms"][2]["windowing"]["type"].as<std::string>(), "global");
  EXPECT_EQ(chain["transforms"][3]["config"]["elements"][0]["t"].as<int>(), 1);
  const YAML::Node inner = r->yaml["pipeline"]["transforms"][2];
  EXPECT_EQ(inner["input"]["one"].as<std::string>(), "Create");
  EXPECT_EQ(inner["output"].as<std::string>(), "Log");
  EXPECT_EQ(inner["transforms"][0]["input"].as<std::string>(), "one");
  // The Combine inside the chain still turns Beam's feature flag on.
  EXPECT_EQ(r->yaml["options"]["yaml_experimental_features"][0].as<std::string>(), "Combine");
}

}  // namespace
}  // namespace dfw
