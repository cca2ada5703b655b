#include "dfw/job/protocol.h"

#include <array>
#include <nlohmann/json.hpp>
#include <utility>

namespace dfw {
namespace {

constexpr std::array<std::pair<MessageType, std::string_view>, 10> kNames = {{
    {MessageType::kHello, "hello"},
    {MessageType::kLeaseRequest, "lease_request"},
    {MessageType::kHeartbeat, "heartbeat"},
    {MessageType::kCommit, "commit"},
    {MessageType::kFail, "fail"},
    {MessageType::kLease, "lease"},
    {MessageType::kDone, "done"},
    {MessageType::kAck, "ack"},
    {MessageType::kSplitRequest, "split_request"},
    {MessageType::kSplit, "split"},
}};

}  // namespace

std::string_view MessageTypeName(MessageType t) {
  for (const auto& [type, name] : kNames) {
    if (type == t) return name;
  }
  return "unknown";
}

std::string EncodeMessage(const Message& m) {
  nlohmann::json j;
  j["type"] = MessageTypeName(m.type);
  switch (m.type) {
    case MessageType::kHello:
      j["index"] = m.index;
      j["pid"] = m.pid;
      break;
    case MessageType::kLease:
      j["lease"] = m.lease;
      j["bundle"] = m.bundle;
      j["attempt"] = m.attempt;
      j["staging"] = m.staging;
      if (!m.range.empty()) j["range"] = m.range;
      break;
    case MessageType::kCommit:
      j["lease"] = m.lease;
      j["bundle"] = m.bundle;
      j["metrics"] = m.metrics_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(m.metrics_json, nullptr, false);
      if (!m.range.empty()) j["range"] = m.range;
      break;
    case MessageType::kHeartbeat:
      if (m.lease != 0) {
        j["lease"] = m.lease;
        j["done"] = m.done;
        j["total"] = m.total;
      }
      break;
    case MessageType::kSplitRequest:
      j["lease"] = m.lease;
      j["bundle"] = m.bundle;
      j["fraction"] = m.fraction;
      break;
    case MessageType::kSplit:
      j["lease"] = m.lease;
      j["bundle"] = m.bundle;
      j["accepted"] = m.accepted;
      j["range"] = m.range;
      j["residual_range"] = m.residual_range;
      j["reason"] = m.reason;
      break;
    case MessageType::kFail:
      j["lease"] = m.lease;
      j["bundle"] = m.bundle;
      j["error"] = m.error;
      break;
    case MessageType::kAck:
      j["accepted"] = m.accepted;
      j["reason"] = m.reason;
      break;
    case MessageType::kLeaseRequest:
    case MessageType::kDone:
      break;
  }
  // Invalid UTF-8 in an error text must not throw: replace it.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<Message> DecodeMessage(const std::string& line) {
  try {
    auto j = nlohmann::json::parse(line);
    if (!j.is_object()) return DataLoss("coordinator message is not a JSON object: '" + line + "'");
    std::string type = j.at("type").get<std::string>();
    Message m;
    bool known = false;
    for (const auto& [t, name] : kNames) {
      if (name == type) {
        m.type = t;
        known = true;
      }
    }
    if (!known) return DataLoss("coordinator message has unknown type '" + type + "'");
    switch (m.type) {
      case MessageType::kHello:
        m.index = j.at("index").get<int>();
        m.pid = j.at("pid").get<int64_t>();
        break;
      case MessageType::kLease:
        m.lease = j.at("lease").get<int64_t>();
        m.bundle = j.at("bundle").get<std::string>();
        m.attempt = j.at("attempt").get<int>();
        m.staging = j.at("staging").get<std::string>();
        m.range = j.value("range", "");
        break;
      case MessageType::kCommit:
        m.lease = j.at("lease").get<int64_t>();
        m.bundle = j.at("bundle").get<std::string>();
        if (j.contains("metrics")) m.metrics_json = j["metrics"].dump();
        m.range = j.value("range", "");
        break;
      case MessageType::kHeartbeat:
        if (j.contains("lease")) {
          m.lease = j.at("lease").get<int64_t>();
          m.done = j.at("done").get<int64_t>();
          m.total = j.at("total").get<int64_t>();
          if (m.lease <= 0 || m.done < 0 || m.total < 0 || m.done > m.total) {
            return DataLoss("coordinator message: heartbeat progress " + std::to_string(m.done) + " of " +
                            std::to_string(m.total) + " for lease " + std::to_string(m.lease) + " is impossible");
          }
        }
        break;
      case MessageType::kSplitRequest:
        m.lease = j.at("lease").get<int64_t>();
        m.bundle = j.at("bundle").get<std::string>();
        m.fraction = j.at("fraction").get<double>();
        if (!(m.fraction >= 0.0 && m.fraction < 1.0)) {
          return DataLoss("coordinator message: split fraction " + std::to_string(m.fraction) + " is not in [0, 1)");
        }
        break;
      case MessageType::kSplit:
        m.lease = j.at("lease").get<int64_t>();
        m.bundle = j.at("bundle").get<std::string>();
        m.accepted = j.at("accepted").get<bool>();
        m.range = j.value("range", "");
        m.residual_range = j.value("residual_range", "");
        m.reason = j.value("reason", "");
        break;
      case MessageType::kFail:
        m.lease = j.at("lease").get<int64_t>();
        m.bundle = j.at("bundle").get<std::string>();
        m.error = j.at("error").get<std::string>();
        break;
      case MessageType::kAck:
        m.accepted = j.at("accepted").get<bool>();
        m.reason = j.value("reason", "");
        break;
      case MessageType::kLeaseRequest:
      case MessageType::kDone:
        break;
    }
    return m;
  } catch (...) {
    return DataLoss(FromCurrentException("coordinator message '" + line.substr(0, 200) + "'").message());
  }
}

}  // namespace dfw
