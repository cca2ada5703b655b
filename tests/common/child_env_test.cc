// The one environment rule for child processes: overrides replace inherited keys, defaults fill
// only missing ones.
#include "dfw/common/child_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace dfw {
namespace {

int Count(const std::vector<std::string>& env, const std::string& key) {
  return static_cast<int>(std::count_if(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(key + "=", 0) == 0; }));
}

std::string ValueOf(const std::vector<std::string>& env, const std::string& key) {
  for (const std::string& e : env) {
    if (e.rfind(key + "=", 0) == 0) return e.substr(key.size() + 1);
  }
  return "<absent>";
}

TEST(ChildEnvironment, AnOverrideReplacesWhatTheUserExported) {
  ::setenv("DFW_CHILD_ENV_PIPE", "/user/pipe", 1);
  auto env = ChildEnvironment({"DFW_CHILD_ENV_PIPE=/job/mps/pipe"});
  EXPECT_EQ(Count(env, "DFW_CHILD_ENV_PIPE"), 1);
  EXPECT_EQ(ValueOf(env, "DFW_CHILD_ENV_PIPE"), "/job/mps/pipe");
  ::unsetenv("DFW_CHILD_ENV_PIPE");
}

TEST(ChildEnvironment, ADefaultLeavesAnExportedValueAlone) {
  ::setenv("DFW_CHILD_ENV_THREADS", "4", 1);
  auto env = ChildEnvironment({}, {"DFW_CHILD_ENV_THREADS=1", "DFW_CHILD_ENV_NEW=x"});
  EXPECT_EQ(ValueOf(env, "DFW_CHILD_ENV_THREADS"), "4");
  EXPECT_EQ(Count(env, "DFW_CHILD_ENV_THREADS"), 1);
  EXPECT_EQ(ValueOf(env, "DFW_CHILD_ENV_NEW"), "x");
  ::unsetenv("DFW_CHILD_ENV_THREADS");
}

TEST(ChildEnvironment, TheLastOverrideOfAKeyWinsAndInheritedKeysStay) {
  ::setenv("DFW_CHILD_ENV_KEEP", "kept", 1);
  auto env = ChildEnvironment({"DFW_CHILD_ENV_K=1", "DFW_CHILD_ENV_K=2"}, {"DFW_CHILD_ENV_K=3"});
  EXPECT_EQ(Count(env, "DFW_CHILD_ENV_K"), 1);
  EXPECT_EQ(ValueOf(env, "DFW_CHILD_ENV_K"), "2");
  EXPECT_EQ(ValueOf(env, "DFW_CHILD_ENV_KEEP"), "kept");
  ::unsetenv("DFW_CHILD_ENV_KEEP");
}

}  // namespace
}  // namespace dfw
