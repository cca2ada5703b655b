// Reading the catalog YAML. Every schema error names "file:line:col", the entry and the field.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "dfw/catalog/catalog.h"
#include "dfw/common/strings.h"

namespace dfw {

class CatalogLoader {
 public:
  explicit CatalogLoader(Catalog& catalog) : c_(catalog) {}

  Status LoadFile(const CatalogFile& file) {
    file_ = &file;
    YAML::Node root;
    try {
      root = YAML::Load(file.text);
    } catch (const YAML::Exception& e) {
      return InvalidArgument(Where(e.mark) + ": not valid YAML: " + e.msg);
    }
    try {
      if (root.IsNull()) return Status::OK();
      if (!root.IsMap()) return Error(root, "the top level must be a mapping");
      for (const auto& kv : root) {
        std::string key = kv.first.Scalar();
        if (key == "gpus") RETURN_IF_ERROR(Each(kv.second, key, &CatalogLoader::Gpu));
        else if (key == "accelerator_optimized") RETURN_IF_ERROR(Each(kv.second, key, &CatalogLoader::Machine));
        else if (key == "families") RETURN_IF_ERROR(Each(kv.second, key, &CatalogLoader::Family));
        else if (key == "n1_gpu_limits") RETURN_IF_ERROR(Each(kv.second, key, &CatalogLoader::N1Limit));
        else if (key == "retired_gpus") RETURN_IF_ERROR(Each(kv.second, key, &CatalogLoader::Retired));
        else if (key == "mps") RETURN_IF_ERROR(Mps(kv.second));
        else if (key == "sources") RETURN_IF_ERROR(Sources(kv.second).status());
        else if (key == "prices") RETURN_IF_ERROR(Prices(file));
        else {
          return Error(kv.first, "unknown top-level key '" + key +
                                     "' (allowed: gpus, retired_gpus, accelerator_optimized, families, n1_gpu_limits, mps, sources, prices)");
        }
      }
    } catch (const YAML::Exception& e) {
      return InvalidArgument(Where(e.mark) + ": " + e.msg);
    }
    return Status::OK();
  }

  // Cross-file checks, after every file is loaded.
  Status Finish() {
    if (c_.gpus_.empty()) return InvalidArgument("catalog defines no GPU types (expected a 'gpus:' list)");
    for (const MachineType& m : c_.fixed_machines_) {
      if (!c_.FindGpu(m.fixed_gpu)) {
        return InvalidArgument("catalog machine type '" + m.name + "' names unknown GPU '" + m.fixed_gpu + "'");
      }
    }
    for (const RetiredGpu& r : c_.retired_gpus_) {
      if (c_.FindGpu(r.name)) return InvalidArgument("catalog GPU '" + r.name + "' is both offered and retired");
    }
    for (const N1GpuLimit& l : c_.n1_limits_) {
      if (!c_.FindGpu(l.gpu)) return InvalidArgument("catalog n1_gpu_limits names unknown GPU '" + l.gpu + "'");
    }
    return Status::OK();
  }

 private:
  using Parser = Status (CatalogLoader::*)(const YAML::Node&);

  std::string Where(const YAML::Mark& mark) const {
    if (mark.line < 0) return file_->name;
    return file_->name + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }
  Status Error(const YAML::Node& node, const std::string& message) const {
    return InvalidArgument(Where(node.Mark()) + ": " + context_ + message);
  }

  Status Each(const YAML::Node& list, const std::string& key, Parser parse) {
    if (!list.IsSequence()) return Error(list, "'" + key + "' must be a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      context_ = key + "[" + std::to_string(i) + "]: ";
      if (!list[i].IsMap()) return Error(list[i], "each entry must be a mapping");
      RETURN_IF_ERROR((this->*parse)(list[i]));
    }
    context_.clear();
    return Status::OK();
  }

  Result<YAML::Node> Field(const YAML::Node& map, const char* key) const {
    YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) return Error(map, std::string("missing field '") + key + "'");
    return v;
  }
  Result<std::string> Str(const YAML::Node& map, const char* key) const {
    ASSIGN_OR_RETURN(YAML::Node v, Field(map, key));
    if (!v.IsScalar() || v.Scalar().empty()) return Error(v, std::string("'") + key + "' must be a non-empty string");
    return v.Scalar();
  }
  Result<double> Num(const YAML::Node& map, const char* key) const {
    ASSIGN_OR_RETURN(YAML::Node v, Field(map, key));
    auto d = v.IsScalar() ? ParseDouble(v.Scalar()) : std::nullopt;
    if (!d || *d <= 0 || !std::isfinite(*d)) {
      return Error(v, std::string("'") + key + "' must be a positive number, got '" + (v.IsScalar() ? v.Scalar() : "?") + "'");
    }
    return *d;
  }
  Result<int> Int(const YAML::Node& map, const char* key) const { return IntOf(Field(map, key), key); }
  Result<int> IntOf(Result<YAML::Node> node, const char* key) const {
    if (!node.ok()) return node.status();
    const YAML::Node& v = *node;
    auto n = v.IsScalar() ? ParseInt64(v.Scalar()) : std::nullopt;
    if (!n || *n <= 0 || *n > 100000) {
      return Error(v, std::string("'") + key + "' must be a positive whole number, got '" + (v.IsScalar() ? v.Scalar() : "?") + "'");
    }
    return static_cast<int>(*n);
  }
  Result<std::vector<int>> IntList(const YAML::Node& map, const char* key) const {
    ASSIGN_OR_RETURN(YAML::Node v, Field(map, key));
    if (!v.IsSequence() || v.size() == 0) return Error(v, std::string("'") + key + "' must be a non-empty list");
    std::vector<int> out;
    for (const auto& e : v) {
      ASSIGN_OR_RETURN(int n, IntOf(e, key));
      out.push_back(n);
    }
    return out;
  }
  Result<ComputeCapability> Cc(const YAML::Node& map, const char* key) const {
    ASSIGN_OR_RETURN(std::string s, Str(map, key));
    auto parts = Split(s, '.');
    auto major = parts.size() == 2 ? ParseInt64(parts[0]) : std::nullopt;
    auto minor = parts.size() == 2 ? ParseInt64(parts[1]) : std::nullopt;
    if (!major || !minor || *major < 1 || *major > 20 || *minor < 0 || *minor > 9) {
      return Error(map[key], std::string("'") + key + "' must be MAJOR.MINOR like \"8.9\", got '" + s + "'");
    }
    return ComputeCapability{static_cast<int>(*major), static_cast<int>(*minor)};
  }
  Result<std::map<std::string, std::string>> Sources(const YAML::Node& v) const {
    if (!v.IsMap()) return Error(v, "'sources' must map each fact to its source URL");
    std::map<std::string, std::string> out;
    for (const auto& kv : v) {
      if (!kv.second.IsScalar() || kv.second.Scalar().empty()) return Error(kv.second, "a source must be a string");
      out[kv.first.Scalar()] = kv.second.Scalar();
    }
    return out;
  }

  Status Gpu(const YAML::Node& n) {
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
  Result<MigProfile> Mig(const YAML::Node& n, const GpuType& gpu) const {
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

  Status Machine(const YAML::Node& n) {
    MachineType m;
    ASSIGN_OR_RETURN(m.name, Str(n, "name"));
    context_ = "machine type '" + m.name + "': ";
    ASSIGN_OR_RETURN(m.vcpus, Int(n, "vcpus"));
    ASSIGN_OR_RETURN(double gb, Num(n, "memory_gb"));
    m.memory_bytes = static_cast<uint64_t>(gb * 1073741824.0);
    ASSIGN_OR_RETURN(m.fixed_gpu, Str(n, "gpu"));
    ASSIGN_OR_RETURN(m.fixed_gpu_count, Int(n, "gpus"));
    m.family = m.name.substr(0, m.name.find('-'));
    c_.fixed_machines_.push_back(std::move(m));
    return Status::OK();
  }

  Status Family(const YAML::Node& n) {
    Catalog::Family f;
    ASSIGN_OR_RETURN(f.family, Str(n, "family"));
    context_ = "family '" + f.family + "': ";
    ASSIGN_OR_RETURN(std::string attach, Str(n, "gpu_attachable"));
    if (attach != "true" && attach != "false") return Error(n["gpu_attachable"], "'gpu_attachable' must be true or false");
    f.gpu_attachable = attach == "true";
    ASSIGN_OR_RETURN(f.vcpus, IntList(n, "vcpus"));
    ASSIGN_OR_RETURN(YAML::Node variants, Field(n, "variants"));
    if (!variants.IsMap()) return Error(variants, "'variants' must map a variant to GB per vCPU");
    for (const auto& kv : variants) {
      auto d = kv.second.IsScalar() ? ParseDouble(kv.second.Scalar()) : std::nullopt;
      if (!d || *d <= 0) return Error(kv.second, "variant '" + kv.first.Scalar() + "' needs a positive GB per vCPU");
      f.variants[kv.first.Scalar()] = *d;
    }
    if (YAML::Node custom = n["custom"]; custom.IsDefined()) {
      ASSIGN_OR_RETURN(double lo, Num(custom, "min_gb_per_vcpu"));
      ASSIGN_OR_RETURN(double hi, Num(custom, "max_gb_per_vcpu"));
      ASSIGN_OR_RETURN(f.custom_step_mb, Int(custom, "step_mb"));
      if (lo > hi) return Error(custom, "min_gb_per_vcpu is above max_gb_per_vcpu");
      f.custom_min_gb = lo;
      f.custom_max_gb = hi;
      // Optional; the defaults are N1's (1 or an even count up to 96).
      if (custom["min_vcpus"].IsDefined()) {
        ASSIGN_OR_RETURN(f.custom_min_vcpus, Int(custom, "min_vcpus"));
      }
      if (custom["max_vcpus"].IsDefined()) {
        ASSIGN_OR_RETURN(f.custom_max_vcpus, Int(custom, "max_vcpus"));
      }
      if (custom["vcpu_multiple"].IsDefined()) {
        ASSIGN_OR_RETURN(f.custom_vcpu_multiple, Int(custom, "vcpu_multiple"));
      }
      if (custom["extended_max_gb"].IsDefined()) {
        ASSIGN_OR_RETURN(double ext, Num(custom, "extended_max_gb"));
        f.custom_extended_max_gb = ext;
      }
      if (f.custom_min_vcpus > f.custom_max_vcpus) return Error(custom, "min_vcpus is above max_vcpus");
    }
    c_.families_.push_back(std::move(f));
    return Status::OK();
  }

  Status N1Limit(const YAML::Node& n) {
    N1GpuLimit l;
    ASSIGN_OR_RETURN(l.gpu, Str(n, "gpu"));
    ASSIGN_OR_RETURN(l.gpus, Int(n, "gpus"));
    ASSIGN_OR_RETURN(l.max_vcpus, Int(n, "max_vcpus"));
    ASSIGN_OR_RETURN(double gb, Num(n, "max_memory_gb"));
    l.max_memory_bytes = static_cast<uint64_t>(gb * 1073741824.0);
    c_.n1_limits_.push_back(std::move(l));
    return Status::OK();
  }

  Status Retired(const YAML::Node& n) {
    RetiredGpu r;
    ASSIGN_OR_RETURN(r.name, Str(n, "name"));
    context_ = "retired gpu '" + r.name + "': ";
    ASSIGN_OR_RETURN(r.display_name, Str(n, "display_name"));
    ASSIGN_OR_RETURN(r.reason, Str(n, "reason"));
    ASSIGN_OR_RETURN(r.source, Str(n, "source"));
    c_.retired_gpus_.push_back(std::move(r));
    return Status::OK();
  }

  // The price table is its own format (prices.h), read and checked here so that a bad one fails
  // the catalog load like any other config; Catalog::Prices() parses the kept text again.
  Status Prices(const CatalogFile& file) {
    if (c_.prices_file_) return InvalidArgument(file.name + ": a second price table (the first is in " + c_.prices_file_->name + ")");
    RETURN_IF_ERROR(PriceTable::Parse(file.name, file.text).status());
    c_.prices_file_ = file;
    return Status::OK();
  }

  Status Mps(const YAML::Node& n) {
    context_ = "mps: ";
    if (!n.IsMap()) return Error(n, "must be a mapping");
    ASSIGN_OR_RETURN(c_.mps_.min_cc, Cc(n, "min_compute_capability"));
    ASSIGN_OR_RETURN(c_.mps_.volta_cc, Cc(n, "volta_compute_capability"));
    ASSIGN_OR_RETURN(c_.mps_.clients_pre_volta, Int(n, "clients_per_device_pre_volta"));
    ASSIGN_OR_RETURN(c_.mps_.clients_volta, Int(n, "clients_per_device_volta"));
    context_.clear();
    return Status::OK();
  }

  Catalog& c_;
  const CatalogFile* file_ = nullptr;
  std::string context_;  // "gpus[3]: " prefix of error messages
};

Result<Catalog> Catalog::Make(const std::vector<CatalogFile>& files) {
  Catalog catalog;
  CatalogLoader loader(catalog);
  for (const CatalogFile& f : files) RETURN_IF_ERROR(loader.LoadFile(f));
  RETURN_IF_ERROR(loader.Finish());
  return catalog;
}

}  // namespace dfw
