// Reading the catalog YAML: the files, machine types, families, N1 limits, retired GPUs, MPS limits
// and the price table (GPU types: load_gpu.cc). Every schema error names "file:line:col", the
// entry and the field.
#include <algorithm>
#include <future>
#include <set>

#include "loader.h"

namespace dfw {

Status CatalogLoader::Machine(const YAML::Node& n) {
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

Status CatalogLoader::Family(const YAML::Node& n) {
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

Status CatalogLoader::N1Limit(const YAML::Node& n) {
  N1GpuLimit l;
  ASSIGN_OR_RETURN(l.gpu, Str(n, "gpu"));
  ASSIGN_OR_RETURN(l.gpus, Int(n, "gpus"));
  ASSIGN_OR_RETURN(l.max_vcpus, Int(n, "max_vcpus"));
  ASSIGN_OR_RETURN(double gb, Num(n, "max_memory_gb"));
  l.max_memory_bytes = static_cast<uint64_t>(gb * 1073741824.0);
  c_.n1_limits_.push_back(std::move(l));
  return Status::OK();
}

Status CatalogLoader::Retired(const YAML::Node& n) {
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
Status CatalogLoader::Prices(const CatalogFile& file) {
  if (c_.prices_file_) return InvalidArgument(file.name + ": a second price table (the first is in " + c_.prices_file_->name + ")");
  RETURN_IF_ERROR(PriceTable::Parse(file.name, file.text).status());
  c_.prices_file_ = file;
  return Status::OK();
}

Status CatalogLoader::Mps(const YAML::Node& n) {
  context_ = "mps: ";
  if (!n.IsMap()) return Error(n, "must be a mapping");
  ASSIGN_OR_RETURN(c_.mps_.min_cc, Cc(n, "min_compute_capability"));
  ASSIGN_OR_RETURN(c_.mps_.volta_cc, Cc(n, "volta_compute_capability"));
  ASSIGN_OR_RETURN(c_.mps_.clients_pre_volta, Int(n, "clients_per_device_pre_volta"));
  ASSIGN_OR_RETURN(c_.mps_.clients_volta, Int(n, "clients_per_device_volta"));
  context_.clear();
  return Status::OK();
}

Result<Catalog> Catalog::Make(const std::vector<CatalogFile>& files) {
  // Parsing is most of a load (yaml-cpp: 4.4 of ~7 ms for the shipped files here, gpus.yaml the
  // longest), and every dfworker run pays it before its first SDK process starts: the files parse
  // at once, each on its own thread, then load in order (so errors come in file order, as before).
  std::vector<std::future<Result<YAML::Node>>> parsed;
  parsed.reserve(files.size());
  for (std::size_t i = 1; i < files.size(); ++i) {
    parsed.push_back(std::async(std::launch::async, [&files, i] { return CatalogLoader::Parse(files[i]); }));
  }
  Catalog catalog;
  CatalogLoader loader(catalog);
  for (std::size_t i = 0; i < files.size(); ++i) {
    // The first on this thread, meanwhile; a future still running when an error returns early
    // is waited for by its destructor.
    ASSIGN_OR_RETURN(YAML::Node root, i == 0 ? CatalogLoader::Parse(files[0]) : parsed[i - 1].get());
    RETURN_IF_ERROR(loader.LoadFile(files[i], root));
  }
  RETURN_IF_ERROR(loader.Finish());
  return catalog;
}

}  // namespace dfw
