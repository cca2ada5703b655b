// Reading GPU types and their MIG profiles from the catalog YAML (loader.h).
#include "loader.h"

namespace dfw {

Status CatalogLoader::Gpu(const YAML::Node& n) {
  GpuType g;
  ASSIGN_OR_RETURN(g.name, Str(n, "name"));
  context_ = "gpu '" + g.name + "': ";
  if (c_.FindGpu(g.name)) return Error(n, "defined twice");
  ASSIGN_OR_RETURN(g.display_name, Str(n, "display_name"));
  ASSIGN_OR_RETURN(double gb, Num(n, "memory_gb"));
  g.memory_bytes = static_cast<uint64_t>(gb * 1073741824.0);
  ASSIGN_OR_RETURN(YAML::Node fam, Field(n, "machine_families"));
  if (!fam.IsSequence() || fam.size() == 0) return Error(fam, "'machine_families' must be a non-empty list");
  for (const auto& f : fam) g.machine_families.push_back(f.Scalar());
  ASSIGN_OR_RETURN(g.counts, IntList(n, "counts"));
  ASSIGN_OR_RETURN(g.compute_capability, Cc(n, "compute_capability"));
  ASSIGN_OR_RETURN(int overhead_mib, Int(n, "context_overhead_mib"));
  g.context_overhead_bytes = static_cast<uint64_t>(overhead_mib) << 20;
  ASSIGN_OR_RETURN(YAML::Node src, Field(n, "sources"));
  ASSIGN_OR_RETURN(g.sources, Sources(src));
  for (const char* fact : {"memory", "machine_families", "counts", "compute_capability", "context_overhead"}) {
    if (!g.sources.count(fact)) return Error(src, std::string("no source for '") + fact + "'");
  }
  if (YAML::Node peaks = n["peak_tflops"]; peaks.IsDefined()) {
    if (!peaks.IsMap()) return Error(peaks, "'peak_tflops' must map fp32 and fp16_tensor to TFLOP/s");
    if (!g.sources.count("peak_tflops")) return Error(src, "no source for 'peak_tflops'");
    ASSIGN_OR_RETURN(g.peak_fp32_tflops, Num(peaks, "fp32"));
    if (peaks["fp16_tensor"].IsDefined()) {
      ASSIGN_OR_RETURN(g.peak_fp16_tensor_tflops, Num(peaks, "fp16_tensor"));
    }
  }
  if (n["memory_bandwidth_gbps"].IsDefined()) {
    if (!g.sources.count("memory_bandwidth")) return Error(src, "no source for 'memory_bandwidth'");
    ASSIGN_OR_RETURN(g.memory_bandwidth_gbps, Num(n, "memory_bandwidth_gbps"));
  }
  if (YAML::Node mig = n["mig"]; mig.IsDefined()) {
    if (!mig.IsSequence() || mig.size() == 0) return Error(mig, "'mig' must be a non-empty list of profiles");
    if (!g.sources.count("mig")) return Error(src, "no source for 'mig'");
    if (!g.compute_capability.AtLeast({8, 0})) {
      return Error(mig, "MIG needs compute capability 8.0 or later, this GPU has " + g.compute_capability.ToString());
    }
    // The whole GPU's slice count differs by part (7 on A100/H100/H200, 4 on RTX PRO 6000), so it
    // is a fact of its own and never assumed.
    ASSIGN_OR_RETURN(g.mig_compute_slices, Int(n, "mig_compute_slices"));
    if (g.mig_compute_slices > 64) return Error(n["mig_compute_slices"], "'mig_compute_slices' is above 64");
    for (const auto& p : mig) {
      if (!p.IsMap()) return Error(p, "each MIG profile must be a mapping");
      ASSIGN_OR_RETURN(MigProfile profile, Mig(p, g));
      g.mig_profiles.push_back(std::move(profile));
    }
  }
  if (!n["mig"].IsDefined() && n["mig_compute_slices"].IsDefined()) {
    return Error(n["mig_compute_slices"], "'mig_compute_slices' without a 'mig' list of profiles");
  }
  c_.gpus_.push_back(std::move(g));
  return Status::OK();
}

// One MIG profile; its name must say what its fields say ("3g.71gb" = 3 slices, 71 GB).
Result<MigProfile> CatalogLoader::Mig(const YAML::Node& n, const GpuType& gpu) const {
  MigProfile p;
  ASSIGN_OR_RETURN(p.name, Str(n, "name"));
  ASSIGN_OR_RETURN(double gb, Num(n, "memory_gb"));
  p.memory_bytes = static_cast<uint64_t>(gb * 1073741824.0);
  ASSIGN_OR_RETURN(p.compute_slices, Int(n, "compute_slices"));
  ASSIGN_OR_RETURN(p.max_instances, Int(n, "max_instances"));
  std::string base = p.name;
  if (base.size() > 3 && base.compare(base.size() - 3, 3, "+me") == 0) {
    p.media_extensions = true;
    base.resize(base.size() - 3);
  }
  const std::size_t g = base.find("g.");
  const bool gb_suffix = base.size() > 2 && base.compare(base.size() - 2, 2, "gb") == 0;
  int64_t slices = 0, mem = 0;
  if (g != std::string::npos && gb_suffix && g + 4 <= base.size()) {
    slices = ParseInt64(base.substr(0, g)).value_or(0);
    mem = ParseInt64(base.substr(g + 2, base.size() - g - 4)).value_or(0);
  }
  if (slices <= 0 || mem <= 0) return Error(n, "MIG profile '" + p.name + "' is not written <slices>g.<memory>gb[+me]");
  if (slices != p.compute_slices || static_cast<double>(mem) != gb) {
    return Error(n, "MIG profile '" + p.name + "' says " + std::to_string(slices) + " slices and " +
                        std::to_string(mem) + " GB but its fields say compute_slices " +
                        std::to_string(p.compute_slices) + ", memory_gb " + n["memory_gb"].Scalar());
  }
  const int whole = gpu.mig_compute_slices;
  if (p.compute_slices > whole || p.compute_slices * p.max_instances > whole) {
    return Error(n, "MIG profile '" + p.name + "': " + std::to_string(p.max_instances) + " instances of " +
                        std::to_string(p.compute_slices) + " slices exceed the " + std::to_string(whole) +
                        " compute slices of this GPU (mig_compute_slices)");
  }
  if (p.memory_bytes > gpu.memory_bytes) {
    return Error(n, "MIG profile '" + p.name + "' has more memory than the whole GPU");
  }
  return p;
}

}  // namespace dfw
