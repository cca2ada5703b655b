// The tenants file: several pipelines that share one worker (and its one GPU), each with a
// GPU-memory budget, an MPS active-thread percentage, an MPS client priority, guaranteed SDK
// processes and an over-quota weight (docs/tenants.md).
//
//   options:                         # optional: the shared worker's flags, as in a pipeline file
//     machine_type: g2-standard-8
//   tenants:
//     - name: classify               # [a-z0-9_-], at most 24 characters; the job subdirectory
//       pipeline: pipelines/default.yaml
//       gpu_memory: 30GiB            # bytes with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB),
//                                    # a fraction of the GPU in (0, 1] such as 0.4, or a percentage "40%"
//       active_thread_percentage: 50 # (0, 100]; default 100
//       priority: normal             # normal | below_normal (CUDA_MPS_CLIENT_PRIORITY 0 | 1); default normal
//       sdk_processes: 4             # guaranteed SDK processes, >= 1; default 1
//       over_quota_weight: 1         # > 0; default 1
//
// Parsing is strict and never throws: every problem (YAML syntax, unknown key, bad value, zero or
// negative share, duplicate name, fractions summing over 1) becomes a Diagnostic with code
// "tenants-file-invalid" (or "tenants-budget-over-100") naming the file:line:col, the tenant and
// the field, so all of them are reported at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/options/diagnostic.h"

namespace dfw {

// MPS client priority (CUDA_MPS_CLIENT_PRIORITY): 0 normal, 1 below normal (nvidia-mps.md §4).
enum class TenantPriority { kNormal = 0, kBelowNormal = 1 };

const char* TenantPriorityName(TenantPriority priority);  // "normal" / "below_normal"

// A GPU-memory budget as written: absolute bytes, or a fraction of the GPU's memory.
struct GpuMemoryShare {
  std::optional<uint64_t> bytes;  // "30GiB"
  double fraction = 0;            // "0.4" / "40%" when `bytes` is empty, in (0, 1]
  std::string text;               // as written

  // The budget in bytes on a GPU of `capacity_bytes`.
  uint64_t BytesOf(uint64_t capacity_bytes) const;
};

struct TenantSpec {
  std::string name;
  std::string pipeline;                  // path as written (resolved like `dfworker run FILE`)
  GpuMemoryShare gpu_memory;
  double active_thread_percentage = 100; // (0, 100]
  TenantPriority priority = TenantPriority::kNormal;
  int sdk_processes = 1;                 // guaranteed, >= 1
  double over_quota_weight = 1;          // > 0
  Origin origin;                         // the tenant's `name:` line (diagnostics point here)
};

struct TenantsFile {
  std::string path;                 // as given
  std::string text;                 // its contents (its `options:` block is the shared worker's)
  std::vector<TenantSpec> tenants;  // in file order; names unique
  bool borrowing = true;            // `borrowing:` (default true): finished tenants' slots are lent
};

struct TenantsParse {
  TenantsFile file;
  std::vector<Diagnostic> diagnostics;  // errors make the file unusable
};

// Parses `text` (the contents of `path`).
TenantsParse ParseTenantsFile(std::string_view text, std::string_view path);

// Parses a gpu_memory value ("30GiB", "512MB", "0.4", "40%"). kInvalidArgument names what is allowed.
Result<GpuMemoryShare> ParseGpuMemoryShare(std::string_view text);

}  // namespace dfw
