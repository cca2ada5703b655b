// Shared model copies: publishing the F32 copy (per dtype), host records, the round-robin choice
// with failover, and — with real processes — that 8 SDK processes attached to one copy map its
// weights once (/proc/<pid>/smaps: shared, not private; Pss over the processes ≈ one copy).
#include "dfw/inference/shared_copy.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "dfw/device/process_info.h"
#include "dfw/inference/device_memory.h"
#include "dfw/inference/mlp_handler.h"
#include "inference/mlp_test_util.h"

namespace dfw {
namespace shared_copy_test {

using testing_util::F32Bytes;
using testing_util::RawTensor;
using testing_util::SafetensorsBytes;
using testing_util::TempDir;
using testing_util::WriteFile;

// k/1024 for small k is exact in F16 and (for k multiple of 8) in BF16.
const std::vector<float> kValues = {0.0f, 1.0f, -0.5f, 0.25f, -2.0f, 0.125f, 3.0f, -0.0078125f};

std::string Encode16(const std::vector<float>& v, bool bf16) {
  std::string out;
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t h;
    if (bf16) {
      h = static_cast<uint16_t>(bits >> 16);
    } else if (f == 0.0f) {
      h = static_cast<uint16_t>((bits >> 16) & 0x8000);
    } else {
      const uint32_t exp = ((bits >> 23) & 0xff) - 127 + 15;
      h = static_cast<uint16_t>(((bits >> 16) & 0x8000) | (exp << 10) | ((bits & 0x7fffff) >> 13));
    }
    out.append(reinterpret_cast<const char*>(&h), 2);
  }
  return out;
}

struct DTypeCase {
  const char* dtype;
  std::string bytes;
};

TEST(PublishF32Copy, WidensEveryFloatDTypeToF32AndAlignsTheData) {
  const std::vector<DTypeCase> cases = {
      {"F32", F32Bytes(kValues)}, {"F16", Encode16(kValues, false)}, {"BF16", Encode16(kValues, true)}};
  for (const DTypeCase& c : cases) {
    SCOPED_TRACE(c.dtype);
    TempDir dir;
    const std::string i64(8 * 2, '\x01');  // a non-float tensor is copied as it is
    WriteFile((dir / "m.safetensors"),
              SafetensorsBytes({{"w", c.dtype, {2, 4}, c.bytes}, {"ids", "I64", {2}, i64}}));
    Result<uint64_t> bytes = PublishF32Copy((dir / "m.safetensors"), (dir / "out/copy.safetensors"));
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    EXPECT_EQ(*bytes, 8u * 4 + 16);
    // The planner's figure, from the original's header alone, is the size the host publishes.
    Result<uint64_t> planned = ModelBytesFromHeader((dir / "m.safetensors"));
    ASSERT_TRUE(planned.ok()) << planned.status().ToString();
    EXPECT_EQ(*planned, *bytes);
    auto file = SafetensorsFile::Open((dir / "out/copy.safetensors"));
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_EQ((8 + (*file)->header().header_bytes) % 4096, 0u) << "data section starts on a page";
    const TensorInfo* w = (*file)->header().Find("w");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->dtype, TensorDType::kF32);
    EXPECT_EQ(w->ShapeString(), "[2, 4]");
    std::vector<float> got(8);
    std::memcpy(got.data(), (*file)->Data(*w), 32);
    EXPECT_EQ(got, kValues);
    const TensorInfo* ids = (*file)->header().Find("ids");
    ASSERT_NE(ids, nullptr);
    EXPECT_EQ(ids->dtype, TensorDType::kI64);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>((*file)->Data(*ids)), 16), i64);
    EXPECT_NE((*file)->header().metadata.at("dfworker_shared_copy_of").find("m.safetensors"), std::string::npos);
  }
}

TEST(PublishF32Copy, BadInputNamesTheFile) {
  TempDir dir;
  WriteFile((dir / "junk.safetensors"), "not a model");
  Result<uint64_t> junk = PublishF32Copy((dir / "junk.safetensors"), (dir / "out.safetensors"));
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("junk.safetensors"), std::string::npos) << junk.status().message();
  EXPECT_FALSE(PublishF32Copy((dir / "absent.safetensors"), (dir / "out.safetensors")).ok());
  WriteFile((dir / "m.safetensors"), SafetensorsBytes({{"w", "F32", {8}, F32Bytes(kValues)}}));
  WriteFile((dir / "file"), "x");  // a file where the output directory should be
  Result<uint64_t> blocked = PublishF32Copy((dir / "m.safetensors"), (dir / "file/out.safetensors"));
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.status().message().find("file/out.safetensors"), std::string::npos) << blocked.status().message();
}

TEST(CopyHostRecord, RoundTripsAndRejectsMalformedRecords) {
  TempDir dir;
  CopyHostRecord me{::getpid(), device::ProcessStartTime(::getpid()).value_or(0), "model-host-2"};
  ASSERT_TRUE(WriteCopyHostRecord((dir / "h"), me).ok());
  Result<CopyHostRecord> back = ReadCopyHostRecord((dir / "h"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->pid, me.pid);
  EXPECT_EQ(back->start_time, me.start_time);
  EXPECT_EQ(back->name, "model-host-2");
  EXPECT_TRUE(CopyHostAlive(*back));
  EXPECT_FALSE(CopyHostAlive({me.pid, me.start_time + 1, "reused-pid"}));
  EXPECT_TRUE(back->cuda_ipc_handle.empty());
  EXPECT_EQ(back->cuda_ipc_bytes, 0u);
  // A host holding the copy in GPU memory adds its CUDA IPC handle (64 opaque bytes, any value).
  CopyHostRecord gpu = me;
  for (int b = 0; b < 64; ++b) gpu.cuda_ipc_handle.push_back(static_cast<char>(b * 37 % 256));
  gpu.cuda_ipc_bytes = 123456789012;
  ASSERT_TRUE(WriteCopyHostRecord((dir / "g"), gpu).ok());
  Result<CopyHostRecord> gpu_back = ReadCopyHostRecord((dir / "g"));
  ASSERT_TRUE(gpu_back.ok()) << gpu_back.status().ToString();
  EXPECT_EQ(gpu_back->name, "model-host-2");
  EXPECT_EQ(gpu_back->cuda_ipc_handle, gpu.cuda_ipc_handle);
  EXPECT_EQ(gpu_back->cuda_ipc_bytes, 123456789012u);
  WriteFile((dir / "bad"), "12 abc\n");
  EXPECT_EQ(ReadCopyHostRecord((dir / "bad")).status().code(), StatusCode::kDataLoss);
  for (const char* second : {"cuda-ipc 0g 10", "cuda-ipc abc 10", "cuda-ipc ab", "cuda-ipc ab 0", "cuda-ipc ab -5",
                             "ipc ab 10", "cuda-ipc  10"}) {
    WriteFile((dir / "bad2"), "12 34 model-host-0\n" + std::string(second) + "\n");
    Result<CopyHostRecord> bad = ReadCopyHostRecord((dir / "bad2"));
    EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss) << second;
    EXPECT_NE(bad.status().message().find("cuda-ipc HEX_HANDLE BYTES"), std::string::npos) << bad.status().message();
  }
  EXPECT_EQ(ReadCopyHostRecord((dir / "absent")).status().code(), StatusCode::kNotFound);
}

// A finished (reaped) child: a record naming it is a dead host.
CopyHostRecord DeadHost() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  const uint64_t start = device::ProcessStartTime(pid).value_or(1);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return {pid, start, "dead-host"};
}

class AttachTest : public ::testing::Test {
 protected:
  void Publish(int copy, const CopyHostRecord& host) {
    auto files = SharedCopyFilesFor((dir_ / "models"), weights_, copy);
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    ASSERT_TRUE(PublishF32Copy(weights_, files->weights).ok());
    ASSERT_TRUE(WriteCopyHostRecord(files->host, host).ok());
  }
  TempDir dir_;
  std::string weights_ = (dir_ / "m.safetensors");
  CopyHostRecord me_{::getpid(), device::ProcessStartTime(::getpid()).value_or(0), "model-host-0"};
};

TEST_F(AttachTest, RoundRobinBySdkIndex) {
  WriteFile(weights_, SafetensorsBytes({{"w", "F32", {8}, F32Bytes(kValues)}}));
  for (int c = 0; c < 3; ++c) Publish(c, me_);
  // sdk index -> copy, for 3 copies.
  const std::map<int, int> expected = {{0, 0}, {1, 1}, {2, 2}, {3, 0}, {4, 1}, {7, 1}};
  for (const auto& [index, copy] : expected) {
    Result<AttachedCopy> a = AttachSharedCopy((dir_ / "models"), weights_, 3, index);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->copy, copy) << "sdk index " << index;
    EXPECT_TRUE(a->first_choice);
  }
}

TEST_F(AttachTest, SkipsCopiesWhoseHostIsGoneAndNamesThemWhenNoneIsLeft) {
  WriteFile(weights_, SafetensorsBytes({{"w", "F32", {8}, F32Bytes(kValues)}}));
  const CopyHostRecord dead = DeadHost();
  Publish(0, dead);
  Publish(1, me_);
  Result<AttachedCopy> a = AttachSharedCopy((dir_ / "models"), weights_, 2, 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->copy, 1);
  EXPECT_FALSE(a->first_choice);

  Publish(1, dead);
  Result<AttachedCopy> none = AttachSharedCopy((dir_ / "models"), weights_, 3, 0);
  ASSERT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(none.status().message().find("'dead-host' (pid " + std::to_string(dead.pid) + ") is not running"),
            std::string::npos)
      << none.status().message();
  EXPECT_NE(none.status().message().find("copy 2: model host record"), std::string::npos) << none.status().message();
  EXPECT_EQ(AttachSharedCopy((dir_ / "models"), weights_, 0, 0).status().code(), StatusCode::kInvalidArgument);
}

// smaps figures (kB) of the mapping of `path` in process `pid`.
std::map<std::string, long> SmapsOf(pid_t pid, const std::string& path) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
  std::map<std::string, long> out;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    const bool header = line.find('-') < line.find(' ') && line.find(':') > line.find(' ');
    if (header) {
      inside = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
      continue;
    }
    if (!inside) continue;
    std::istringstream words(line);
    std::string key;
    long kb = 0;
    if (words >> key >> kb) out[key.substr(0, key.size() - 1)] += kb;
  }
  return out;
}

// 64 -> 512 -> 512 -> 4 in F16: ~1.3 MB of F32 weights once published (what the host does).
void WriteBigModel(const std::string& dir) {
  std::vector<RawTensor> t;
  const int dims[] = {64, 512, 512, 4};
  std::string cfg = R"({"model_type":"mlp","input_dim":64,"layers":[)";
  for (int i = 0; i < 3; ++i) {
    const std::string name = "l" + std::to_string(i);
    std::vector<float> w(static_cast<std::size_t>(dims[i + 1]) * dims[i]), b(dims[i + 1]);
    for (std::size_t k = 0; k < w.size(); ++k) w[k] = kValues[k % kValues.size()];
    t.push_back({name + ".weight", "F16", {dims[i + 1], dims[i]}, Encode16(w, false)});
    t.push_back({name + ".bias", "F16", {dims[i + 1]}, Encode16(b, false)});
    cfg += (i ? "," : "") + std::string(R"({"name":")") + name + R"(","out_features":)" + std::to_string(dims[i + 1]) +
           R"(,"activation":"relu"})";
  }
  WriteFile(dir + "/config.json", cfg + R"(],"output":"softmax"})");
  WriteFile(dir + "/model.safetensors", SafetensorsBytes(t));
}

// Child: attach as SDK process `index`, run one batch (touches every weight), report, wait to be killed.
[[noreturn]] void SdkChild(const std::string& model_dir, const std::string& models_dir, int index, int ready_fd) {
  char result = 'x';
  ModelProcessContext ctx;
  ctx.models_dir = models_dir;
  ctx.client_name = "sdk-" + std::to_string(index);
  ctx.sdk_index = index;
  ModelHandlerOptions o;
  o.model_path = model_dir;
  o.input_field = "x";
  o.model_copies = 1;
  auto handler = MakeModelHandler(kMlpHandlerType, o);
  auto model = handler.ok() ? (*handler)->LoadModel(ctx) : Result<std::unique_ptr<Model>>(handler.status());
  if (model.ok()) {
    List xs(64, Value::Float(0.5));
    Value example = Value::FromList(std::move(xs));
    const Value* batch[] = {&example};
    std::vector<Value> predictions;
    result = (*model)->RunInference(batch, predictions).ok() && predictions.size() == 1 ? 'r' : 'i';
  } else {
    std::fprintf(stderr, "child %d: %s\n", index, model.status().ToString().c_str());
  }
  if (::write(ready_fd, &result, 1) != 1) ::_exit(2);
  for (;;) ::pause();
}

TEST(SharedCopy, EightSdkProcessesMapTheWeightsOnce) {
  TempDir dir;
  WriteBigModel(dir.path());
  const std::string models_dir = (dir / "models");
  auto files = SharedCopyFilesFor(models_dir, (dir / "model.safetensors"), 0);
  ASSERT_TRUE(files.ok());
  Result<uint64_t> bytes = PublishF32Copy((dir / "model.safetensors"), files->weights);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_GT(*bytes, 1000000u);
  // This test process plays the model host.
  ASSERT_TRUE(WriteCopyHostRecord(files->host, {::getpid(), device::ProcessStartTime(::getpid()).value_or(0), "model-host-0"}).ok());

  constexpr int kProcesses = 8;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(ready[0]);
      SdkChild(dir.path(), models_dir, i, ready[1]);
    }
    pids.push_back(pid);
  }
  ::close(ready[1]);
  // Each child answers once; a child that died silently must not hang the test (bounded wait).
  std::string answers;
  char c;
  pollfd p{ready[0], POLLIN, 0};
  while (answers.size() < kProcesses && ::poll(&p, 1, 120000) == 1 && ::read(ready[0], &c, 1) == 1) answers += c;
  ::close(ready[0]);

  long pss_sum = 0, rss_sum = 0;
  for (pid_t pid : pids) {
    std::map<std::string, long> s = SmapsOf(pid, files->weights);
    std::string figures;
    for (const auto& [k, v] : s) figures += " " + k + "=" + std::to_string(v);
    SCOPED_TRACE("pid " + std::to_string(pid) + ":" + figures);
    EXPECT_GE(s["Rss"] * 1024, static_cast<long>(*bytes)) << "every weight page is resident in each process";
    EXPECT_EQ(s["Private_Clean"] + s["Private_Dirty"], 0) << "no private copy of any weight page";
    // Shared_Dirty when the copy was just written and not yet written back: still the page cache's pages.
    EXPECT_GE(s["Shared_Clean"] + s["Shared_Dirty"], s["Rss"] - 4) << "the pages are shared with the other processes";
    pss_sum += s["Pss"];
    rss_sum += s["Rss"];
  }
  for (pid_t pid : pids) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  EXPECT_EQ(answers, std::string(kProcesses, 'r')) << "each process attached and ran a batch";
  const long copy_kb = static_cast<long>((*bytes + 4096) / 1024);
  std::printf("8 SDK processes: sum of Pss %ld kB, sum of Rss %ld kB, for one %ld kB copy\n", pss_sum, rss_sum, copy_kb);
  // The processes together account for one copy (Pss splits each shared page between its users).
  EXPECT_LE(pss_sum, copy_kb + copy_kb / 10 + 8 * 4) << "sum of Pss " << pss_sum << " kB vs one copy " << copy_kb << " kB";
  EXPECT_GE(pss_sum, copy_kb - copy_kb / 10);
}

// A child that stands in for a model host until killed.
pid_t StartStandInHost() {
  pid_t pid = ::fork();
  if (pid == 0) {
    for (;;) ::pause();
  }
  return pid;
}

TEST(SharedCopy, BatchesMoveToALiveCopyWhenTheirHostDiesAndFailWhenNoneIsLeft) {
  TempDir dir;
  WriteBigModel(dir.path());
  const std::string models_dir = (dir / "models"), weights = (dir / "model.safetensors");
  std::vector<pid_t> hosts;
  for (int c = 0; c < 2; ++c) {
    hosts.push_back(StartStandInHost());
    auto files = SharedCopyFilesFor(models_dir, weights, c);
    ASSERT_TRUE(files.ok());
    ASSERT_TRUE(PublishF32Copy(weights, files->weights).ok());
    const uint64_t start = device::ProcessStartTime(hosts[c]).value_or(0);
    ASSERT_TRUE(WriteCopyHostRecord(files->host, {hosts[c], start, "model-host-" + std::to_string(c)}).ok());
  }
  const ModelProcessContext ctx{"", models_dir, "sdk-0", 0, std::nullopt};
  ModelHandlerOptions o;
  o.model_path = dir.path();
  o.input_field = "x";
  o.model_copies = 2;
  auto handler = MakeModelHandler(kMlpHandlerType, o);
  ASSERT_TRUE(handler.ok());
  auto model = (*handler)->LoadModel(ctx);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Value example = Value::FromList(List(64, Value::Float(0.5)));
  const Value* batch[] = {&example};
  auto run = [&](std::vector<Value>& out) { return (*model)->RunInference(batch, out); };

  std::vector<Value> on_copy0, on_copy1, none;
  ASSERT_TRUE(run(on_copy0).ok());
  ::kill(hosts[0], SIGKILL);
  ::waitpid(hosts[0], nullptr, 0);
  Status moved = run(on_copy1);
  ASSERT_TRUE(moved.ok()) << moved.ToString();
  EXPECT_EQ(on_copy1[0].ToJson(), on_copy0[0].ToJson()) << "the same weights from the other copy";
  ::kill(hosts[1], SIGKILL);
  ::waitpid(hosts[1], nullptr, 0);
  Status gone = run(none);
  ASSERT_EQ(gone.code(), StatusCode::kUnavailable) << gone.ToString();
  EXPECT_NE(gone.message().find("model host 'model-host-1' (pid " + std::to_string(hosts[1]) + ") of shared copy 1 is gone"),
            std::string::npos)
      << gone.message();
  EXPECT_NE(gone.message().find("no shared copy of model"), std::string::npos) << gone.message();
}

}  // namespace shared_copy_test
}  // namespace dfw
