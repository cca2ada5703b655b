// `dfworker run` with shared model copies and the emulated device's ledger, end to end with real
// processes: model_copies: 2 under emulated MPS (model hosts and SDK processes registered with the
// daemon, i.e. saw the MPS environment; SDK processes attached round robin; the hosts' ledger
// charge equals the plan's copies × bytes; nothing left published afterwards), and the run-time out-of-memory cases:
// a pinned limit below the model fails each bundle (retried, then the job fails, exit 1) without
// sharing, and refuses the model host's copy (exit 1 before any SDK process) with sharing.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "cli/cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using dfw::testing::RunDfworker;

const std::string kT4Mps =
    "--dataflow_service_options=worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver;use_nvidia_mps";

class RunSharedCopies : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
  }

  // The default model over the good rows of its sample (clean.jsonl, so that only the device can
  // fail a bundle); `extra` goes into model_handler.config; errors dead-lettered when `dead_letter`.
  void WritePipeline(const std::string& extra, bool dead_letter, int repeat = 1) {
    const std::string model = std::string(DFW_SOURCE_DIR) + "/pipelines/models/breast_cancer_mlp";
    std::ifstream sample(model + "/sample.jsonl");
    std::ofstream clean(dir_ / "clean.jsonl");
    std::string row;
    while (std::getline(sample, row)) {
      auto j = nlohmann::json::parse(row, nullptr, /*allow_exceptions=*/false);
      bool good = j.is_object() && j.contains("features") && j["features"].is_array() && j["features"].size() == 30;
      for (const auto& x : good ? j["features"] : nlohmann::json::array()) good = good && x.is_number();
      if (good) {
        for (int r = 0; r < repeat; ++r) clean << row << "\n";
        good_rows_ += repeat;
      }
    }
    std::ofstream(dir_ / "p.yaml") << "pipeline:\n"
                                      "  type: chain\n"
                                      "  source:\n"
                                      "    type: ReadFromJson\n"
                                      "    config: {path: clean.jsonl}\n"
                                      "  transforms:\n"
                                      "    - type: RunInference\n"
                                      "      name: Classify\n"
                                      "      config:\n"
                                      "        model_handler:\n"
                                      "          type: MlpModelHandlerSafetensors\n"
                                      "          config: {model_path: " << model
                                   << ", input_field: features, max_batch_size: 32" << extra << "}\n"
                                   << (dead_letter ? "        error_handling: {output: failed}\n" : "")
                                   << "  sink:\n"
                                      "    type: WriteToJson\n"
                                      "    config: {path: out/pred, file_name_suffix: .jsonl}\n";
  }
  std::string Read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  dfw::testing::TempDir tmp_;
  fs::path dir_;
  int good_rows_ = 0;

  // Lines in every shard of out/pred (a job-sized plan may cut the input into several bundles).
  int PredictionRows() const {
    int rows = 0;
    for (const auto& e : fs::directory_iterator(dir_ / "out")) {
      if (e.path().filename().string().rfind("pred-", 0) != 0) continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);) ++rows;
    }
    return rows;
  }
};

TEST_F(RunSharedCopies, TwoCopiesServeFourSdkProcessesUnderEmulatedMps) {
  WritePipeline(", model_copies: 2", false);
  auto o = RunDfworker({"run", "p.yaml", "--job_dir", "job", "--machine_type=n1-standard-4", kT4Mps,
                        "--accelerator_backend=emulated"},
                       dir_.string());
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("model hosts: 2 shared copies published under"), std::string::npos) << o.out;
  // Measured (ledger) = plan: 2 copies x the model's bytes.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"(2 model host\(s\) hold .* \((\d+) bytes\) of shared copies; plan: .* \((\d+) bytes\))")))
      << o.out;
  EXPECT_EQ(m[1].str(), m[2].str());
  EXPECT_NE(m[1].str(), "0");

  // Both hosts registered with the emulated daemon before any SDK process started. Every SDK
  // process that loaded the model (the launcher may stop a slow starter once the job is done)
  // registered too — it saw the MPS environment — and attached to copy index mod 2.
  const std::string log = Read(dir_ / "job/mps/log/control.log");
  EXPECT_NE(log.find("(model-host-0)"), std::string::npos) << log;
  EXPECT_NE(log.find("(model-host-1)"), std::string::npos) << log;
  int attached = 0;
  for (int i = 0; i < 4; ++i) {
    const std::string sdk_log = Read(dir_ / ("job/logs/sdk-" + std::to_string(i) + ".log"));
    if (sdk_log.find("shared copy ") == std::string::npos) continue;
    ++attached;
    EXPECT_NE(sdk_log.find("shared copy " + std::to_string(i % 2) + " of 2"), std::string::npos)
        << "sdk-" << i << ":\n" << sdk_log;
    EXPECT_NE(log.find("(sdk-" + std::to_string(i) + ")"), std::string::npos) << "sdk-" << i << " not registered:\n" << log;
  }
  EXPECT_GE(attached, 1);
  // Every good row was predicted; the hosts are gone and took their copies with them.
  int rows = PredictionRows();
  EXPECT_EQ(rows, good_rows_);
  EXPECT_EQ(good_rows_, 143);
  EXPECT_TRUE(fs::is_empty(dir_ / "job/models"));
}

TEST_F(RunSharedCopies, PinnedLimitBelowThePrivateModelFailsEveryBundleThenTheJob) {
  WritePipeline("", false);
  auto o = RunDfworker({"run", "p.yaml", "--job_dir", "job", "--machine_type=n1-standard-2", kT4Mps,
                        "--accelerator_backend=emulated"},
                       dir_.string(), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1K");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("run stopped: "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("attempts"), std::string::npos) << "the bundle was retried:\n" << o.out;
  EXPECT_NE(o.out.find("out of GPU memory: process 'sdk-"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("past its pinned limit CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=1.0 KiB"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("requested"), std::string::npos) << o.out;
}

TEST_F(RunSharedCopies, PinnedLimitBelowASharedCopyStopsTheRunBeforeAnySdkProcess) {
  WritePipeline(", large_model: true", false);
  auto o = RunDfworker({"run", "p.yaml", "--job_dir", "job", "--machine_type=n1-standard-2", kT4Mps,
                        "--accelerator_backend=emulated"},
                       dir_.string(), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1K");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("model host 'model-host-0' did not start: "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("out of GPU memory: process 'model-host-0'"), std::string::npos) << o.out;
  EXPECT_FALSE(fs::exists(dir_ / "job/logs/sdk-0.log")) << "no SDK process started";
}

}  // namespace

namespace {

// A model host killed while the job runs: SDK processes move to the live copy or wait for the
// restart, the run still predicts every row and exits 0, and the death is reported (with the
// restart, when the watchdog got to it before the job ended: the job is short, so that part is
// reported rather than asserted — ModelHostsTest.ADeadHostIsRestartedUpToTheLimit asserts it).
TEST_F(RunSharedCopies, AHostKilledMidRunLosesNoRow) {
  WritePipeline(", model_copies: 2", false, /*repeat=*/300);
  dfw::testing::CliOutcome o;
  std::thread run([&] {
    o = RunDfworker({"run", "p.yaml", "--job_dir", "job", "--machine_type=n1-standard-4", kT4Mps,
                     "--accelerator_backend=emulated"},
                    dir_.string());
  });
  // Hosts start one after the other, each once the previous one reported ready: when copy 1's
  // record exists, host 0 is past its start-up (killing it earlier fails the start, by design).
  pid_t victim = 0;
  bool second_up = false;
  for (int i = 0; i < 20000 && !(victim > 0 && second_up); ++i) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ / "job/models", ec)) {
      const std::string name = e.path().filename().string();
      auto ends_with = [&](const std::string& tail) {
        return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
      };
      if (ends_with("-copy0.host")) std::ifstream(e.path()) >> victim;
      if (ends_with("-copy1.host")) second_up = true;
    }
    if (!(victim > 0 && second_up)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(victim > 0 && second_up) << "the model hosts never published their records";
  ::kill(victim, SIGKILL);
  run.join();
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const std::string death = "model host 'model-host-0' (pid " + std::to_string(victim) + ") killed by signal 9 (SIGKILL) during the run";
  EXPECT_NE(o.out.find(death), std::string::npos) << o.out;
  std::printf("restarted during the run: %s\n", o.out.find("model host 'model-host-0' restarted") != std::string::npos ? "yes" : "no");
  int rows = PredictionRows();
  EXPECT_EQ(rows, good_rows_);
  EXPECT_EQ(good_rows_, 143 * 300);
}

}  // namespace
