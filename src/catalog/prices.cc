// Reading a price table (prices.h). Every error names "file:line:col", the region and the field.
#include "dfw/catalog/prices.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "dfw/common/file.h"
#include "dfw/common/strings.h"

namespace dfw {
namespace {

constexpr std::size_t kMaxBytes = std::size_t{4} << 20;
constexpr std::size_t kMaxRegions = 1000;
constexpr std::size_t kMaxGpus = 200;
constexpr std::string_view kUnverified = "(unverified)";

bool IsDate(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  const int month = (s[5] - '0') * 10 + (s[6] - '0');
  const int day = (s[8] - '0') * 10 + (s[9] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

}  // namespace

class PriceParser {
 public:
  PriceParser(const std::string& name, PriceTable& table) : name_(name), t_(table) {}

  Status Parse(const std::string& text) {
    if (text.size() > kMaxBytes) return InvalidArgument(name_ + ": over 4 MiB; a price table is a few KB");
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return InvalidArgument(Where(e.mark) + ": not valid YAML: " + e.msg);
    }
    try {
      if (!root.IsMap()) return Error(root, "the top level must be a mapping with a 'prices:' list");
      YAML::Node list = root["prices"];
      if (!list.IsDefined()) return Error(root, "no 'prices:' list");
      if (!list.IsSequence() || list.size() == 0) return Error(list, "'prices' must be a non-empty list of regions");
      if (list.size() > kMaxRegions) return Error(list, "more than 1000 regions");
      for (std::size_t i = 0; i < list.size(); ++i) {
        context_ = "prices[" + std::to_string(i) + "]: ";
        RETURN_IF_ERROR(Region(list[i]));
      }
    } catch (const YAML::Exception& e) {
      return InvalidArgument(Where(e.mark) + ": " + context_ + e.msg);
    }
    return Status::OK();
  }

 private:
  std::string Where(const YAML::Mark& mark) const {
    if (mark.line < 0) return name_;
    return name_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }
  Status Error(const YAML::Node& node, const std::string& message) const {
    return InvalidArgument(Where(node.Mark()) + ": " + context_ + message);
  }

  Result<std::string> Str(const YAML::Node& map, const char* key, bool required = true) const {
    YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) {
      if (!required) return std::string();
      return Error(map, std::string("missing field '") + key + "'");
    }
    if (!v.IsScalar() || v.Scalar().empty()) return Error(v, std::string("'") + key + "' must be a non-empty string");
    return v.Scalar();
  }

  // "0.056" or "0.056 (unverified)": a positive, finite rate.
  Result<Rate> RateOf(const YAML::Node& v, const std::string& what) const {
    if (!v.IsScalar()) return Error(v, "'" + what + "' must be a number (optionally followed by (unverified))");
    std::string_view text = Trim(v.Scalar());
    Rate r;
    r.where = Where(v.Mark());
    if (text.size() > kUnverified.size() && text.substr(text.size() - kUnverified.size()) == kUnverified) {
      r.verified = false;
      text = Trim(text.substr(0, text.size() - kUnverified.size()));
    }
    auto d = ParseDouble(text);
    if (!d || !std::isfinite(*d) || *d <= 0 || *d > 1e6) {
      return Error(v, "'" + what + "' must be a positive rate per hour, got '" + v.Scalar() + "'");
    }
    r.per_hour = *d;
    return r;
  }

  Result<WorkerRates> Worker(const YAML::Node& map, const char* key) const {
    YAML::Node w = map[key];
    if (!w.IsDefined()) return Error(map, std::string("missing field '") + key + "' (vcpu_hour and memory_gb_hour)");
    if (!w.IsMap()) return Error(w, std::string("'") + key + "' must map vcpu_hour and memory_gb_hour to rates");
    for (const auto& kv : w) {
      const std::string k = kv.first.Scalar();
      if (k != "vcpu_hour" && k != "memory_gb_hour") {
        return Error(kv.first, "unknown key '" + k + "' in '" + key + "' (allowed: vcpu_hour, memory_gb_hour)");
      }
    }
    WorkerRates out;
    for (auto [field, rate] : {std::pair{"vcpu_hour", &out.vcpu_hour}, std::pair{"memory_gb_hour", &out.memory_gb_hour}}) {
      YAML::Node v = w[field];
      if (!v.IsDefined() || v.IsNull()) return Error(w, std::string("'") + key + "' has no '" + field + "'");
      ASSIGN_OR_RETURN(*rate, RateOf(v, std::string(key) + "." + field));
    }
    return out;
  }

  Status Region(const YAML::Node& n) {
    if (!n.IsMap()) return Error(n, "each region must be a mapping");
    RegionPrices r;
    ASSIGN_OR_RETURN(r.region, Str(n, "region"));
    context_ = "region '" + r.region + "': ";
    for (const auto& kv : n) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (k != "region" && k != "currency" && k != "source" && k != "read" && k != "batch" && k != "streaming" &&
          k != "gpu_hour") {
        return Error(kv.first, "unknown key '" + k + "' (allowed: region, currency, source, read, batch, streaming, gpu_hour)");
      }
    }
    if (t_.Find(r.region)) return Error(n["region"], "given twice");
    ASSIGN_OR_RETURN(r.currency, Str(n, "currency", /*required=*/false));
    if (r.currency.empty()) r.currency = "USD";
    ASSIGN_OR_RETURN(r.source, Str(n, "source"));
    ASSIGN_OR_RETURN(r.read, Str(n, "read"));
    if (!IsDate(r.read)) return Error(n["read"], "'read' must be the date the source was read, YYYY-MM-DD, got '" + r.read + "'");
    ASSIGN_OR_RETURN(r.batch, Worker(n, "batch"));
    if (n["streaming"].IsDefined()) {
      ASSIGN_OR_RETURN(WorkerRates streaming, Worker(n, "streaming"));
      r.streaming = streaming;
    }
    if (YAML::Node gpus = n["gpu_hour"]; gpus.IsDefined()) {
      if (!gpus.IsMap()) return Error(gpus, "'gpu_hour' must map GPU types to rates per GPU-hour");
      if (gpus.size() > kMaxGpus) return Error(gpus, "more than 200 GPU types");
      for (const auto& kv : gpus) {
        const std::string gpu = kv.first.IsScalar() ? kv.first.Scalar() : "";
        if (gpu.empty()) return Error(kv.first, "a GPU type must be a string");
        if (r.gpu_hour.count(gpu)) return Error(kv.first, "GPU type '" + gpu + "' given twice");
        ASSIGN_OR_RETURN(Rate rate, RateOf(kv.second, "gpu_hour." + gpu));
        r.gpu_hour[gpu] = rate;
      }
    }
    t_.regions_.push_back(std::move(r));
    return Status::OK();
  }

  const std::string& name_;
  PriceTable& t_;
  std::string context_;
};

Result<PriceTable> PriceTable::Parse(const std::string& name, const std::string& text) {
  PriceTable table;
  table.origin_ = name;
  PriceParser parser(name, table);
  RETURN_IF_ERROR(parser.Parse(text));
  return table;
}

Result<PriceTable> PriceTable::Load(const std::string& path) {
  // A FIFO or device named by --prices is refused at once (never read until memory runs out).
  Result<std::string> text = ReadWholeFile(path, FileKind{"price table (a few KB in practice)", kMaxBytes});
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
    return NotFound("price file '" + path + "' cannot be read (" + text.status().message() + ")");
  }
  if (!text.ok()) return text.status();
  return Parse(path, *text);
}

const RegionPrices* PriceTable::Find(std::string_view region) const {
  for (const RegionPrices& r : regions_) {
    if (r.region == region) return &r;
  }
  return nullptr;
}

std::vector<std::string> PriceTable::Regions() const {
  std::vector<std::string> out;
  for (const RegionPrices& r : regions_) out.push_back(r.region);
  return out;
}

}  // namespace dfw
