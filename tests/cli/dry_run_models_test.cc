// The dry run reads the pipeline: RunInference models sized from their safetensors headers (a sparse
// 3 GiB file, never read), copies policy from model_handler.config, pipeline/model errors as
// diagnostics (text and JSON), device: GPU without an accelerator, --accelerator_backend.
// Runs the real binary; stdout (the report) is kept apart from stderr (logs).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"

namespace dry_run_models_test {

using dfw::testing::ReadFile;

namespace fs = std::filesystem;

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kBigModelBytes = 3 * kGiB;  // fc1.weight F32 [786432, 1024]
const std::string kT4 = "--dataflow_service_options=worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver";

struct Outcome {
  int exit_code = -1;
  std::string out;  // stdout only
  std::string err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// One temp dir per test binary: models (big sparse, corrupt), input data, pipeline files.
class Workspace {
 public:
  Workspace() : dir_(tmp_.path()) {
    fs::create_directories(dir_ / "big");
    fs::create_directories(dir_ / "corrupt");
    std::ofstream(dir_ / "data.jsonl") << "{\"features\": [1, 2]}\n";
    std::ofstream(dir_ / "big" / "config.json")
        << R"({"model_type": "mlp", "input_dim": 1024, "layers": [{"name": "fc1", "out_features": 786432, )"
           R"("activation": "none", "bias": false}], "output": "none"})";
    WriteSparseSafetensors(dir_ / "big" / "model.safetensors");
    fs::copy_file(fs::path(DFW_SOURCE_DIR) / "pipelines/models/breast_cancer_mlp/config.json", dir_ / "corrupt" / "config.json");
    std::ofstream corrupt(dir_ / "corrupt" / "model.safetensors", std::ios::binary);
    const char len[8] = {24, 0, 0, 0, 0, 0, 0, 0};
    corrupt.write(len, 8);
    corrupt << "{\"fc1.weight\": not json}";
  }
  const fs::path& dir() const { return dir_; }

  // A pipeline ReadFromJson → RunInference(model_dir, extra handler config lines) → WriteToJson.
  fs::path Pipeline(const std::string& name, const std::string& model_path, const std::string& handler_extra) const {
    fs::path p = dir_ / (name + ".yaml");
    std::ofstream(p) << "pipeline:\n  type: chain\n  transforms:\n"
                        "    - type: ReadFromJson\n      config: {path: " << (dir_ / "data.jsonl").string() << "}\n"
                        "    - type: RunInference\n      name: Embed\n      config:\n        model_handler:\n"
                        "          type: MlpModelHandlerSafetensors\n          config:\n"
                        "            model_path: " << model_path << "\n            input_field: features\n"
                        // One row per batch: the 786432-wide layer's workspace (2 x rows x width x 4 B, planned
                        // per process) stays 6 MiB, so these cases are about the weights' copies.
                        "            max_batch_size: 1\n"
                     << handler_extra
                     << "    - type: WriteToJson\n      config: {path: " << (dir_ / "out").string() << "}\n";
    return p;
  }

 private:
  static void WriteSparseSafetensors(const fs::path& path) {
    std::string header = R"({"fc1.weight":{"dtype":"F32","shape":[786432,1024],"data_offsets":[0,)" +
                         std::to_string(kBigModelBytes) + "]}}";
    while (header.size() % 8 != 0) header += ' ';
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    bytes += header;
    int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size() + kBigModelBytes)), 0);  // sparse: no data blocks
    ::close(fd);
  }
  dfw::testing::TempDir tmp_;  // (declared first: dir_ is made from it)
  fs::path dir_;
};

const Workspace& Ws() {
  static const Workspace ws;  // removed at exit
  return ws;
}

Outcome RunDfworker(const std::vector<std::string>& args) {
  const fs::path err = Ws().dir() / "stderr.txt";
  std::string cmd = "cd " + Quote(DFW_SOURCE_DIR) + " && " + Quote(std::string(DFW_BINARY_DIR) + "/src/cli/dfworker");
  for (const auto& a : args) cmd += " " + Quote(a);
  cmd += " 2>" + Quote(err.string());
  Outcome o;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return o;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) o.out.append(buf, n);
  const int status = ::pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.err = ReadFile(err);
  return o;
}

std::vector<std::string> Codes(const nlohmann::json& report) {
  std::vector<std::string> codes;
  for (const auto& d : report["diagnostics"]) codes.push_back(d["code"].get<std::string>());
  return codes;
}

bool Has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

struct Case {
  std::string name;
  std::string model;          // "big", "corrupt" or a path that does not exist
  std::string handler_extra;  // extra model_handler.config lines (12-space indent)
  std::vector<std::string> flags;
  int exit_code;
  std::vector<std::string> codes;     // must all be reported
  std::vector<std::string> absent;    // must not be reported
  int copies = -1;                    // plan.models[0].copies, -1 = not checked (no plan model)
  std::string message_part = "";      // some diagnostic message contains it
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // issue 6: 3 GiB × 8 SDK processes on one 16 GiB T4 cannot fit.
      {"t4_eight_processes_no_sharing", "big", "", {kT4, "--machine_type=n1-standard-8"}, 2,
       {"gpu-memory-exceeded", "mps-recommended"}, {}, 8},
      {"t4_two_copies_with_mps", "big", "            model_copies: 2\n", {kT4 + ";use_nvidia_mps", "--machine_type=n1-standard-8"}, 0,
       {}, {"gpu-memory-exceeded", "gpu-memory-tight", "mps-recommended"}, 2},
      {"t4_two_copies_without_mps", "big", "            model_copies: 2\n", {kT4, "--machine_type=n1-standard-8"}, 0,
       {"mps-recommended"}, {"gpu-memory-exceeded"}, 2},
      {"t4_large_model", "big", "            large_model: true\n", {kT4, "--machine_type=n1-standard-8"}, 0,
       {}, {"gpu-memory-exceeded", "mps-recommended"}, 1},
      {"model_copies_win_over_large_model", "big", "            large_model: true\n            model_copies: 3\n",
       {kT4 + ";use_nvidia_mps", "--machine_type=n1-standard-8"}, 0, {}, {"gpu-memory-exceeded"}, 3},
      // 5 × 3 GiB + one MPS server context (300 MiB estimate) = 96% of 16 GiB.
      {"t4_five_copies_tight", "big", "            model_copies: 5\n", {kT4 + ";use_nvidia_mps", "--machine_type=n1-standard-8"}, 0,
       {"gpu-memory-tight"}, {"gpu-memory-exceeded"}, 5},
      {"missing_model_file", "no/such/model_dir", "", {kT4, "--machine_type=n1-standard-8"}, 2,
       {"pipeline-invalid"}, {}, -1, "no/such/model_dir"},
      {"corrupt_header", "corrupt", "", {kT4, "--machine_type=n1-standard-8"}, 2,
       {"pipeline-invalid"}, {}, -1, "model.safetensors"},
      {"gpu_without_accelerator", "big", "            device: GPU\n", {"--machine_type=n1-standard-2"}, 0,
       {"gpu-requested-no-accelerator"}, {"gpu-memory-exceeded"}, 2},
      {"gpu_with_accelerator", "big", "            device: GPU\n            large_model: true\n", {kT4, "--machine_type=n1-standard-8"}, 0,
       {}, {"gpu-requested-no-accelerator"}, 1},
      {"cpu_without_accelerator", "big", "            device: CPU\n", {"--machine_type=n1-standard-2"}, 0,
       {}, {"gpu-requested-no-accelerator"}, 2},
      {"emulated_needs_a_declared_type", "big", "", {"--accelerator_backend=emulated", "--machine_type=n1-standard-2"}, 2,
       {"accelerator-unavailable"}, {}, 2, "needs a declared accelerator"},
  };
  return cases;
}

class DryRunModels : public ::testing::TestWithParam<Case> {};

TEST_P(DryRunModels, JsonReport) {
  const Case& c = GetParam();
  const std::string model = c.model == "big" || c.model == "corrupt" ? (Ws().dir() / c.model).string() : c.model;
  std::vector<std::string> args = {"run", Ws().Pipeline(c.name, model, c.handler_extra).string(), "--dry_run", "--format=json"};
  args.insert(args.end(), c.flags.begin(), c.flags.end());
  Outcome o = RunDfworker(args);
  EXPECT_EQ(o.exit_code, c.exit_code) << o.out << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << "stdout is not one JSON object: " << o.out;
  EXPECT_EQ(j["valid"], c.exit_code == 0);
  const auto codes = Codes(j);
  for (const auto& code : c.codes) EXPECT_TRUE(Has(codes, code)) << code << "\n" << o.out;
  for (const auto& code : c.absent) EXPECT_FALSE(Has(codes, code)) << code << "\n" << o.out;
  if (c.copies >= 0) {
    ASSERT_TRUE(j["plan"].is_object()) << o.out;
    ASSERT_EQ(j["plan"]["models"].size(), 1u) << o.out;
    EXPECT_EQ(j["plan"]["models"][0]["name"], "Embed");
    EXPECT_EQ(j["plan"]["models"][0]["bytes"].get<uint64_t>(), kBigModelBytes);
    EXPECT_EQ(j["plan"]["models"][0]["copies"], c.copies) << o.out;
  }
  if (!c.message_part.empty()) {
    bool found = false;
    for (const auto& d : j["diagnostics"]) found |= d["message"].get<std::string>().find(c.message_part) != std::string::npos;
    EXPECT_TRUE(found) << c.message_part << "\n" << o.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Pipelines, DryRunModels, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(DryRunModelsText, ExceededNamesTheModelAndTheSizes) {
  Outcome o = RunDfworker({"run", Ws().Pipeline("text", (Ws().dir() / "big").string(), "").string(), "--dry_run", kT4,
                           "--machine_type=n1-standard-8"});
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_NE(o.out.find("error[gpu-memory-exceeded]"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Embed: 3.0 GiB x 8 copies"), std::string::npos) << o.out;
}

TEST(DryRunModelsText, PipelineErrorsCarryFileLineColumn) {
  const fs::path p = Ws().dir() / "broken.yaml";
  std::ofstream(p) << "pipeline:\n  type: chain\n  transforms:\n    - type: NoSuchTransform\n";
  for (const std::string format : {"text", "json"}) {
    Outcome o = RunDfworker({"run", p.string(), "--dry_run", "--format=" + format});
    EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
    EXPECT_NE(o.out.find(p.string() + ":4:"), std::string::npos) << format << ": " << o.out;
    if (format == "json") {
      auto j = nlohmann::json::parse(o.out);
      EXPECT_EQ(j["valid"], false);
      EXPECT_TRUE(Has(Codes(j), "pipeline-invalid")) << o.out;
    }
  }
}

TEST(DryRunModelsText, UnreadableFilesAreJsonInJsonMode) {
  Outcome missing = RunDfworker({"run", "no/such/pipeline.yaml", "--dry_run", "--format=json"});
  EXPECT_EQ(missing.exit_code, 2);
  auto j = nlohmann::json::parse(missing.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << missing.out;
  EXPECT_EQ(j["valid"], false);
  EXPECT_TRUE(Has(Codes(j), "file-unreadable"));
  EXPECT_NE(j["diagnostics"][0]["message"].get<std::string>().find("no/such/pipeline.yaml"), std::string::npos);

  const fs::path catalog = Ws().dir() / "catalog";
  fs::create_directories(catalog);
  std::ofstream(catalog / "gpus.yaml") << "gpus:\n  - name: x\n";
  Outcome bad = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--format=json", "--catalog_dir", catalog.string()});
  EXPECT_EQ(bad.exit_code, 2);
  j = nlohmann::json::parse(bad.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << bad.out;
  EXPECT_TRUE(Has(Codes(j), "catalog-invalid"));
  EXPECT_NE(j["diagnostics"][0]["message"].get<std::string>().find("gpus.yaml:2:5"), std::string::npos) << bad.out;
}

TEST(DryRunModelsText, AcceleratorBackendSelection) {
  const std::string p = Ws().Pipeline("backend", (Ws().dir() / "big").string(), "            large_model: true\n").string();
  Outcome emulated = RunDfworker({"run", p, "--dry_run", "--format=json", "--accelerator_backend=emulated", kT4,
                                  "--machine_type=n1-standard-8"});
  ASSERT_EQ(emulated.exit_code, 0) << emulated.out << emulated.err;
  EXPECT_EQ(nlohmann::json::parse(emulated.out)["plan"]["accelerator"]["backend"], "emulated");
  Outcome bad = RunDfworker({"run", p, "--dry_run", "--accelerator_backend=tpu"});
  EXPECT_EQ(bad.exit_code, 2);
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "a GPU may be usable here; cuda is not refused";
  Outcome cuda = RunDfworker({"run", p, "--dry_run", "--format=json", "--accelerator_backend=cuda", kT4,
                              "--machine_type=n1-standard-8"});
  EXPECT_EQ(cuda.exit_code, 2) << cuda.out;
  EXPECT_TRUE(Has(Codes(nlohmann::json::parse(cuda.out)), "accelerator-unavailable")) << cuda.out;
  Outcome automatic = RunDfworker({"run", p, "--dry_run", "--format=json", kT4, "--machine_type=n1-standard-8"});
  ASSERT_EQ(automatic.exit_code, 0) << automatic.out;
  const auto acc = nlohmann::json::parse(automatic.out)["plan"]["accelerator"];
  EXPECT_EQ(acc["backend"], "emulated");
  EXPECT_FALSE(acc["backend_reason"].get<std::string>().empty());
}

}  // namespace dry_run_models_test
