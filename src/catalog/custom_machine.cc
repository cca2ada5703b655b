// Custom machine types: the shape is in the name (custom-8-30720 = 8 vCPUs, 30720 MB), and each
// family's `custom:` rules say which shapes Compute Engine makes. Dataflow takes custom N1 types
// with GPUs (GS: "GPUs are supported with N1 machine types, including custom N1 machine types").
#include <cmath>

#include "dfw/catalog/catalog.h"
#include "dfw/common/strings.h"

namespace dfw {
namespace {

std::string Gb(double gb) {
  std::string s = std::to_string(std::round(gb * 100) / 100);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s + " GB";
}

}  // namespace

std::optional<Result<MachineType>> Catalog::CustomMachine(std::string_view name) const {
  std::vector<std::string> parts = Split(name, '-');
  if (!parts.empty() && parts[0] == "custom") parts.insert(parts.begin(), "n1");  // custom-... is N1
  if (parts.size() < 2 || parts[1] != "custom") return std::nullopt;
  const std::string n(name);
  auto refuse = [&n](const std::string& why) {
    return std::optional<Result<MachineType>>(InvalidArgument("custom machine type '" + n + "': " + why));
  };
  const bool extended = parts.size() == 5 && parts[4] == "ext";
  if (parts.size() != 4 && !extended) {
    return refuse("not <family>-custom-<vCPUs>-<memory MB>[-ext], e.g. custom-8-30720");
  }
  const Family* family = nullptr;
  for (const Family& f : families_) {
    if (f.family == parts[0] && f.custom_min_gb) family = &f;
  }
  if (!family) return refuse("the catalog has no custom rules for the " + parts[0] + " family");
  const Family& f = *family;
  auto vcpus = ParseInt64(parts[2]);
  auto mb = ParseInt64(parts[3]);
  if (!vcpus || !mb || *vcpus <= 0 || *mb <= 0 || *mb > (int64_t{1} << 32)) {
    return refuse("vCPUs and memory MB must be positive whole numbers");
  }
  const bool one_allowed = f.custom_min_vcpus == 1 && *vcpus == 1;
  if (!one_allowed &&
      (*vcpus < f.custom_min_vcpus || *vcpus > f.custom_max_vcpus || *vcpus % f.custom_vcpu_multiple != 0)) {
    std::string allowed = (f.custom_min_vcpus == 1 ? "1 or " : "") + std::string("a multiple of ") +
                          std::to_string(f.custom_vcpu_multiple) + " from " +
                          std::to_string(std::max(f.custom_min_vcpus, f.custom_vcpu_multiple)) + " to " +
                          std::to_string(f.custom_max_vcpus);
    return refuse(std::to_string(*vcpus) + " vCPUs; custom " + f.family + " types take " + allowed + " vCPUs");
  }
  if (*mb % f.custom_step_mb != 0) {
    return refuse(std::to_string(*mb) + " MB is not a multiple of " + std::to_string(f.custom_step_mb) + " MB");
  }
  const double gb = static_cast<double>(*mb) / 1024.0;
  const double per_vcpu = gb / static_cast<double>(*vcpus);
  if (per_vcpu < *f.custom_min_gb - 1e-9) {
    return refuse(Gb(per_vcpu) + " per vCPU is below the " + f.family + " minimum of " + Gb(*f.custom_min_gb));
  }
  if (per_vcpu > *f.custom_max_gb + 1e-9) {
    if (!extended) {
      return refuse(Gb(per_vcpu) + " per vCPU is above the " + f.family + " maximum of " + Gb(*f.custom_max_gb) +
                    (f.custom_extended_max_gb ? "; extended memory is written with -ext, e.g. '" + n + "-ext'" : ""));
    }
    if (!f.custom_extended_max_gb) return refuse("the " + f.family + " family has no extended memory (-ext)");
    if (gb > *f.custom_extended_max_gb + 1e-9) {
      return refuse(Gb(gb) + " is above the " + f.family + " extended-memory maximum of " +
                    Gb(*f.custom_extended_max_gb));
    }
  }
  return Result<MachineType>(MachineType{n, f.family, static_cast<int>(*vcpus), static_cast<uint64_t>(*mb) << 20,
                                         "", 0, f.gpu_attachable});
}

}  // namespace dfw
