#include "dfw/common/status.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "dfw/common/exit_code.h"

namespace dfw {
namespace {

Result<int> Half(int x) {
  if (x % 2) return InvalidArgument("'" + std::to_string(x) + "' is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, CarriesCodeMessageAndContext) {
  Status s = NotFound("file 'x' does not exist").WithContext("ReadFromJson");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "ReadFromJson: file 'x' does not exist");
  EXPECT_EQ(s.ToString(), "not found: ReadFromJson: file 'x' does not exist");
}

TEST(Result, PropagatesErrorsThroughAssignOrReturn) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "'3' is odd");
}

TEST(Status, ConvertsExceptions) {
  Status s;
  try {
    throw std::out_of_range("index 7");
  } catch (...) {
    s = FromCurrentException("reading list");
  }
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(), "reading list: index 7");
}

TEST(ExitCode, InvalidInputIsTwoRuntimeFailureIsOne) {
  EXPECT_EQ(ExitCodeFor(Status::OK()), ExitCode::kSuccess);
  EXPECT_EQ(ExitCodeFor(InvalidArgument("x")), ExitCode::kInvalidInvocation);
  EXPECT_EQ(ExitCodeFor(NotFound("x")), ExitCode::kInvalidInvocation);
  EXPECT_EQ(ExitCodeFor(ResourceExhausted("oom")), ExitCode::kRunFailed);
  EXPECT_EQ(ExitCodeFor(IoError("disk")), ExitCode::kRunFailed);
}

TEST(ExitCode, DecodesWaitStatusWords) {
  // Linux encoding: exit code in bits 8..15; signal in bits 0..6; 0x80 = core dumped.
  ChildExit e = DecodeWaitStatus(3 << 8);
  EXPECT_TRUE(e.exited);
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_EQ(e.Describe(), "exited with code 3");
  ChildExit k = DecodeWaitStatus(9);
  EXPECT_TRUE(k.signaled);
  EXPECT_EQ(k.signal, 9);
  EXPECT_EQ(k.Describe(), "killed by signal 9 (SIGKILL)");
  EXPECT_FALSE(k.success());
  EXPECT_TRUE(DecodeWaitStatus(0).success());
}

}  // namespace
}  // namespace dfw
