#include "dfw/common/status.h"

#include <cstring>
#include <new>
#include <stdexcept>

namespace dfw {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kFailedPrecondition: return "failed precondition";
    case StatusCode::kOutOfRange: return "out of range";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kInternal: return "internal error";
    case StatusCode::kAborted: return "aborted";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kUnimplemented: return "not supported";
    case StatusCode::kDataLoss: return "data loss";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
Status FailedPrecondition(std::string m) { return Status(StatusCode::kFailedPrecondition, std::move(m)); }
Status OutOfRange(std::string m) { return Status(StatusCode::kOutOfRange, std::move(m)); }
Status ResourceExhausted(std::string m) { return Status(StatusCode::kResourceExhausted, std::move(m)); }
Status Unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
Status Aborted(std::string m) { return Status(StatusCode::kAborted, std::move(m)); }
Status IoError(std::string m) { return Status(StatusCode::kIoError, std::move(m)); }
Status Unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
Status DataLoss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }

Status ErrnoError(std::string_view what, int errno_value) {
  std::string m(what);
  m += ": ";
  // errno 0 means a caller lost it (a later call reset it): say so, never ": Success".
  m += errno_value == 0 ? std::string("failed (the system error was not kept)") : std::strerror(errno_value);
  return Status(StatusCode::kIoError, std::move(m));
}

Status FromCurrentException(std::string_view context) {
  std::string prefix(context);
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(prefix + ": out of memory");
  } catch (const std::invalid_argument& e) {
    return InvalidArgument(prefix + ": " + e.what());
  } catch (const std::out_of_range& e) {
    return OutOfRange(prefix + ": " + e.what());
  } catch (const std::exception& e) {
    return Internal(prefix + ": " + e.what());
  } catch (...) {
    return Internal(prefix + ": unknown exception");
  }
}

}  // namespace dfw
