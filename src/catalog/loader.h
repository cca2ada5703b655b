// Internal: the catalog YAML reader shared by load.cc (files, machines, families, limits, MPS,
// prices) and load_gpu.cc (GPU types and their MIG profiles). Every schema error names
// "file:line:col", the entry and the field.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/common/strings.h"

namespace dfw {

class CatalogLoader {
 public:
  explicit CatalogLoader(Catalog& catalog) : c_(catalog) {}

  // The file's YAML, or its parse error naming file:line:col. Uses no loader state: files parse
  // on several threads at once (Catalog::Make).
  static Result<YAML::Node> Parse(const CatalogFile& file) {
    try {
      return YAML::Load(file.text);
    } catch (const YAML::Exception& e) {
      return InvalidArgument(WhereIn(file, e.mark) + ": not valid YAML: " + e.msg);
    }
  }

  // The entries of `file`, parsed as `root` (Parse), into the catalog.
  Status LoadFile(const CatalogFile& file, const YAML::Node& root) {
    file_ = &file;
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

  static std::string WhereIn(const CatalogFile& file, const YAML::Mark& mark) {
    if (mark.line < 0) return file.name;
    return file.name + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }
  std::string Where(const YAML::Mark& mark) const { return WhereIn(*file_, mark); }
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

  // Entries, one per list item (load_gpu.cc: Gpu, Mig; load.cc: the others).
  Status Gpu(const YAML::Node& n);
  // One MIG profile; its name must say what its fields say ("3g.71gb" = 3 slices, 71 GB).
  Result<MigProfile> Mig(const YAML::Node& n, const GpuType& gpu) const;
  Status Machine(const YAML::Node& n);
  Status Family(const YAML::Node& n);
  Status N1Limit(const YAML::Node& n);
  Status Retired(const YAML::Node& n);
  // The price table is its own format (prices.h), read and checked here so that a bad one fails
  // the catalog load like any other config; Catalog::Prices() parses the kept text again.
  Status Prices(const CatalogFile& file);
  Status Mps(const YAML::Node& n);

  Catalog& c_;
  const CatalogFile* file_ = nullptr;
  std::string context_;  // "gpus[3]: " prefix of error messages
};

}  // namespace dfw
