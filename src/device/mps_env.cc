#include "dfw/device/mps_env.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "dfw/common/strings.h"

namespace dfw::device {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * 1024;
constexpr uint64_t kGiB = kMiB * 1024;

std::string Quote(std::string_view s) {
  // Appends rather than "'" + s + "'", which trips GCC 12's -Wrestrict false positive at -O3.
  std::string q(1, '\'');
  q.append(s);
  q.push_back('\'');
  return q;
}

std::string FormatPercentage(double p) {
  char buf[32];
  if (p == std::floor(p)) std::snprintf(buf, sizeof buf, "%.0f", p);
  else std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

}  // namespace

MpsDirs MpsDirsForJob(std::string_view job_dir) {
  std::string base(job_dir);
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return MpsDirs{base + "/mps/pipe", base + "/mps/log"};
}

Result<uint64_t> ParseMpsSize(std::string_view text) {
  std::string_view t = Trim(text);
  std::size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
  std::string_view unit = t.substr(digits);
  std::optional<int64_t> n = ParseInt64(t.substr(0, digits));
  uint64_t scale = 0;
  if (unit.empty()) scale = 1;
  else if (unit == "G" || unit == "GB") scale = kGiB;
  else if (unit == "M" || unit == "MB") scale = kMiB;
  else if (unit == "K" || unit == "KB") scale = kKiB;
  if (digits == 0 || !n || scale == 0) {
    return InvalidArgument("memory size " + Quote(text) +
                           " is not an integer with an optional unit G, GB, M, MB, K or KB (e.g. '2G', '900M')");
  }
  uint64_t value = static_cast<uint64_t>(*n);
  if (value > UINT64_MAX / scale) return OutOfRange("memory size " + Quote(text) + " is too large");
  return value * scale;
}

Result<PinnedMemLimits> ParsePinnedMemLimit(std::string_view text) {
  PinnedMemLimits limits;
  if (Trim(text).empty()) {
    return InvalidArgument(std::string(kPinnedMemLimitEnv) +
                           " is empty; expected '<device>=<size>[,...]', e.g. '0=2G'");
  }
  for (const std::string& raw : Split(text, ',')) {
    std::string_view item = Trim(raw);
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgument(std::string(kPinnedMemLimitEnv) + " item " + Quote(item) +
                             " is not '<device ordinal or UUID>=<size>', e.g. '0=2G'");
    }
    std::string device(Trim(item.substr(0, eq)));
    bool ordinal = ParseInt64(device).has_value();
    if (!ordinal && device.rfind("GPU-", 0) != 0 && device.rfind("MIG-", 0) != 0) {
      return InvalidArgument(std::string(kPinnedMemLimitEnv) + " device " + Quote(device) +
                             " is neither an ordinal (0, 1, ...) nor a UUID (GPU-...)");
    }
    Result<uint64_t> size = ParseMpsSize(item.substr(eq + 1));
    if (!size.ok()) return size.status().WithContext(std::string(kPinnedMemLimitEnv) + " item " + Quote(item));
    if (!limits.emplace(device, *size).second) {
      return InvalidArgument(std::string(kPinnedMemLimitEnv) + " names device " + Quote(device) + " twice");
    }
  }
  return limits;
}

std::string FormatPinnedMemLimit(const PinnedMemLimits& limits) {
  std::vector<std::string> items;
  for (const auto& [device, bytes] : limits) {
    std::string size;
    if (bytes != 0 && bytes % kGiB == 0) size = std::to_string(bytes / kGiB) + "G";
    else if (bytes != 0 && bytes % kMiB == 0) size = std::to_string(bytes / kMiB) + "M";
    else size = std::to_string(bytes);
    items.push_back(device + "=" + size);
  }
  return Join(items, ",");
}

Result<double> ParseThreadPercentage(std::string_view text) {
  std::optional<double> p = ParseDouble(Trim(text));
  if (!p || !(*p > 0.0) || *p > 100.0) {
    return InvalidArgument(std::string(kThreadPercentageEnv) + " " + Quote(text) +
                           " is not a number in (0, 100]");
  }
  return *p;
}

Result<int> ParseClientPriority(std::string_view text) {
  std::string_view t = Trim(text);
  if (t == "0" || t == "1") return t == "1" ? 1 : 0;
  return InvalidArgument(std::string(kClientPriorityEnv) + " " + Quote(text) + " is not 0 (normal) or 1 (below normal)");
}

std::vector<std::pair<std::string, std::string>> MpsClientEnv(const MpsDirs& dirs, const MpsClientLimits& limits) {
  std::vector<std::pair<std::string, std::string>> env = {
      {std::string(kPipeDirEnv), dirs.pipe_dir},
      {std::string(kLogDirEnv), dirs.log_dir},
  };
  if (limits.active_thread_percentage) {
    env.emplace_back(std::string(kThreadPercentageEnv), FormatPercentage(*limits.active_thread_percentage));
  }
  if (limits.pinned_mem_limit_bytes) {
    env.emplace_back(std::string(kPinnedMemLimitEnv), FormatPinnedMemLimit({{"0", *limits.pinned_mem_limit_bytes}}));
  }
  if (limits.client_priority) env.emplace_back(std::string(kClientPriorityEnv), std::to_string(*limits.client_priority));
  return env;
}

Result<MpsClientLimits> MpsClientLimitsFromEnv() {
  MpsClientLimits limits;
  if (const char* p = std::getenv(std::string(kThreadPercentageEnv).c_str()); p != nullptr) {
    ASSIGN_OR_RETURN(limits.active_thread_percentage, ParseThreadPercentage(p));
  }
  if (const char* m = std::getenv(std::string(kPinnedMemLimitEnv).c_str()); m != nullptr) {
    ASSIGN_OR_RETURN(PinnedMemLimits parsed, ParsePinnedMemLimit(m));
    if (auto it = parsed.find("0"); it != parsed.end()) limits.pinned_mem_limit_bytes = it->second;
  }
  if (const char* q = std::getenv(std::string(kClientPriorityEnv).c_str()); q != nullptr) {
    ASSIGN_OR_RETURN(limits.client_priority, ParseClientPriority(q));
  }
  return limits;
}

}  // namespace dfw::device
