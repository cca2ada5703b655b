// Status and Result<T>: how every module reports failure across its boundary.
//
// A Status is OK or carries a code and a message written for the user ("what, the value, what is
// allowed"). Result<T> is a T or a non-OK Status. Neither throws; exceptions from third-party
// libraries are caught at the first boundary and converted (see FromException).
#pragma once

#include <cassert>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dfw {

// Codes map onto the process exit codes in exit_code.h (see ExitCodeFor).
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad flag, option, pipeline file, model file: the user must change something
  kNotFound,          // a named file, field or thing does not exist
  kFailedPrecondition,// the system is not in a state that allows this (e.g. job dir already finished)
  kOutOfRange,        // an index, offset or size outside what is allowed
  kResourceExhausted, // out of (device) memory, disk, clients
  kUnavailable,       // a peer (coordinator, daemon) cannot be reached; retrying may help
  kInternal,          // a bug or an unexpected library failure
  kAborted,           // stopped on purpose (signal, threshold)
  kIoError,           // the OS refused a read/write
  kUnimplemented,     // valid input that this tool does not support
  kDataLoss,          // a record or file is corrupt
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid argument: message" (or "OK").
  std::string ToString() const;

  // Returns a copy whose message is "context: message" (OK stays OK).
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Convenience constructors.
Status InvalidArgument(std::string message);
Status NotFound(std::string message);
Status FailedPrecondition(std::string message);
Status OutOfRange(std::string message);
Status ResourceExhausted(std::string message);
Status Unavailable(std::string message);
Status Internal(std::string message);
Status Aborted(std::string message);
Status IoError(std::string message);
Status Unimplemented(std::string message);
Status DataLoss(std::string message);

// IoError naming `what` (e.g. "open 'x.json'") and strerror(errno_value).
Status ErrnoError(std::string_view what, int errno_value);

// Converts the exception in flight (call inside a catch block) into a Status with `context`.
Status FromCurrentException(std::string_view context);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                 // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {           // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace dfw

#define DFW_CONCAT_INNER(a, b) a##b
#define DFW_CONCAT(a, b) DFW_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::dfw::Status dfw_status_ = (expr);          \
    if (!dfw_status_.ok()) return dfw_status_;   \
  } while (0)

#define DFW_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                              \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, rexpr) \
  DFW_ASSIGN_OR_RETURN_IMPL(DFW_CONCAT(dfw_result_, __LINE__), lhs, rexpr)
