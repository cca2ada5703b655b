#include "dfw/device/mps_env.h"

#include "device/subprocess.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace dfw::device {
namespace {

using dfw::testing::kGiB;
using dfw::testing::kMiB;

struct SizeCase {
  const char* text;
  std::optional<uint64_t> bytes;  // nullopt = must be rejected
};

TEST(ParseMpsSize, AcceptsMpsUnitsAndRejectsEverythingElse) {
  const SizeCase cases[] = {
      {"2G", 2 * kGiB},   {"2GB", 2 * kGiB},  {"900M", 900 * kMiB}, {"512MB", 512 * kMiB},
      {"4K", 4096},       {"1048576", kMiB},  {" 1G ", kGiB},       {"", std::nullopt},
      {"G", std::nullopt}, {"2T", std::nullopt}, {"1.5G", std::nullopt}, {"-1G", std::nullopt},
      {"2g", std::nullopt}, {"99999999999999999999G", std::nullopt},
  };
  for (const SizeCase& c : cases) {
    Result<uint64_t> r = ParseMpsSize(c.text);
    if (c.bytes) {
      ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().ToString();
      EXPECT_EQ(*r, *c.bytes) << c.text;
    } else {
      EXPECT_FALSE(r.ok()) << c.text;
    }
  }
}

TEST(ParsePinnedMemLimit, ParsesOrdinalsAndUuids) {
  Result<PinnedMemLimits> r = ParsePinnedMemLimit("0=1G,1=512MB,GPU-1234-abcd=900M");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at("0"), kGiB);
  EXPECT_EQ(r->at("1"), 512 * kMiB);
  EXPECT_EQ(r->at("GPU-1234-abcd"), 900 * kMiB);
}

TEST(ParsePinnedMemLimit, RejectsMalformedItemsNamingThem) {
  const char* bad[] = {"", "2G", "=2G", "0=", "0=2X", "zero=2G", "0=1G,0=2G"};
  for (const char* text : bad) {
    Result<PinnedMemLimits> r = ParsePinnedMemLimit(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(r.status().message().find("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), std::string::npos) << text;
  }
}

TEST(FormatPinnedMemLimit, RoundTripsThroughTheParser) {
  PinnedMemLimits limits = {{"0", 2 * kGiB}, {"1", 900 * kMiB}, {"2", 1000}};
  std::string text = FormatPinnedMemLimit(limits);
  EXPECT_EQ(text, "0=2G,1=900M,2=1000");
  Result<PinnedMemLimits> back = ParsePinnedMemLimit(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, limits);
}

TEST(ParseThreadPercentage, AcceptsOnlyZeroToHundred) {
  EXPECT_DOUBLE_EQ(*ParseThreadPercentage("50"), 50.0);
  EXPECT_DOUBLE_EQ(*ParseThreadPercentage("12.5"), 12.5);
  EXPECT_DOUBLE_EQ(*ParseThreadPercentage("100"), 100.0);
  for (const char* bad : {"0", "-5", "101", "abc", ""}) EXPECT_FALSE(ParseThreadPercentage(bad).ok()) << bad;
}

TEST(MpsClientEnv, CarriesDirectoriesAlwaysAndLimitsWhenSet) {
  MpsDirs dirs = MpsDirsForJob("/jobs/j1/");
  EXPECT_EQ(dirs.pipe_dir, "/jobs/j1/mps/pipe");
  EXPECT_EQ(dirs.log_dir, "/jobs/j1/mps/log");

  auto plain = MpsClientEnv(dirs, {});
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0], (std::pair<std::string, std::string>{"CUDA_MPS_PIPE_DIRECTORY", "/jobs/j1/mps/pipe"}));
  EXPECT_EQ(plain[1], (std::pair<std::string, std::string>{"CUDA_MPS_LOG_DIRECTORY", "/jobs/j1/mps/log"}));

  auto limited = MpsClientEnv(dirs, MpsClientLimits{25.0, 2 * kGiB});
  ASSERT_EQ(limited.size(), 4u);
  EXPECT_EQ(limited[2], (std::pair<std::string, std::string>{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25"}));
  EXPECT_EQ(limited[3], (std::pair<std::string, std::string>{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=2G"}));
}

TEST(MpsClientLimitsFromEnv, ReadsWhatMpsClientEnvWrote) {
  for (const auto& [k, v] : MpsClientEnv(MpsDirsForJob("/j"), MpsClientLimits{12.5, 900 * kMiB})) {
    ::setenv(k.c_str(), v.c_str(), 1);
  }
  Result<MpsClientLimits> r = MpsClientLimitsFromEnv();
  ::setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "150", 1);
  Result<MpsClientLimits> bad = MpsClientLimitsFromEnv();
  for (const char* k : {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"}) {
    ::unsetenv(k);
  }
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->active_thread_percentage.value(), 12.5);
  EXPECT_EQ(r->pinned_mem_limit_bytes.value(), 900 * kMiB);
  EXPECT_FALSE(bad.ok());
}

TEST(MpsClientEnv, ReachesAnExecdChildProcess) {
  // What the launcher does for every SDK process: exec with the controller's client env.
  auto env = MpsClientEnv(MpsDirsForJob("/jobs/j2"), MpsClientLimits{50.0, 3 * kGiB});
  std::unique_ptr<ProcessLauncher> launcher = MakePosixProcessLauncher();
  Result<CommandResult> r = RunCommand(*launcher, {"env"}, env, "", 5000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0);
  for (const auto& [k, v] : env) EXPECT_NE(r->output.find(k + "=" + v + "\n"), std::string::npos) << k;
}

}  // namespace
}  // namespace dfw::device
