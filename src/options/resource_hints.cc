// Resource hints (reference §4): `--resource_hints KEY=VALUE` (and the options: block), Beam YAML's
// `resource_hints:` on the pipeline and on each transform. One grammar for all of them; the YAML
// position is the origin of a hint written in the pipeline file.
//
// Nesting is Beam's (apache_beam/transforms/resources.py): the pipeline level applies to every
// transform, a transform's own accelerator wins over it (innermost), min_ram takes the maximum (and
// so does cpu_count). One dfworker run is one worker VM, so the accelerators asked for must agree:
// where Dataflow's right fitting would start a second worker pool, the conflict is an error.
#include <algorithm>
#include <cstdint>

#include "derive.h"
#include "dfw/common/strings.h"
#include "dfw/options/accelerator.h"

namespace dfw::options_internal {
namespace {

const std::vector<std::string> kKnownHints = {"accelerator", "min_ram", "cpu_count"};

// One scope's hints (the pipeline level, or one transform's own), parsed.
struct Parsed {
  std::optional<AcceleratorSpec> accelerator;
  std::optional<uint64_t> min_ram_bytes;
  std::optional<OptionValue> min_ram;  // as written, origin at the value
  std::optional<int> cpu_count;
  std::optional<OptionValue> cpu_count_value;
};

void Syntax(PipelineOptions& o, const Origin& origin, std::size_t offset, std::size_t length, std::string message,
            std::string help) {
  o.diagnostics.push_back(
      MakeDiagnostic(Severity::kError, "option-syntax", std::move(message), std::move(help), origin, offset, length));
}

// Parses hint `key` = `value`, which starts at byte `offset` of origin.text, into `out` (the last
// accelerator wins, min_ram and cpu_count keep the maximum). `yaml` picks the spelling of the help.
void ParseHint(PipelineOptions& o, const std::string& key, std::string_view value, std::size_t offset,
               const Origin& origin, bool yaml, Parsed& out) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
    ++offset;
  }
  const std::string sep = yaml ? ": " : "=";
  Origin at = origin;
  at.value_offset = offset;
  if (key == "accelerator") {
    out.accelerator = ParseAcceleratorSpec(value, offset, AcceleratorForm::kResourceHint, origin, o.diagnostics);
  } else if (key == "min_ram") {
    auto bytes = ParseByteSize(value);
    if (!bytes) {
      Syntax(o, origin, offset, value.size(), "resource hint min_ram '" + std::string(value) + "' is not a size",
             "write e.g. min_ram" + sep + "16GB, min_ram" + sep + "1.5GB or min_ram" + sep +
                 "8GiB (units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; a plain number is bytes)");
    } else if (!out.min_ram_bytes || *bytes > *out.min_ram_bytes) {
      out.min_ram_bytes = *bytes;
      out.min_ram = OptionValue{std::string(value), at};
    }
  } else if (key == "cpu_count") {
    auto n = ParseInt64(std::string(Trim(value)));
    if (!n || *n < 1 || *n > 4096) {
      Syntax(o, origin, offset, value.size(),
             "resource hint cpu_count '" + std::string(value) + "' is not a whole number from 1 to 4096",
             "write e.g. cpu_count" + sep + "4 (the vCPUs the transform needs on its worker)");
    } else if (!out.cpu_count || *n > *out.cpu_count) {
      out.cpu_count = static_cast<int>(*n);
      out.cpu_count_value = OptionValue{std::string(value), at};
    }
  }
}

// Worker-level aggregates: min_ram and cpu_count are per-worker lower bounds, so the largest counts.
void RaiseWorkerMinimums(PipelineOptions& o, const Parsed& p) {
  if (p.min_ram_bytes && (!o.min_ram_bytes || *p.min_ram_bytes > *o.min_ram_bytes)) {
    o.min_ram_bytes = p.min_ram_bytes;
    o.min_ram_origin = p.min_ram;
  }
  if (p.cpu_count && (!o.cpu_count || *p.cpu_count > *o.cpu_count)) {
    o.cpu_count = p.cpu_count;
    o.cpu_count_origin = p.cpu_count_value;
  }
}

std::string Describe(const AcceleratorSpec& a) { return "type:" + a.gpu_type + ";count:" + std::to_string(a.count); }

std::string Who(const std::string& transform) {
  return transform.empty() ? std::string("the pipeline level") : "transform '" + transform + "'";
}

}  // namespace

void DeriveResourceHints(PipelineOptions& o) {
  // The pipeline level: `pipeline: resource_hints` first, then the flags and the options: block in
  // the order given, so the command line's accelerator (the last one) wins.
  Parsed pipeline;
  for (const YamlResourceHint& h : o.yaml_resource_hints) {
    if (h.transform.empty()) ParseHint(o, h.key, h.value.value, h.value.origin.value_offset, h.value.origin, true, pipeline);
  }
  for (const OptionValue& v : o.resource_hints) {
    std::size_t eq = v.value.find('=');
    std::string key = v.value.substr(0, eq);
    if (eq == std::string::npos || std::find(kKnownHints.begin(), kKnownHints.end(), key) == kKnownHints.end()) {
      Syntax(o, v.origin, v.origin.value_offset, key.size(),
             "resource hint '" + v.value + "' is not KEY=VALUE with a known key" + DidYouMeanSuffix(key, kKnownHints),
             "known hints: accelerator=\"type:<gpu>;count:<n>;...\", min_ram=<size>, cpu_count=<n>");
      continue;
    }
    ParseHint(o, key, std::string_view(v.value).substr(eq + 1), v.origin.value_offset + eq + 1, v.origin, false, pipeline);
  }
  o.accelerator_hint = pipeline.accelerator;
  RaiseWorkerMinimums(o, pipeline);
  if (pipeline.accelerator || pipeline.min_ram_bytes || pipeline.cpu_count) {
    o.pipeline_hints = TransformResourceHints{"", "", pipeline.accelerator, pipeline.accelerator.has_value(),
                                              pipeline.min_ram_bytes, pipeline.cpu_count};
  }

  // Each transform's own hints, merged with the pipeline level.
  std::vector<Parsed> parsed;
  for (const YamlResourceHint& h : o.yaml_resource_hints) {
    if (h.transform.empty()) continue;
    if (o.transform_hints.empty() || o.transform_hints.back().where != h.transform_where) {
      o.transform_hints.push_back(TransformResourceHints{h.transform, h.transform_where, {}, false, {}, {}});
      parsed.emplace_back();
    }
    ParseHint(o, h.key, h.value.value, h.value.origin.value_offset, h.value.origin, true, parsed.back());
  }
  const TransformResourceHints* first_gpu = nullptr;
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    TransformResourceHints& t = o.transform_hints[i];
    const Parsed& p = parsed[i];
    t.own_accelerator = p.accelerator.has_value();
    t.accelerator = p.accelerator ? p.accelerator : pipeline.accelerator;
    t.min_ram_bytes = std::max(p.min_ram_bytes, pipeline.min_ram_bytes);  // nullopt sorts first
    t.cpu_count = std::max(p.cpu_count, pipeline.cpu_count);
    RaiseWorkerMinimums(o, p);
    if (!t.own_accelerator || t.accelerator->gpu_type.empty()) continue;
    // One worker, one accelerator: every accelerator asked for (the pipeline's, each transform's) must agree.
    const AcceleratorSpec& mine = *t.accelerator;
    const AcceleratorSpec* other = first_gpu ? &*first_gpu->accelerator : pipeline.accelerator ? &*pipeline.accelerator : nullptr;
    const std::string other_who = first_gpu ? Who(first_gpu->transform) + " (" + first_gpu->where + ")"
                                            : std::string("the pipeline-level hint");
    if (other && !other->gpu_type.empty() && (other->gpu_type != mine.gpu_type || other->count != mine.count)) {
      o.diagnostics.push_back(MakeDiagnostic(
          Severity::kError, "resource-hints-conflict",
          Who(t.transform) + " asks for accelerator " + Describe(mine) + " but " + other_who + " asks for " +
              Describe(*other) + " (" + other->origin.where +
              "): a dfworker run is one worker VM with one accelerator, where Dataflow's right fitting would "
              "start a second worker pool",
          "give the transforms the same accelerator hint, or keep the hint only on the transform that needs "
          "the GPU (RunInference)",
          mine.origin, mine.origin.value_offset, mine.origin.text.size() - std::min(mine.origin.value_offset, mine.origin.text.size())));
      continue;
    }
    if (!first_gpu) first_gpu = &t;
  }
  // The innermost hint wins: the accelerator a transform asked for is the worker's (right fitting).
  if (first_gpu) o.accelerator_hint = first_gpu->accelerator;
}

}  // namespace dfw::options_internal
