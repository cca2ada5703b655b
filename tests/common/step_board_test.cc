// StepBoard: the steps a process is in, readable from its file by another process, also after the
// writer was killed.
#include "dfw/common/step_board.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace dfw {
namespace {

using ::testing::ElementsAre;

TEST(StepBoard, AKilledProcessLeavesTheStepsItWasIn) {
  testing::TempDir dir("dfw-stepboard");
  const std::string path = dir.path() + "/sdk-0.steps";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!StepBoard::Open(path).ok()) ::_exit(3);
    { StepBoard::Scope done("Finished"); }  // left: not on the board
    StepBoard::Enter(std::string(300, 'x'));  // cut to the slot
    std::thread other([] { StepBoard::Enter("Encode/Embed"); });
    other.join();
    StepBoard::Enter("Udf");  // this thread's slot, rewritten
    ::raise(SIGKILL);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::vector<std::string> steps = StepBoard::Read(path);
  EXPECT_THAT(steps, ElementsAre("Udf", "Encode/Embed"));
  EXPECT_EQ(StepBoard::DescribeSteps(path), " while in step 'Udf', 'Encode/Embed'");
  EXPECT_EQ(StepBoard::DescribeSteps(dir.path() + "/missing.steps"), "");
  EXPECT_TRUE(StepBoard::Read(dir.path() + "/missing.steps").empty());
}

}  // namespace
}  // namespace dfw
