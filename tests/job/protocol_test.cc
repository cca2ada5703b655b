#include "dfw/job/protocol.h"

#include <gtest/gtest.h>

namespace dfw {
namespace {

Message Make(MessageType t) {
  Message m;
  m.type = t;
  return m;
}

TEST(Protocol, EveryMessageTypeRoundTrips) {
  std::vector<Message> cases;
  Message hello = Make(MessageType::kHello);
  hello.index = 3;
  hello.pid = 4242;
  cases.push_back(hello);
  cases.push_back(Make(MessageType::kLeaseRequest));
  cases.push_back(Make(MessageType::kHeartbeat));
  Message commit = Make(MessageType::kCommit);
  commit.lease = 9;
  commit.bundle = "10-20";
  commit.metrics_json = R"({"counters":[{"name":"records","namespace":"dfworker","value":10}],"distributions":[]})";
  cases.push_back(commit);
  Message fail = Make(MessageType::kFail);
  fail.lease = 2;
  fail.bundle = "b";
  fail.error = "stage 'Parse': bad \"record\"\nline 2";
  cases.push_back(fail);
  Message lease = Make(MessageType::kLease);
  lease.lease = 77;
  lease.bundle = "0-10";
  lease.attempt = 2;
  lease.staging = "/tmp/j/staging/lease-77";
  cases.push_back(lease);
  cases.push_back(Make(MessageType::kDone));
  Message ack = Make(MessageType::kAck);
  ack.accepted = false;
  ack.reason = "duplicate";
  cases.push_back(ack);

  for (const Message& m : cases) {
    SCOPED_TRACE(std::string(MessageTypeName(m.type)));
    std::string line = EncodeMessage(m);
    EXPECT_EQ(line.find('\n'), std::string::npos) << "one message must be one line";
    auto back = DecodeMessage(line);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->type, m.type);
    EXPECT_EQ(back->index, m.index);
    EXPECT_EQ(back->pid, m.pid);
    EXPECT_EQ(back->lease, m.lease);
    EXPECT_EQ(back->bundle, m.bundle);
    EXPECT_EQ(back->attempt, m.attempt);
    EXPECT_EQ(back->staging, m.staging);
    EXPECT_EQ(back->error, m.error);
    EXPECT_EQ(back->accepted, m.accepted);
    EXPECT_EQ(back->reason, m.reason);
    if (!m.metrics_json.empty()) {
      EXPECT_EQ(back->metrics_json, m.metrics_json);
    }
  }
}

TEST(Protocol, BadLinesAreDataLossNamingTheProblem) {
  struct Case {
    std::string line;
    std::string expect_in_message;
  };
  const std::vector<Case> cases = {
      {"", "coordinator message"},
      {"not json", "coordinator message"},
      {"[1,2]", "not a JSON object"},
      {R"({"type":"lease_me"})", "unknown type 'lease_me'"},
      {R"({"type":"hello","index":"x","pid":1})", "coordinator message"},
      {R"({"type":"commit","bundle":"b"})", "coordinator message"},
      {R"({"index":1})", "coordinator message"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    auto m = DecodeMessage(c.line);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(m.status().message().find(c.expect_in_message), std::string::npos) << m.status().message();
  }
}

TEST(Protocol, InvalidUtf8InAnErrorDoesNotThrow) {
  Message fail = Make(MessageType::kFail);
  fail.error = std::string("bad \xff\xfe bytes");
  auto back = DecodeMessage(EncodeMessage(fail));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_NE(back->error.find("bad"), std::string::npos);
}

}  // namespace
}  // namespace dfw

namespace dfw {
namespace {

TEST(Protocol, RebalancingFieldsRoundTrip) {
  Message hb;
  hb.type = MessageType::kHeartbeat;
  hb.lease = 7;
  hb.done = 100;
  hb.total = 4096;
  auto back = DecodeMessage(EncodeMessage(hb));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->lease, 7);
  EXPECT_EQ(back->done, 100);
  EXPECT_EQ(back->total, 4096);
  Message plain;
  plain.type = MessageType::kHeartbeat;
  back = DecodeMessage(EncodeMessage(plain));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->lease, 0);
  EXPECT_EQ(back->done, -1);

  Message ask;
  ask.type = MessageType::kSplitRequest;
  ask.lease = 3;
  ask.bundle = "4";
  ask.fraction = 0.25;
  back = DecodeMessage(EncodeMessage(ask));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->type, MessageType::kSplitRequest);
  EXPECT_EQ(back->bundle, "4");
  EXPECT_DOUBLE_EQ(back->fraction, 0.25);

  Message split;
  split.type = MessageType::kSplit;
  split.lease = 3;
  split.bundle = "4";
  split.accepted = true;
  split.range = "0 0 100 1 in file.jsonl";
  split.residual_range = "0 100 200 9 in file.jsonl";
  back = DecodeMessage(EncodeMessage(split));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->accepted);
  EXPECT_EQ(back->range, split.range);
  EXPECT_EQ(back->residual_range, split.residual_range);

  Message lease;
  lease.type = MessageType::kLease;
  lease.lease = 1;
  lease.bundle = "2";
  lease.attempt = 1;
  lease.staging = "/s";
  lease.range = "0 5 10 2 x";
  back = DecodeMessage(EncodeMessage(lease));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->range, "0 5 10 2 x");
}

TEST(Protocol, GarbledProgressAndSplitRequestsAreRejected) {
  for (const char* line : {R"({"type":"heartbeat","lease":1,"done":5,"total":4})",
                           R"({"type":"heartbeat","lease":1,"done":-2,"total":4})",
                           R"({"type":"heartbeat","lease":0,"done":1,"total":4})",
                           R"({"type":"heartbeat","lease":1,"done":"x","total":4})",
                           R"({"type":"heartbeat","lease":1})",
                           R"({"type":"split_request","lease":1,"bundle":"0","fraction":1.5})",
                           R"({"type":"split_request","lease":1,"bundle":"0"})",
                           R"({"type":"split","lease":1,"bundle":"0"})"}) {
    SCOPED_TRACE(line);
    auto m = DecodeMessage(line);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace dfw
