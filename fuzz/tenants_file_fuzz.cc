// libFuzzer target for the tenants file parser (dfw/tenants/tenants_file.h): any bytes as the file.
// Invariants beyond "no crash" (yaml-cpp throws; nothing may escape): every diagnostic has a code
// and a message that starts with the file name and quotes a caret inside its line; a parse without
// errors gives unique names, shares > 0 with fractions in (0, 1] summing to at most 1, percentages
// in (0, 100] and at least one SDK process per tenant.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "dfw/tenants/tenants_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  dfw::TenantsParse p = dfw::ParseTenantsFile(text, "t.yaml");
  bool errors = false;
  for (const dfw::Diagnostic& d : p.diagnostics) {
    if (d.code.empty() || d.message.rfind("t.yaml:", 0) != 0) std::abort();
    if (d.origin && d.caret_offset + d.caret_length > d.origin->text.size()) std::abort();
    errors |= d.severity == dfw::Severity::kError;
  }
  if (errors) return 0;
  std::set<std::string> names;
  double fractions = 0;
  for (const dfw::TenantSpec& t : p.file.tenants) {
    if (!names.insert(t.name).second || t.pipeline.empty() || t.sdk_processes < 1) std::abort();
    if (!(t.active_thread_percentage > 0) || t.active_thread_percentage > 100 || !(t.over_quota_weight > 0)) std::abort();
    if (t.gpu_memory.bytes) {
      if (*t.gpu_memory.bytes == 0) std::abort();
    } else {
      if (!(t.gpu_memory.fraction > 0) || t.gpu_memory.fraction > 1) std::abort();
      fractions += t.gpu_memory.fraction;
    }
  }
  if (fractions > 1.0 + 1e-6) std::abort();
  return 0;
}
