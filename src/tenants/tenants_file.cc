// Strict parsing of the tenants file (tenants_file.h). yaml-cpp throws; every call into it is
// inside this file's try blocks and comes back as a Diagnostic.
#include "dfw/tenants/tenants_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "dfw/common/strings.h"
#include "dfw/common/yaml_document.h"

namespace dfw {
namespace {

constexpr const char* kInvalid = "tenants-file-invalid";

const std::vector<std::string> kTopKeys = {"options", "tenants", "borrowing"};
const std::vector<std::string> kTenantKeys = {"name",     "pipeline",      "gpu_memory",       "active_thread_percentage",
                                              "priority", "sdk_processes", "over_quota_weight"};

constexpr std::size_t kMaxNameLength = 24;
// The most vCPUs of any machine type in configs/machines.yaml (384): one SDK process per tenant at least.
constexpr std::size_t kMaxTenants = 384;  // the ledger keeps 32 bytes of a client name ("<tenant>/sdk-N")

class Parser {
 public:
  Parser(std::string_view text, std::string_view path) : path_(path) {
    for (const std::string& line : Split(text, '\n')) lines_.push_back(line);
  }

  Origin At(const YAML::Mark& mark) const {
    Origin o;
    const int line = mark.line < 0 ? 0 : mark.line;
    o.where = path_ + ":" + std::to_string(line + 1) + ":" + std::to_string((mark.column < 0 ? 0 : mark.column) + 1);
    o.text = static_cast<std::size_t>(line) < lines_.size() ? lines_[static_cast<std::size_t>(line)] : "";
    if (!o.text.empty() && o.text.back() == '\r') o.text.pop_back();
    o.value_offset = mark.column < 0 ? 0 : static_cast<std::size_t>(mark.column);
    return o;
  }

  void Error(const YAML::Mark& mark, std::size_t length, std::string message, std::string help,
             const char* code = kInvalid) {
    Origin o = At(mark);
    out_.push_back(MakeDiagnostic(Severity::kError, code, o.where + ": " + message, std::move(help), o, o.value_offset,
                                  length));
  }

  std::vector<Diagnostic>& out() { return out_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> lines_;
  std::vector<Diagnostic> out_;
};

std::string Field(const std::string& tenant, const std::string& key) {
  return (tenant.empty() ? std::string("tenant") : "tenant '" + tenant + "'") + ": field '" + key + "'";
}

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

// One `- name: ...` entry; every message names the tenant (by its name when it has one). Returns
// the tenant and whether it is valid (an invalid one still reserves its name, for duplicates).
std::pair<TenantSpec, bool> ParseTenant(Parser& p, const YAML::Node& node, int index) {
  TenantSpec t;
  if (!node.IsMap()) {
    p.Error(node.Mark(), 0, "tenant " + std::to_string(index + 1) + " is not a mapping",
            "write each tenant as '- name: ...' with the keys " + Join(kTenantKeys));
    return {t, false};
  }
  t.origin = p.At(node.Mark());
  if (const YAML::Node n = node["name"]; n && n.IsScalar()) t.name = n.Scalar();
  const std::string label = t.name.empty() ? "tenant " + std::to_string(index + 1) : t.name;
  bool ok = true;
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // Copies: the iterator's pair is a temporary (yaml-cpp), so no reference into it may outlive
    // the statement.
    const YAML::Node key_node = it->first;
    const YAML::Node value = it->second;
    const std::string key = key_node.IsScalar() ? key_node.Scalar() : std::string("?");
    const YAML::Mark vm = value.Mark();
    if (std::find(kTenantKeys.begin(), kTenantKeys.end(), key) == kTenantKeys.end()) {
      p.Error(key_node.Mark(), key.size(),
              "tenant '" + label + "': unknown key '" + key + "'" + DidYouMeanSuffix(key, kTenantKeys),
              "allowed keys: " + Join(kTenantKeys));
      ok = false;
      continue;
    }
    if (!value.IsScalar()) {
      p.Error(vm, 0, Field(label, key) + ": expected a single value", "");
      ok = false;
      continue;
    }
    const std::string v = value.Scalar();
    auto bad = [&](const std::string& why, const std::string& help) {
      p.Error(vm, v.size(), Field(label, key) + ": '" + v + "' " + why, help);
      ok = false;
    };
    if (key == "name") {
      if (!ValidName(v)) bad("is not a valid tenant name", "use 1 to 24 characters from a-z, 0-9, '_' and '-'");
    } else if (key == "pipeline") {
      if (v.empty()) bad("is empty", "the path of a pipeline file, e.g. pipelines/default.yaml");
      t.pipeline = v;
    } else if (key == "gpu_memory") {
      Result<GpuMemoryShare> share = ParseGpuMemoryShare(v);
      if (share.ok()) t.gpu_memory = *share;
      else bad(share.status().message(), "bytes with a unit such as 30GiB, or a fraction of the GPU such as 0.4");
    } else if (key == "active_thread_percentage") {
      std::optional<double> d = ParseDouble(v);
      if (!d || !(*d > 0) || *d > 100) bad("is not a percentage in (0, 100]", "e.g. 50 (MPS CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)");
      else t.active_thread_percentage = *d;
    } else if (key == "priority") {
      if (v == "normal") t.priority = TenantPriority::kNormal;
      else if (v == "below_normal") t.priority = TenantPriority::kBelowNormal;
      else bad("is not an MPS client priority" + DidYouMeanSuffix(v, {"normal", "below_normal"}),
               "normal or below_normal (CUDA_MPS_CLIENT_PRIORITY 0 or 1; MPS has no other)");
    } else if (key == "sdk_processes") {
      std::optional<int64_t> n = ParseInt64(v);
      if (!n || *n < 1 || *n > 1024) bad("is not a whole number of SDK processes >= 1", "e.g. 4");
      else t.sdk_processes = static_cast<int>(*n);
    } else if (key == "over_quota_weight") {
      std::optional<double> d = ParseDouble(v);
      if (!d || !(*d > 0) || !std::isfinite(*d)) bad("is not a weight > 0", "e.g. 1 (slots of finished tenants are shared in proportion)");
      else t.over_quota_weight = *d;
    }
  }
  for (const char* required : {"name", "pipeline", "gpu_memory"}) {
    if (!node[required]) {
      p.Error(node.Mark(), 0, "tenant '" + label + "': missing field '" + required + "'", "every tenant needs name, pipeline and gpu_memory");
      ok = false;
    }
  }
  return {t, ok};
}

}  // namespace

const char* TenantPriorityName(TenantPriority priority) {
  return priority == TenantPriority::kBelowNormal ? "below_normal" : "normal";
}

uint64_t GpuMemoryShare::BytesOf(uint64_t capacity_bytes) const {
  if (bytes) return *bytes;
  return static_cast<uint64_t>(std::floor(fraction * static_cast<double>(capacity_bytes)));
}

Result<GpuMemoryShare> ParseGpuMemoryShare(std::string_view text) {
  GpuMemoryShare share;
  share.text = std::string(text);
  std::string_view s = Trim(text);
  if (!s.empty() && s.back() == '%') {
    std::optional<double> pct = ParseDouble(Trim(s.substr(0, s.size() - 1)));
    if (!pct || !(*pct > 0) || *pct > 100) return InvalidArgument("is not a percentage of the GPU in (0%, 100%]");
    share.fraction = *pct / 100.0;
    return share;
  }
  std::size_t digits = 0;
  while (digits < s.size() && ((s[digits] >= '0' && s[digits] <= '9') || s[digits] == '.' || s[digits] == '-' || s[digits] == '+')) ++digits;
  std::string_view number = s.substr(0, digits), unit = Trim(s.substr(digits));
  std::optional<double> value = ParseDouble(number);
  if (!value || !std::isfinite(*value)) return InvalidArgument("is not a size or a fraction");
  if (!(*value > 0)) return InvalidArgument("is not a share > 0");
  if (unit.empty()) {
    if (*value > 1) return InvalidArgument("is a bare number above 1: a fraction must be in (0, 1] and bytes need a unit");
    share.fraction = *value;
    return share;
  }
  static const std::map<std::string, double, std::less<>> kUnits = {
      {"B", 1.0},           {"KB", 1e3},           {"MB", 1e6},           {"GB", 1e9},           {"TB", 1e12},
      {"KiB", 1024.0},      {"MiB", 1048576.0},    {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end()) return InvalidArgument("has an unknown unit '" + std::string(unit) + "' (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
  const double bytes = *value * it->second;
  if (bytes < 1 || bytes > 1e18) return InvalidArgument("is not a size between 1 B and 1 EB");
  share.bytes = static_cast<uint64_t>(bytes);
  return share;
}

TenantsParse ParseTenantsFile(std::string_view text, std::string_view path) {
  TenantsParse result;
  result.file.path = std::string(path);
  result.file.text = std::string(text);
  Parser p(text, path);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    p.Error(e.mark, 0, "not valid YAML: " + e.msg, "");
    result.diagnostics = std::move(p.out());
    return result;
  }
  try {
    // The checks every YAML file gets (as the pipeline loader's): a repeated key would silently
    // keep its first value.
    if (std::optional<YamlProblem> problem = FindYamlProblem(root)) {
      YAML::Mark at;
      at.line = problem->line < 0 ? 0 : problem->line;
      at.column = problem->line < 0 ? 0 : problem->column;
      p.Error(at, 0, problem->message, "write each key once");
      result.diagnostics = std::move(p.out());
      return result;
    }
    if (!root.IsMap()) {
      p.Error(root.Mark(), 0, "expected a mapping with a 'tenants:' list", "see docs/tenants.md");
      result.diagnostics = std::move(p.out());
      return result;
    }
    for (auto it = root.begin(); it != root.end(); ++it) {
      const YAML::Node key_node = it->first;
      const std::string key = key_node.IsScalar() ? key_node.Scalar() : std::string("?");
      if (std::find(kTopKeys.begin(), kTopKeys.end(), key) == kTopKeys.end()) {
        p.Error(key_node.Mark(), key.size(), "unknown top-level key '" + key + "'" + DidYouMeanSuffix(key, kTopKeys),
                "allowed: options (the shared worker's flags), tenants and borrowing");
      }
    }
    if (const YAML::Node b = root["borrowing"]; b) {
      const std::string v = b.IsScalar() ? b.Scalar() : std::string();
      if (v == "true" || v == "false") {
        result.file.borrowing = v == "true";
      } else {
        p.Error(b.Mark(), v.size(), "field 'borrowing': expected true or false, got '" + (b.IsScalar() ? v : "a " + std::string(b.IsMap() ? "mapping" : "list")) + "'",
                "borrowing: false keeps every tenant at its guaranteed sdk_processes");
      }
    }
    const YAML::Node list = root["tenants"];
    if (!list || !list.IsSequence() || list.size() == 0) {
      p.Error(list ? list.Mark() : root.Mark(), 0, "'tenants:' must be a non-empty list", "add '- name: ...' entries");
      result.diagnostics = std::move(p.out());
      return result;
    }
    // Before any entry is read: every tenant runs at least one SDK process, and no machine type
    // has more vCPUs than kMaxTenants, so a longer list could never be admitted.
    if (list.size() > kMaxTenants) {
      p.Error(list.Mark(), 0,
              "'tenants:' lists " + std::to_string(list.size()) + " tenants, more than any worker could admit (" +
                  std::to_string(kMaxTenants) + ": each tenant needs at least one SDK process, one per vCPU)",
              "split the tenants over several workers");
      result.diagnostics = std::move(p.out());
      return result;
    }
    std::map<std::string, std::string> where_named;  // name -> where first defined
    double fractions = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto [spec, ok] = ParseTenant(p, list[i], static_cast<int>(i));
      TenantSpec* t = &spec;
      if (t->name.empty()) continue;
      if (auto prev = where_named.find(t->name); prev != where_named.end()) {
        p.Error(list[i]["name"].Mark(), t->name.size(),
                "tenant '" + t->name + "': field 'name': duplicate (first defined at " + prev->second + ")",
                "give every tenant its own name (it names the job subdirectory)");
        continue;
      }
      where_named[t->name] = t->origin.where;
      if (!ok) continue;
      if (!t->gpu_memory.bytes) {
        fractions += t->gpu_memory.fraction;
        if (fractions > 1.0 + 1e-9) {
          p.Error(list[i]["gpu_memory"].Mark(), t->gpu_memory.text.size(),
                  "tenant '" + t->name + "': field 'gpu_memory': the fractions of the GPU add up to " +
                      std::to_string(static_cast<int>(std::lround(fractions * 100))) + "% with this tenant, over 100%",
                  "lower the fractions so that they add up to at most 1", "tenants-budget-over-100");
        }
      }
      result.file.tenants.push_back(std::move(*t));
    }
  } catch (const YAML::Exception& e) {
    p.Error(e.mark, 0, "reading the tenants file: " + e.msg, "");
  }
  result.diagnostics = std::move(p.out());
  return result;
}

}  // namespace dfw
