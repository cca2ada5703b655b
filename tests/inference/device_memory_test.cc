// Model loads on the emulated device: what an SDK process charges to the job's GPU-memory ledger
// (its weights and workspace without sharing, only its workspace with a shared copy), and the
// out-of-memory failures past capacity and past the pinned limit (the batch fails, naming the
// process, the request and the free memory; it succeeds once memory is free).
#include "dfw/inference/device_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "dfw/device/process_info.h"
#include "dfw/inference/mlp_handler.h"
#include "dfw/inference/shared_copy.h"
#include "inference/mlp_test_util.h"

namespace dfw {
namespace {

using testing_util::F32Bytes;
using testing_util::SafetensorsBytes;
using testing_util::TempDir;
using testing_util::WriteFile;

constexpr uint64_t kMiB = 1024 * 1024;
// 16 -> 32 -> 4: (16+1)*32 + (32+1)*4 floats.
constexpr uint64_t kWeightBytes = ((16 + 1) * 32 + (32 + 1) * 4) * 4;
constexpr uint64_t kMaxWidth = 32;

class DeviceMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile((dir_ / "config.json"), R"({"model_type":"mlp","input_dim":16,"layers":[)"
                                        R"({"name":"a","out_features":32,"activation":"relu"},)"
                                        R"({"name":"b","out_features":4,"activation":"none"}],"output":"none"})");
    WriteFile((dir_ / "model.safetensors"),
              SafetensorsBytes({{"a.weight", "F32", {32, 16}, F32Bytes(std::vector<float>(512, 0.5f))},
                                {"a.bias", "F32", {32}, F32Bytes(std::vector<float>(32, 0.0f))},
                                {"b.weight", "F32", {4, 32}, F32Bytes(std::vector<float>(128, 0.25f))},
                                {"b.bias", "F32", {4}, F32Bytes(std::vector<float>(4, 1.0f))}}));
    ledger_path_ = device::LedgerPathForJob(dir_.path());
  }

  device::MemoryLedger MakeLedger(uint64_t capacity) {
    auto l = device::MemoryLedger::Create(ledger_path_, "nvidia-tesla-t4 (emulated)", capacity);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return std::move(l).value();
  }
  uint64_t Charged(device::MemoryLedger& l) {
    auto snap = l.Snapshot();
    EXPECT_TRUE(snap.ok());
    for (const auto& e : snap->entries) {
      if (e.pid == ::getpid()) return e.allocated_bytes;
    }
    return 0;
  }
  std::unique_ptr<Model> Load(std::optional<int64_t> copies = std::nullopt) {
    ModelHandlerOptions o;
    o.model_path = dir_.path();
    o.input_field = "x";
    o.model_copies = copies;
    auto h = MakeModelHandler(kMlpHandlerType, o);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    auto m = (*h)->LoadModel(context_);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }
  Status RunRows(Model& m, int rows) {
    std::vector<Value> examples(rows, Value::FromList(List(16, Value::Float(1.0))));
    std::vector<const Value*> batch;
    for (const Value& v : examples) batch.push_back(&v);
    std::vector<Value> predictions;
    return m.RunInference(batch, predictions);
  }
  void SetContext(std::optional<uint64_t> pinned = std::nullopt, std::string models_dir = "") {
    context_ = {ledger_path_, std::move(models_dir), "sdk-3", 3, pinned};
  }

  TempDir dir_;
  std::string ledger_path_;
  ModelProcessContext context_;  // what an SDK process's entry point would pass down
};

TEST_F(DeviceMemoryTest, PrivateModelChargesWeightsAtLoadAndWorkspaceAsItGrows) {
  device::MemoryLedger ledger = MakeLedger(16 * kMiB);
  SetContext();
  std::unique_ptr<Model> m = Load();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(static_cast<uint64_t>(m->byte_size()), kWeightBytes);
  EXPECT_EQ(Charged(ledger), kWeightBytes);
  ASSERT_TRUE(RunRows(*m, 10).ok());
  EXPECT_EQ(Charged(ledger), kWeightBytes + 2 * 10 * kMaxWidth * 4) << "two activation buffers of 10 rows";
  ASSERT_TRUE(RunRows(*m, 4).ok());
  EXPECT_EQ(Charged(ledger), kWeightBytes + 2 * 10 * kMaxWidth * 4) << "a smaller batch reuses the workspace";
  auto snap = ledger.Snapshot();
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->entries.size(), 1u);
  EXPECT_EQ(snap->entries[0].name, "sdk-3");
  m.reset();
  EXPECT_EQ(Charged(ledger), 0u) << "released with the model";
}

TEST_F(DeviceMemoryTest, ThePlannedWorkspaceIsWhatTheModelChargesForItsLargestBatch) {
  device::MemoryLedger ledger = MakeLedger(16 * kMiB);
  SetContext();
  ModelHandlerOptions o;
  o.model_path = dir_.path();
  o.input_field = "x";
  o.batching.max_batch_size = 10;
  auto h = MakeModelHandler(kMlpHandlerType, o);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  std::optional<WorkspaceEstimate> planned = (*h)->EstimateWorkspace();
  ASSERT_TRUE(planned.has_value());
  EXPECT_NE(planned->how.find("max_batch_size 10 rows x widest layer 32"), std::string::npos) << planned->how;
  auto m = (*h)->LoadModel(context_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(RunRows(**m, 10).ok());
  EXPECT_EQ(Charged(ledger) - kWeightBytes, planned->bytes) << "the estimate is the ledger's charge at the largest batch";
}

TEST_F(DeviceMemoryTest, NoLedgerInTheContextChargesNothing) {
  device::MemoryLedger ledger = MakeLedger(kMiB);
  context_ = {};
  std::unique_ptr<Model> m = Load();
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(RunRows(*m, 3).ok());
  EXPECT_EQ(Charged(ledger), 0u);
}

struct OomCase {
  const char* name;
  uint64_t capacity;
  std::optional<uint64_t> pinned;
  const char* expected;  // in the message
};

TEST_F(DeviceMemoryTest, BatchesFailWithTheLedgersOutOfMemoryMessageUntilTheWeightsFit) {
  const std::vector<OomCase> cases = {
      {"past capacity", kWeightBytes - 100, std::nullopt, "free of"},
      {"past the pinned limit", 16 * kMiB, kWeightBytes - 100, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"},
  };
  for (const OomCase& c : cases) {
    SCOPED_TRACE(c.name);
    device::MemoryLedger ledger = MakeLedger(c.capacity);
    SetContext(c.pinned);
    std::unique_ptr<Model> m = Load();
    ASSERT_NE(m, nullptr) << "the load itself succeeds; the charge is retried per batch";
    Status s = RunRows(*m, 2);
    ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
    const std::string& msg = s.message();
    EXPECT_NE(msg.find("out of GPU memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'sdk-3' (pid " + std::to_string(::getpid()) + ")"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model weights of"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    EXPECT_EQ(Charged(ledger), 0u);
  }
  // Once the device has room (another process's memory freed), the next batch charges and runs.
  device::MemoryLedger ledger = MakeLedger(kWeightBytes - 100);
  SetContext();
  std::unique_ptr<Model> m = Load();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(RunRows(*m, 1).code(), StatusCode::kResourceExhausted);
  ledger = MakeLedger(16 * kMiB);  // same file: the model's open ledger sees the new capacity
  EXPECT_TRUE(RunRows(*m, 1).ok());
  EXPECT_EQ(Charged(ledger), kWeightBytes + 2 * kMaxWidth * 4);
}

TEST_F(DeviceMemoryTest, SharedCopyChargesOnlyTheWorkspaceInTheSdkProcess) {
  device::MemoryLedger ledger = MakeLedger(16 * kMiB);
  const std::string models_dir = (dir_ / "models");
  auto files = SharedCopyFilesFor(models_dir, (dir_ / "model.safetensors"), 0);
  ASSERT_TRUE(files.ok());
  ASSERT_TRUE(PublishF32Copy((dir_ / "model.safetensors"), files->weights).ok());
  ASSERT_TRUE(WriteCopyHostRecord(files->host, {::getpid(), device::ProcessStartTime(::getpid()).value_or(0), "model-host-0"}).ok());
  SetContext(std::nullopt, models_dir);
  std::unique_ptr<Model> m = Load(/*copies=*/1);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Charged(ledger), 0u) << "the model host charges the copy, not the SDK process";
  ASSERT_TRUE(RunRows(*m, 5).ok());
  EXPECT_EQ(Charged(ledger), 2 * 5 * kMaxWidth * 4);
}

TEST_F(DeviceMemoryTest, SharedModelWithoutAPublishedCopyFailsToLoadNamingTheCopy) {
  context_ = {"", (dir_ / "models"), "sdk-0", 0, std::nullopt};
  ModelHandlerOptions o;
  o.model_path = dir_.path();
  o.input_field = "x";
  o.large_model = true;
  auto h = MakeModelHandler(kMlpHandlerType, o);
  ASSERT_TRUE(h.ok());
  auto m = (*h)->LoadModel(context_);
  ASSERT_EQ(m.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(m.status().message().find("no shared copy of model"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("copy 0: model host record"), std::string::npos) << m.status().message();
}

TEST(ModelProcessContext, ReadsLedgerModelsDirAndPinnedLimitFromTheEnvironment) {
  ::setenv("DFW_GPU_MEMORY_LEDGER", "/j/device/gpu_memory.ledger", 1);
  ::setenv("DFW_SHARED_MODELS_DIR", "/j/models", 1);
  ::setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=2G", 1);
  Result<ModelProcessContext> c = ModelProcessContextFromEnv("sdk-1", 1);
  ::setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=lots", 1);
  Result<ModelProcessContext> bad = ModelProcessContextFromEnv("sdk-1", 1);
  for (const char* k : {"DFW_GPU_MEMORY_LEDGER", "DFW_SHARED_MODELS_DIR", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"}) ::unsetenv(k);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ledger_path, "/j/device/gpu_memory.ledger");
  EXPECT_EQ(c->models_dir, "/j/models");
  EXPECT_EQ(c->client_name, "sdk-1");
  EXPECT_EQ(c->pinned_limit_bytes, std::optional<uint64_t>(2ull << 30));
  ASSERT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), std::string::npos);
}

TEST(ModelProcessContext, TheDaemonsPinnedLimitAppliesOnlyWhenLower) {
  ModelProcessContext c;
  ApplyDaemonPinnedLimit(c, std::nullopt);
  EXPECT_FALSE(c.pinned_limit_bytes.has_value());
  ApplyDaemonPinnedLimit(c, uint64_t{8} << 30);  // no limit of its own: the daemon's
  EXPECT_EQ(c.pinned_limit_bytes, uint64_t{8} << 30);
  ApplyDaemonPinnedLimit(c, uint64_t{16} << 30);  // higher: the process keeps its own
  EXPECT_EQ(c.pinned_limit_bytes, uint64_t{8} << 30);
  ApplyDaemonPinnedLimit(c, uint64_t{2} << 30);
  EXPECT_EQ(c.pinned_limit_bytes, uint64_t{2} << 30);
}

}  // namespace
}  // namespace dfw
