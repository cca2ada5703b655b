// The coordinator wire protocol: newline-delimited JSON objects over the job dir's UNIX socket.
//
// SDK process -> coordinator            coordinator -> SDK process
//   hello     {index, pid}                (no reply)
//   lease     {}                          lease {lease, bundle, attempt, staging} | done {}
//   heartbeat {}                          (no reply; refreshes every lease the process holds)
//   commit    {lease, bundle, metrics}    ack {accepted, reason}
//   fail      {lease, bundle, error}      ack {accepted, reason}
// A lease request may be answered later (long poll) when every pending bundle is leased to a peer.
// `done` means: no more work for this process (job finished, failed, or stopping) — exit 0.
#pragma once

#include <cstdint>
#include <string>

#include "dfw/common/status.h"

namespace dfw {

// Counters an SDK process adds to each commit's metrics: records read (records/s in progress and
// the report) and the milliseconds it spent running the bundle (busy and idle time per process).
inline constexpr const char* kRecordsNamespace = "dfworker";
inline constexpr const char* kRecordsCounter = "records";
inline constexpr const char* kBusyMsCounter = "busy_ms";

enum class MessageType { kHello, kLeaseRequest, kHeartbeat, kCommit, kFail, kLease, kDone, kAck };

struct Message {
  MessageType type = MessageType::kHeartbeat;
  int index = -1;            // hello: SDK process index
  int64_t pid = 0;           // hello: process id
  int64_t lease = 0;         // lease/commit/fail: lease id
  std::string bundle;        // lease/commit/fail: bundle id
  int attempt = 0;           // lease: 1-based attempt number of this bundle
  std::string staging;       // lease: folder the bundle's output goes to
  std::string metrics_json;  // commit: MetricsSnapshot::ToJson() of this bundle (may be empty)
  std::string error;         // fail: why the bundle failed
  bool accepted = false;     // ack: whether the commit/failure was taken
  std::string reason;        // ack: why not ("duplicate", "lease expired")
};

// One line of JSON, without the trailing newline.
std::string EncodeMessage(const Message& m);
// kDataLoss naming the problem (not JSON, unknown type, missing or mistyped field).
Result<Message> DecodeMessage(const std::string& line);

std::string_view MessageTypeName(MessageType t);

}  // namespace dfw
