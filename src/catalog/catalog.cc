// Catalog lookups: fixed machine types, family rules (n1-standard-8), custom types (custom_machine.cc), and where
// the catalog files are found.
#include "dfw/catalog/catalog.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dfw/common/file.h"
#include "dfw/common/strings.h"
#include "embedded.h"

namespace dfw {
namespace fs = std::filesystem;

const GpuType* Catalog::FindGpu(std::string_view name) const {
  for (const GpuType& g : gpus_) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::optional<MachineType> Catalog::FindMachine(std::string_view name) const {
  for (const MachineType& m : fixed_machines_) {
    if (m.name == name) return m;
  }
  if (auto custom = CustomMachine(name)) {
    if (!custom->ok()) return std::nullopt;
    return **custom;
  }
  std::vector<std::string> parts = Split(name, '-');
  if (parts.size() != 3) return std::nullopt;
  auto vcpus = ParseInt64(parts[2]);
  for (const Family& f : families_) {
    if (f.family != parts[0] || !vcpus) continue;
    auto variant = f.variants.find(parts[1]);
    if (variant == f.variants.end() || std::find(f.vcpus.begin(), f.vcpus.end(), *vcpus) == f.vcpus.end()) {
      return std::nullopt;
    }
    double gb = variant->second * static_cast<double>(*vcpus);
    return MachineType{std::string(name), f.family, static_cast<int>(*vcpus),
                       static_cast<uint64_t>(std::llround(gb * 1073741824.0)), "", 0, f.gpu_attachable};
  }
  return std::nullopt;
}

const N1GpuLimit* Catalog::FindN1Limit(std::string_view gpu, int gpus) const {
  for (const N1GpuLimit& l : n1_limits_) {
    if (l.gpu == gpu && l.gpus == gpus) return &l;
  }
  return nullptr;
}

Result<PriceTable> Catalog::Prices() const {
  if (!prices_file_) return NotFound("the catalog (" + origin_ + ") has no price table (a 'prices:' file)");
  return PriceTable::Parse(prices_file_->name, prices_file_->text);
}

const RetiredGpu* Catalog::FindRetiredGpu(std::string_view name) const {
  for (const RetiredGpu& r : retired_gpus_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

int Catalog::MpsClientLimit(const GpuType& gpu) const {
  return gpu.compute_capability.AtLeast(mps_.volta_cc) ? mps_.clients_volta : mps_.clients_pre_volta;
}

std::vector<std::string> Catalog::GpuNames() const {
  std::vector<std::string> out;
  for (const GpuType& g : gpus_) out.push_back(g.name);
  return out;
}

std::vector<std::string> Catalog::MachineNames() const {
  std::vector<std::string> out;
  for (const MachineType& m : fixed_machines_) out.push_back(m.name);
  for (const Family& f : families_) {
    for (const auto& [variant, gb] : f.variants) {
      for (int v : f.vcpus) out.push_back(f.family + "-" + variant + "-" + std::to_string(v));
    }
  }
  return out;
}

Result<Catalog> Catalog::LoadDir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("catalog directory '" + dir + "' does not exist");
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml") paths.push_back(entry.path());
  }
  if (ec) return ErrnoError("list catalog directory '" + dir + "'", ec.value());
  if (paths.empty()) return NotFound("catalog directory '" + dir + "' has no *.yaml files");
  std::sort(paths.begin(), paths.end());
  std::vector<CatalogFile> files;
  for (const fs::path& p : paths) {
    ASSIGN_OR_RETURN(std::string text, ReadWholeFile(p.string(), kCatalogFile));
    files.push_back({p.string(), std::move(text)});
  }
  ASSIGN_OR_RETURN(Catalog catalog, Make(files));
  catalog.origin_ = dir;
  return catalog;
}

Result<Catalog> Catalog::LoadEmbedded() {
  ASSIGN_OR_RETURN(Catalog catalog, Make(catalog_internal::EmbeddedCatalogFiles()));
  catalog.origin_ = "embedded";
  return catalog;
}

Result<Catalog> Catalog::Locate(const std::string& flag_dir) {
  if (!flag_dir.empty()) return LoadDir(flag_dir);
  if (const char* env = std::getenv("DFW_CATALOG_DIR"); env && *env) return LoadDir(env);
  std::error_code ec;
  if (fs::is_directory(DFW_CATALOG_SOURCE_DIR, ec)) return LoadDir(DFW_CATALOG_SOURCE_DIR);
  return LoadEmbedded();
}

}  // namespace dfw
