// The coordinator wire protocol: newline-delimited JSON objects over the job dir's UNIX socket.
//
// SDK process -> coordinator            coordinator -> SDK process
//   hello     {index, pid}                (no reply)
//   lease     {}                          lease {lease, bundle, attempt, staging} | done {}
//   heartbeat {[lease, done, total]}      (no reply; refreshes every lease the process holds)
//   commit    {lease, bundle, metrics,    ack {accepted, reason}
//              [range]}
//   fail      {lease, bundle, error}      ack {accepted, reason}
//                                         split_request {lease, bundle, fraction}
//   split     {lease, bundle, accepted,   (no reply)
//              range, residual_range, reason}
// A lease request may be answered later (long poll) when every pending bundle is leased to a peer.
// `done` means: no more work for this process (job finished, failed, or stopping) — exit 0.
//
// Dynamic work rebalancing (dfw/launcher/coordinator.h): a lease names the input range to read
// (`range`, dfw/job/work_range.h's text form; "" = the job's bundle table entry); heartbeats carry
// the position reached in it (`done` of `total` units: bytes, or elements of an in-memory source);
// the coordinator may ask the holder to split off the unread part beyond `fraction` of what is
// left, and the holder answers with the halves it accepted (it will stop at the split point) or a
// refusal. A commit names the range the bundle really covered.
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

enum class MessageType { kHello, kLeaseRequest, kHeartbeat, kCommit, kFail, kLease, kDone, kAck, kSplitRequest, kSplit };

struct Message {
  MessageType type = MessageType::kHeartbeat;
  int index = -1;            // hello: SDK process index
  int64_t pid = 0;           // hello: process id
  int64_t lease = 0;         // lease/commit/fail/split*: lease id; heartbeat: the lease `done` is of (0 = none)
  std::string bundle;        // lease/commit/fail/split*: bundle id
  int attempt = 0;           // lease: 1-based attempt number of this bundle
  std::string staging;       // lease: folder the bundle's output goes to
  std::string metrics_json;  // commit: MetricsSnapshot::ToJson() of this bundle (may be empty)
  std::string error;         // fail: why the bundle failed
  bool accepted = false;     // ack: whether the commit/failure was taken; split: whether the holder split
  std::string reason;        // ack: why not ("duplicate", "lease expired"); split: why it refused
  std::string range;         // lease: range to read; commit: range read; split: the holder's half
  std::string residual_range;  // split: the half given up
  int64_t done = -1;         // heartbeat: units of the lease's range read so far (-1 = not reported)
  int64_t total = -1;        // heartbeat: units in the range
  double fraction = 0.5;     // split_request: cut at done + fraction * (total - done) or later
};

// One line of JSON, without the trailing newline.
std::string EncodeMessage(const Message& m);
// kDataLoss naming the problem (not JSON, unknown type, missing or mistyped field).
Result<Message> DecodeMessage(const std::string& line);

std::string_view MessageTypeName(MessageType t);

}  // namespace dfw
