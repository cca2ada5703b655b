// Runs the real dfworker binary: exit codes, the acceptance command, JSON output.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_test_util.h"
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unistd.h>

namespace {

using Outcome = dfw::testing::CliOutcome;
using dfw::testing::RunDfworker;

const std::string kAccel =
    "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps";

TEST(Cli, AcceptanceCommandPlansEightSdkProcessesWithMps) {
  Outcome o = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", kAccel, "--machine_type=g2-standard-8"});
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("SDK processes:   8"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("MPS on"), std::string::npos) << o.out;
}

TEST(Cli, AcceptanceCommandAsJson) {
  Outcome o = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--format=json", kAccel, "--machine_type",
                   "g2-standard-8"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["valid"], true);
  EXPECT_EQ(j["plan"]["sdk_processes"], 8);
  EXPECT_EQ(j["plan"]["accelerator"]["mps"], true);
  EXPECT_EQ(j["plan"]["accelerator"]["type"], "nvidia-l4");
  // The MLP's workspace for its largest batch (max_batch_size 256, widest layer 32, two F32
  // buffers), planned per SDK process and said how.
  const auto& model = j["plan"]["models"][0];
  EXPECT_EQ(model["workspace_bytes"], 2 * 256 * 32 * 4);
  EXPECT_NE(model["workspace_how"].get<std::string>().find("max_batch_size 256"), std::string::npos) << model.dump();
  EXPECT_EQ(j["plan"]["gpu_memory"]["workspace_bytes"], 8 * 2 * 256 * 32 * 4);
  // The input cut for the 8 SDK processes (1.7 MB of JSON Lines: every process gets bundles).
  EXPECT_GE(j["plan"]["bundles"]["count"].get<int>(), 8) << j["plan"]["bundles"].dump();
  EXPECT_NE(j["plan"]["bundles"]["target"].get<std::string>().find("aiming at 32 bundles"), std::string::npos);
}

TEST(Cli, InvalidOptionsExitTwoAndReportEveryError) {
  Outcome o = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--format", "json",
                   "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:2;use_nvidia_mps",
                   "--machine_type=n1-standard-8", "--experiments=no_use_multiple_sdk_containers"});
  ASSERT_EQ(o.exit_code, 2) << o.out;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["valid"], false);
  std::set<std::string> codes;
  for (const auto& d : j["diagnostics"]) codes.insert(d["code"].get<std::string>());
  for (const char* code : {"gpu-machine-mismatch", "mps-multi-gpu", "mps-single-sdk-process", "driver-not-installed"}) {
    EXPECT_TRUE(codes.count(code)) << code << "\n" << o.out;
  }
}

TEST(Cli, PipelineFileOptionsBlockIsRead) {
  namespace fs = std::filesystem;
  const dfw::testing::TempDir tmp;
  const std::filesystem::path file = tmp / "p.yaml";
  std::ofstream(file) << "options:\n  machine_type: g2-standard-4\n  dataflow_service_options:\n"
                         "    - worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver\n"
                         "pipeline:\n  type: chain\n  transforms:\n"
                         "    - {type: Create, config: {elements: [{a: 1}]}}\n"
                         "    - {type: LogForTesting}\n";
  Outcome ok = RunDfworker({"run", file.string(), "--dry_run", "--format=json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["plan"]["sdk_processes"], 4);
  std::ofstream(file) << "options:\n  machine_type: [g2\n";
  Outcome bad = RunDfworker({"run", file.string(), "--dry_run"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find(file.string() + ":"), std::string::npos) << bad.out;
  fs::remove(file);
}

TEST(Cli, ExitCodesForTheCommandLineItself) {
  EXPECT_EQ(RunDfworker({"--version"}).exit_code, 0);
  EXPECT_NE(RunDfworker({"--version"}).out.find("dfworker "), std::string::npos);
  Outcome help = RunDfworker({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--dry_run"), std::string::npos) << help.out;
  EXPECT_EQ(RunDfworker({}).exit_code, 2);                                          // no subcommand
  EXPECT_EQ(RunDfworker({"run"}).exit_code, 2);                                     // no pipeline file
  EXPECT_EQ(RunDfworker({"run", "no/such/file.yaml", "--dry_run"}).exit_code, 2);   // unreadable file
  EXPECT_EQ(RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--format=xml"}).exit_code, 2);
  EXPECT_EQ(RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--log_level=loud"}).exit_code, 2);
  EXPECT_EQ(RunDfworker({"run", "pipelines/default.yaml", "other.yaml", "--dry_run"}).exit_code, 2);
}

TEST(Cli, UnknownFlagWarnsButMisspelledFlagFails) {
  Outcome unknown = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--some_future_flag", "x"});
  EXPECT_EQ(unknown.exit_code, 0) << unknown.out;
  EXPECT_NE(unknown.out.find("warning[unknown-flag]"), std::string::npos) << unknown.out;
  Outcome misspelled = RunDfworker({"run", "pipelines/default.yaml", "--dry_run", "--dataflow_servce_options=enable_prime"});
  EXPECT_EQ(misspelled.exit_code, 2);
  EXPECT_NE(misspelled.out.find("did you mean '--dataflow_service_options'"), std::string::npos) << misspelled.out;
}

TEST(Cli, MalformedCatalogExitsTwoNamingFileAndLine) {
  namespace fs = std::filesystem;
  const dfw::testing::TempDir tmp;
  const std::filesystem::path dir = tmp.path();
  std::ofstream(dir / "gpus.yaml") << "gpus:\n  - name: x\n";
  std::string pipeline = std::string(DFW_SOURCE_DIR) + "/pipelines/default.yaml";
  Outcome flag = RunDfworker({"run", pipeline, "--dry_run", "--catalog_dir", dir.string()});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.out.find("gpus.yaml:2:5"), std::string::npos) << flag.out;
  Outcome env = RunDfworker({"run", pipeline, "--dry_run"}, "/", "DFW_CATALOG_DIR=" + dfw::testing::ShellQuote(dir.string()));
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_NE(env.out.find("gpus.yaml:2:5"), std::string::npos) << env.out;
}

TEST(Cli, APipelineFileThatIsAFifoOrTooBigExitsTwoAtOnce) {
  namespace fs = std::filesystem;
  const dfw::testing::TempDir tmp;
  const std::filesystem::path dir = tmp.path();
  ASSERT_EQ(::mkfifo((dir / "fifo.yaml").c_str(), 0600), 0);
  Outcome fifo = RunDfworker({"run", (dir / "fifo.yaml").string(), "--dry_run"});  // must not block
  EXPECT_EQ(fifo.exit_code, 2);
  EXPECT_NE(fifo.out.find("is not a regular file"), std::string::npos) << fifo.out;
  std::ofstream(dir / "big.yaml") << "pipeline:\n  transforms: []\n# " << std::string(5 << 20, 'x') << "\n";
  Outcome big = RunDfworker({"run", (dir / "big.yaml").string(), "--dry_run"});
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.out.find("pipeline files are at most 4 MiB"), std::string::npos) << big.out;
}

}  // namespace
