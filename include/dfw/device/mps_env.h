// The MPS client environment: the variables an SDK process (or model host) needs to reach this
// job's MPS daemon and to carry its per-client limits, and the parsers for their values.
//
// Grammar (reference nvidia-mps.md §4):
//   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT = item {"," item}, item = <ordinal or UUID> "=" <size>,
//     size = integer + unit, unit in G, GB, M, MB, K, KB (1024-based, as the MPS docs use them);
//     a bare integer is bytes.
//   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = number in (0, 100].
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dfw/common/status.h"

namespace dfw::device {

inline constexpr std::string_view kPipeDirEnv = "CUDA_MPS_PIPE_DIRECTORY";
inline constexpr std::string_view kLogDirEnv = "CUDA_MPS_LOG_DIRECTORY";
inline constexpr std::string_view kThreadPercentageEnv = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
inline constexpr std::string_view kPinnedMemLimitEnv = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT";
inline constexpr std::string_view kClientPriorityEnv = "CUDA_MPS_CLIENT_PRIORITY";
// dfworker's own: the tenant a client process belongs to (`dfworker run --tenants`); it prefixes
// the client's name in the emulated daemon's registry ("<tenant>/sdk-3") and names its ledger budget.
inline constexpr std::string_view kTenantEnv = "DFW_TENANT";

// Where a job's MPS daemon lives. Both directories are private (mode 0700) and under the job dir.
struct MpsDirs {
  std::string pipe_dir;  // CUDA_MPS_PIPE_DIRECTORY: control socket / pipes and the daemon's pid file
  std::string log_dir;   // CUDA_MPS_LOG_DIRECTORY: control.log (and server.log on NVIDIA)
};

// The layout under a job dir: <job_dir>/mps/pipe and <job_dir>/mps/log.
MpsDirs MpsDirsForJob(std::string_view job_dir);

// Per-client limits, as the launcher passes them to each child from its flags.
struct MpsClientLimits {
  // Percentage of the device's threads the client may use, (0, 100]; nullopt = daemon default.
  std::optional<double> active_thread_percentage;
  // Per-client device memory cap in bytes on device ordinal 0; nullopt = no cap.
  std::optional<uint64_t> pinned_mem_limit_bytes;
  // CUDA_MPS_CLIENT_PRIORITY: 0 normal, 1 below normal (a scheduling hint); nullopt = daemon default (0).
  std::optional<int> client_priority = std::nullopt;
};

// Device key ("0", or a "GPU-..." UUID) -> limit in bytes.
using PinnedMemLimits = std::map<std::string, uint64_t>;

// Parses a CUDA_MPS_PINNED_DEVICE_MEM_LIMIT value. Errors name the item and the allowed form.
Result<PinnedMemLimits> ParsePinnedMemLimit(std::string_view text);
// Formats limits back ("0=2048M"): whole GiB as G, whole MiB as M, else bytes.
std::string FormatPinnedMemLimit(const PinnedMemLimits& limits);
// Parses a size with MPS units ("2G", "900M", "512MB", "1048576").
Result<uint64_t> ParseMpsSize(std::string_view text);
// Parses CUDA_MPS_ACTIVE_THREAD_PERCENTAGE.
Result<double> ParseThreadPercentage(std::string_view text);
// Parses CUDA_MPS_CLIENT_PRIORITY: "0" or "1".
Result<int> ParseClientPriority(std::string_view text);

// The environment (name, value) pairs for one client: the two directories always, the limits
// when set. Deterministic order.
std::vector<std::pair<std::string, std::string>> MpsClientEnv(const MpsDirs& dirs, const MpsClientLimits& limits);

// Reads the limits of the current process from its environment (what a client sees after exec).
// Malformed values are kInvalidArgument naming the variable.
Result<MpsClientLimits> MpsClientLimitsFromEnv();

}  // namespace dfw::device
