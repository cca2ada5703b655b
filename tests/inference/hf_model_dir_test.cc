#include "dfw/inference/hf_model_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace dfw {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteFile;

// A hub cache as huggingface_hub writes it: refs/main names the snapshot.
std::string MakeCachedModel(const std::string& cache, const std::string& repo, const std::string& weights_file) {
  const std::string base = cache + "/" + repo;
  WriteFile(base + "/refs/main", "abc123\n");
  const std::string snap = base + "/snapshots/abc123";
  WriteFile(snap + "/config.json", "{}");
  WriteFile(snap + "/" + weights_file, "x");
  return snap;
}

TEST(HfModelDir, LocalDirectoryIsUsedAsIs) {
  TempDir dir;
  WriteFile(dir.path() + "/model.safetensors", "x");
  auto d = ResolveHfModelDir(dir.path(), {});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, dir.path());
}

TEST(HfModelDir, HubIdResolvesInEachCacheLocationInOrder) {
  TempDir root;
  const std::string hub = root.path() + "/hub-cache", home = root.path() + "/hf-home", user = root.path() + "/user";
  const std::string in_home = MakeCachedModel(home + "/hub", "models--org--tiny", "model.safetensors");
  const std::string in_user = MakeCachedModel(user + "/.cache/huggingface/hub", "models--org--tiny", "model.safetensors");
  // HF_HOME/hub before ~/.cache; HF_HUB_CACHE (empty here) before both.
  auto d = ResolveHfModelDir("org/tiny", {hub, home, user});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, in_home);
  auto u = ResolveHfModelDir("org/tiny", {"", "", user});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(*u, in_user);
  const std::string in_hub = MakeCachedModel(hub, "models--org--tiny", "model.safetensors");
  EXPECT_EQ(*ResolveHfModelDir("org/tiny", {hub, home, user}), in_hub);
}

TEST(HfModelDir, MissingModelNamesWhereItLooked) {
  TempDir root;
  auto d = ResolveHfModelDir("org/absent", {root.path() + "/c", "", root.path()});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr(root.path() + "/c/models--org--absent/refs/main"));
  EXPECT_THAT(d.status().message(), HasSubstr(root.path() + "/.cache/huggingface/hub/models--org--absent/refs/main"));
  EXPECT_THAT(d.status().message(), HasSubstr("downloads nothing"));
}

TEST(HfModelDir, PytorchBinOnlyExplainsHowToConvert) {
  TempDir root;
  MakeCachedModel(root.path(), "models--org--old", "pytorch_model.bin");
  auto d = ResolveHfModelDir("org/old", {root.path(), "", ""});
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("pytorch_model.bin and no model.safetensors"));
  EXPECT_THAT(d.status().message(), HasSubstr("save_pretrained"));
}

}  // namespace
}  // namespace dfw
