// The speed and cost estimate of one configuration (estimate.h). Every figure that enters the
// arithmetic is also written to Estimate::inputs, so the printed estimate can be redone by hand.
#include "dfw/plan/estimate.h"

#include <algorithm>
#include <cstdio>

namespace dfw {
namespace {

std::string Num(double v, const char* fmt = "%.4g") {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string RateText(const Rate& r) { return Num(r.per_hour, "%.6g") + (r.verified ? "" : " (unverified)"); }

void Speed(const EstimateShape& s, const std::vector<ModelRequirement>& models, const EstimateInputs& in, Estimate& e) {
  const GpuType* gpu = s.gpu;
  if (!gpu || gpu->peak_fp32_tflops <= 0 || gpu->memory_bandwidth_gbps <= 0) {
    e.speed_unknown = gpu ? "no datasheet peaks for " + gpu->name + " in the catalog" : "no GPU";
    return;
  }
  const double share = s.gpus * s.gpu_share;
  const double flops_per_s = gpu->peak_fp32_tflops * 1e12 * share;
  const double bytes_per_s = gpu->memory_bandwidth_gbps * 1e9 * share * in.bandwidth_efficiency;
  e.inputs.push_back(gpu->name + ": FP32 peak " + Num(gpu->peak_fp32_tflops) + " TFLOP/s, bandwidth " +
                     Num(gpu->memory_bandwidth_gbps) + " GB/s (" + gpu->sources.at("peak_tflops") + ")");
  e.inputs.push_back("GPUs per worker " + std::to_string(s.gpus) +
                     (s.gpu_share < 1 ? " x MIG share " + Num(s.gpu_share, "%.3g") : std::string()) +
                     "; bandwidth efficiency " + Num(in.bandwidth_efficiency, "%.2g") + " (assumed)");
  double compute_t = 0, bandwidth_t = 0, roofline_t = 0;
  int with_work = 0;
  for (const ModelRequirement& m : models) {
    if (!m.work) continue;
    ++with_work;
    const ModelWork& w = *m.work;
    const auto measured = in.gpu_efficiency ? in.gpu_efficiency_by_model.end() : in.gpu_efficiency_by_model.find(m.name);
    const bool use_measured = measured != in.gpu_efficiency_by_model.end();
    const double eff = in.gpu_efficiency ? *in.gpu_efficiency : use_measured ? measured->second.efficiency : w.default_efficiency;
    const double c = w.flops_per_record / (flops_per_s * eff);
    const double reads = w.weight_reads_per_record > 0 ? w.weight_reads_per_record : 1.0 / static_cast<double>(w.batch_size);
    const double bytes = static_cast<double>(m.bytes) * reads + w.activation_bytes_per_record;
    const double b = bytes / bytes_per_s;
    compute_t += c;
    bandwidth_t += b;
    roofline_t += std::max(c, b);
    e.inputs.push_back("model '" + m.name + "': " + Num(w.flops_per_record) + " FLOPs/record (" + w.how + "), " +
                       Num(bytes) + " B/record (weights " + Num(static_cast<double>(m.bytes)) + " B" +
                       (w.weight_reads_per_record > 0 ? " x " + Num(w.weight_reads_per_record) + " reads"
                                                      : " / batch " + std::to_string(w.batch_size)) +
                       " + activations " + Num(w.activation_bytes_per_record) +
                       " B), " + w.dtype + ", efficiency " + Num(eff, "%.2g") +
                       (in.gpu_efficiency ? std::string(" (--gpu_efficiency)")
                        : use_measured    ? " (" + measured->second.how + ")"
                                          : std::string(" (handler default, not measured)")));
  }
  if (with_work > 0 && !(roofline_t > 0)) {
    e.speed_unknown = "the models' work per record is zero";
    e.inputs.clear();
    return;
  }
  if (with_work == 0) {
    e.speed_unknown = models.empty() ? "the pipeline runs no model" : "no model gives its work per record";
    e.inputs.clear();
    return;
  }
  e.gpu_compute_rps = 1.0 / compute_t;
  e.gpu_bandwidth_rps = 1.0 / bandwidth_t;
  e.gpu_rps = 1.0 / roofline_t;
  e.cpu_rps = s.vcpus * in.cpu_records_per_vcpu_second;
  e.inputs.push_back("CPU: " + std::to_string(s.vcpus) + " vCPUs x " + Num(in.cpu_records_per_vcpu_second) +
                     " records/s per vCPU (" +
                     (!in.cpu_rate_given           ? std::string("assumed default; measure it with --cpu_rate_from JOB_DIR or BENCH.json")
                      : in.cpu_rate_how.empty()    ? std::string("--cpu_rate")
                                                   : in.cpu_rate_how) +
                     ")");
  e.speed_known = true;
  if (e.cpu_rps > 0 && e.cpu_rps < e.gpu_rps) {
    e.records_per_second = e.cpu_rps;
    e.bottleneck = Bottleneck::kCpu;
    e.gpu_wait = 1.0 - e.cpu_rps / e.gpu_rps;
  } else {
    e.records_per_second = e.gpu_rps;
    e.bottleneck = compute_t >= bandwidth_t ? Bottleneck::kGpuCompute : Bottleneck::kGpuMemoryBandwidth;
  }
}

void Cost(const EstimateShape& s, const EstimateInputs& in, Estimate& e) {
  if (!s.billable) return void(e.price_unknown = "MIG slices are not a Dataflow configuration");
  if (!in.prices) return void(e.price_unknown = in.price_note.empty() ? "no price table" : in.price_note);
  if (!s.memory_gb) return void(e.price_unknown = "no machine type");
  const RegionPrices& p = *in.prices;
  const WorkerRates* rates = in.streaming ? (p.streaming ? &*p.streaming : nullptr) : &p.batch;
  if (!rates) return void(e.price_unknown = "no streaming rates for " + p.region);
  auto gpu_rate = s.gpu ? p.gpu_hour.find(s.gpu->name) : p.gpu_hour.end();
  if (s.gpu && gpu_rate == p.gpu_hour.end()) return void(e.price_unknown = "no price for " + s.gpu->name + " in " + p.region);
  e.priced = true;
  e.currency = p.currency;
  e.price_per_hour = s.vcpus * rates->vcpu_hour.per_hour + *s.memory_gb * rates->memory_gb_hour.per_hour;
  e.price_verified = rates->vcpu_hour.verified && rates->memory_gb_hour.verified;
  e.price_how = std::to_string(s.vcpus) + " vCPU x " + RateText(rates->vcpu_hour) + " + " + Num(*s.memory_gb, "%.5g") +
                " GB x " + RateText(rates->memory_gb_hour);
  if (s.gpu) {
    e.price_per_hour += s.gpus * gpu_rate->second.per_hour;
    e.price_verified = e.price_verified && gpu_rate->second.verified;
    e.price_how += " + " + std::to_string(s.gpus) + " x " + s.gpu->name + " x " + RateText(gpu_rate->second);
  }
  e.price_how += " " + p.currency + "/h (" + p.region + (in.streaming ? " streaming" : " batch") + ", " + p.source +
                 ", read " + p.read + ")";
  if (!e.speed_known || e.records_per_second <= 0) return;
  const double per_record = e.price_per_hour / (e.records_per_second * 3600.0);
  e.cost_per_thousand = per_record * 1e3;
  e.cost_per_million = per_record * 1e6;
}

}  // namespace

const char* BottleneckName(Bottleneck b) {
  switch (b) {
    case Bottleneck::kGpuCompute: return "GPU compute";
    case Bottleneck::kGpuMemoryBandwidth: return "GPU memory bandwidth";
    case Bottleneck::kCpu: return "CPU preprocessing";
    case Bottleneck::kUnknown: break;
  }
  return "unknown";
}

Estimate EstimateConfiguration(const EstimateShape& shape, const std::vector<ModelRequirement>& models,
                               const EstimateInputs& in) {
  Estimate e;
  Speed(shape, models, in, e);
  Cost(shape, in, e);
  if (e.speed_known && in.records && *in.records > 0) {
    const int workers = std::max(1, in.workers);
    e.job_hours = static_cast<double>(*in.records) / (e.records_per_second * workers * 3600.0) + in.startup_hours;
    if (e.priced) e.job_cost = workers * e.price_per_hour * *e.job_hours;
  }
  return e;
}

}  // namespace dfw
