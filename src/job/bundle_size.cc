#include "dfw/job/bundle_size.h"

#include <algorithm>
#include <cstdio>

namespace dfw {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string Bytes(int64_t n) {
  char buf[32];
  if (n >= (int64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / (1 << 10));
  }
  return buf;
}

}  // namespace

int64_t MinBundleBytes(RowCost cost) { return cost == RowCost::kCostly ? kMinCostlyRowBundleBytes : kMinBundleBytes; }

BundleTarget SizeBundles(int64_t total_bytes, int64_t total_elements, int processes, RowCost cost) {
  BundleTarget t;
  t.desired_bundles = std::max(1, processes) * (cost == RowCost::kCostly ? kCostlyRowBundlesPerProcess : kBundlesPerProcess);
  t.bytes = std::clamp(CeilDiv(std::max<int64_t>(total_bytes, 0), t.desired_bundles), MinBundleBytes(cost), kMaxBundleBytes);
  t.elements = total_elements <= 0 ? 0 : std::max(kMinBundleElements, CeilDiv(total_elements, t.desired_bundles));
  return t;
}

std::string BundleTarget::ToString() const {
  std::string s = "target " + Bytes(bytes);
  if (elements > 0) s += ", " + std::to_string(elements) + " elements";
  return s + " per bundle (aiming at " + std::to_string(desired_bundles) + " bundles)";
}

}  // namespace dfw
