// The measured-efficiency file of `dfworker plan --gpu_efficiency_from` (estimate.h).
#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "dfw/common/json_text.h"
#include "dfw/plan/estimate.h"

namespace dfw {
namespace {

std::string EfficiencyFigure(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace

Result<GpuEfficiencyFile> ParseGpuEfficiencyFile(const std::string& path, const std::string& text) {
  using nlohmann::json;
  ASSIGN_OR_RETURN(json doc, ParseJsonText(path, text));
  const std::string make_one = " (scripts/gpu-check.sh writes one as gpu-efficiency.json on a GPU machine)";
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != kGpuEfficiencyFormat) {
    return InvalidArgument(path + ": not a GPU efficiency file: no \"format\": \"" + std::string(kGpuEfficiencyFormat) + "\"" +
                           make_one);
  }
  if (!doc.contains("format_version") || doc["format_version"] != 1) {
    return InvalidArgument(path + ": format_version " + (doc.contains("format_version") ? doc["format_version"].dump() : "missing") +
                           ": this dfworker reads version 1");
  }
  GpuEfficiencyFile file;
  auto string_field = [&](const json& obj, const char* key, bool required, std::string& out) -> Status {
    if (!obj.contains(key)) return required ? InvalidArgument(path + ": \"" + key + "\" is missing") : Status::OK();
    if (!obj[key].is_string() || (required && obj[key].get<std::string>().empty())) {
      return InvalidArgument(path + ": \"" + key + "\" must be a" + (required ? " non-empty" : "") + " string");
    }
    out = obj[key].get<std::string>();
    return Status::OK();
  };
  RETURN_IF_ERROR(string_field(doc, "gpu", true, file.gpu));
  RETURN_IF_ERROR(string_field(doc, "measured", false, file.measured));
  RETURN_IF_ERROR(string_field(doc, "note", false, file.note));
  if (!doc.contains("handlers") || !doc["handlers"].is_array() || doc["handlers"].empty()) {
    return InvalidArgument(path + ": \"handlers\" must be a non-empty list of measured handlers");
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < doc["handlers"].size(); ++i) {
    const json& h = doc["handlers"][i];
    const std::string where = path + ": handlers[" + std::to_string(i) + "]";
    if (!h.is_object()) return InvalidArgument(where + ": expected an object");
    GpuEfficiencyEntry e;
    Status s = string_field(h, "handler", true, e.handler);
    if (s.ok()) s = string_field(h, "pipeline", false, e.pipeline);
    if (s.ok()) s = string_field(h, "dtype", true, e.dtype);
    if (!s.ok()) return InvalidArgument(where + s.message().substr(path.size()));
    if (!seen.insert(e.handler).second) return InvalidArgument(where + ": handler '" + e.handler + "' is given twice");
    if (e.dtype != "float32") {
      return InvalidArgument(where + ": dtype '" + e.dtype + "': the estimate divides the FP32 peak, so only a float32 "
                             "measurement applies");
    }
    for (auto [key, out] : {std::pair{"achieved_gflops", &e.achieved_gflops}, std::pair{"peak_tflops", &e.peak_tflops},
                            std::pair{"efficiency", &e.efficiency}}) {
      if (!h.contains(key) || !h[key].is_number() || !(h[key].get<double>() > 0) || !std::isfinite(h[key].get<double>())) {
        return InvalidArgument(where + ": \"" + key + "\" must be a number above 0" +
                               (h.contains(key) ? " (it is " + h[key].dump() + ")" : " (it is missing)"));
      }
      *out = h[key].get<double>();
    }
    if (e.efficiency > 1) return InvalidArgument(where + ": efficiency " + EfficiencyFigure(e.efficiency) + " is above 1");
    const double ratio = e.achieved_gflops / (e.peak_tflops * 1000.0);
    if (std::fabs(ratio - e.efficiency) > 0.01 * ratio) {
      return InvalidArgument(where + ": efficiency " + EfficiencyFigure(e.efficiency) + " is not achieved_gflops / (peak_tflops x 1000) = " +
                             EfficiencyFigure(e.achieved_gflops) + " / " + EfficiencyFigure(e.peak_tflops * 1000.0) + " = " +
                             EfficiencyFigure(ratio));
    }
    file.entries.push_back(std::move(e));
  }
  return file;
}

}  // namespace dfw
