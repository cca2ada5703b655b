// Speed and cost of one configuration (a row of `dfworker plan`): an ESTIMATE, printed with every
// input it used, never a measurement.
//
// Speed per worker is the slowest of three rates:
//   GPU compute   = GPUs x peak FP32 FLOP/s (datasheet) x efficiency / FLOPs per record
//   GPU bandwidth = GPUs x bandwidth (datasheet) x bandwidth efficiency / bytes per record,
//                   bytes per record = weights / batch size + activations per record
//   CPU           = vCPUs x records/s per vCPU (read, parse, map/filter, write)
// per model roofline: a model's GPU time per record is the larger of its compute and bandwidth
// times; the pipeline's is the sum over its models. A MIG row gets its slice's share of both peaks.
// Cost: vCPUs x vCPU rate + memory GB x memory rate + GPUs x GPU rate (the region's price table,
// batch or streaming rates), per hour, divided by records per hour.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/catalog/prices.h"
#include "dfw/plan/plan.h"

namespace dfw {

// The CPU side when nothing better is given: records/s one vCPU reads, parses, maps and writes
// (JSON lines of a few hundred bytes). An ASSUMPTION, stated wherever it is used; --cpu_rate sets
// the figure `dfworker bench` measured for the pipeline's own non-inference stages.
inline constexpr double kDefaultCpuRecordsPerVcpuSecond = 2000;
// Share of the datasheet memory bandwidth a streaming kernel reaches (an assumption, stated).
inline constexpr double kDefaultBandwidthEfficiency = 0.7;
// Worker start-up (VM boot, container pull, model load) billed before the first record: a stated
// constant, added to every job's hours.
inline constexpr double kWorkerStartupHours = 5.0 / 60.0;

// A handler's measured share of the FP32 peak on one GPU, for the models it runs
// (`plan --gpu_efficiency_from FILE`; scripts/gpu-check.sh writes the file on a GPU machine).
struct MeasuredEfficiency {
  double efficiency = 0;  // in (0, 1]
  std::string how;        // where it came from, printed with the estimate
};

// The file `scripts/gpu-check.sh` writes (JSON, docs/right-sizing.md):
//   {"format": "dfworker-gpu-efficiency", "format_version": 1, "gpu": "nvidia-h200", "measured": "...",
//    "handlers": [{"handler": "MlpModelHandlerSafetensors", "pipeline": "...", "dtype": "float32",
//                  "achieved_gflops": 812.4, "peak_tflops": 67, "efficiency": 0.012125}, ...]}
// Each entry's efficiency is achieved_gflops / (peak_tflops x 1000) for the GPU's FP32 peak (the
// backends compute in FP32, and that is the peak the estimate divides).
inline constexpr const char* kGpuEfficiencyFormat = "dfworker-gpu-efficiency";
struct GpuEfficiencyEntry {
  std::string handler;    // the model_handler type ("MlpModelHandlerSafetensors")
  std::string pipeline;   // what ran ("" = not said)
  std::string dtype;      // "float32"
  double achieved_gflops = 0;
  double peak_tflops = 0;
  double efficiency = 0;
};
struct GpuEfficiencyFile {
  std::string gpu;        // the catalog name of the GPU it was measured on
  std::string measured;   // when, as written ("" = not said)
  std::string note;       // e.g. that the figures are an example ("" = none)
  std::vector<GpuEfficiencyEntry> entries;
};
// `path` names the file in messages. kInvalidArgument naming the file (path:line:col for JSON the
// parser refuses) and the field: another format or version, no gpu, no entries, a handler twice, a
// dtype other than float32, a figure that is not a number above 0, an efficiency outside (0, 1] or
// not achieved_gflops / (peak_tflops x 1000) to within 1%.
Result<GpuEfficiencyFile> ParseGpuEfficiencyFile(const std::string& path, const std::string& text);

enum class Bottleneck { kUnknown, kGpuCompute, kGpuMemoryBandwidth, kCpu };
const char* BottleneckName(Bottleneck b);  // "GPU compute", "GPU memory bandwidth", "CPU preprocessing"

// What the recommendation optimises (plan --objective; `fit` is memory only: no estimate at all).
enum class Objective { kCost, kTime };

struct EstimateInputs {
  Objective objective = Objective::kCost;      // leads the text output and orders its table
  double cpu_records_per_vcpu_second = kDefaultCpuRecordsPerVcpuSecond;
  bool cpu_rate_given = false;                 // --cpu_rate or --cpu_rate_from (else the assumed default)
  std::string cpu_rate_how;                    // where a given rate came from ("" = --cpu_rate)
  std::optional<double> gpu_efficiency;        // --gpu_efficiency: overrides every handler's default
  // --gpu_efficiency_from: per model (ModelRequirement::name) the efficiency measured for its
  // handler; a model without an entry keeps its handler's default. --gpu_efficiency wins.
  std::map<std::string, MeasuredEfficiency> gpu_efficiency_by_model;
  double bandwidth_efficiency = kDefaultBandwidthEfficiency;
  bool streaming = false;                      // bill streaming worker rates
  const RegionPrices* prices = nullptr;        // nullptr: no cost figures
  std::string price_note;                      // why there are no prices, when that is not obvious
  std::optional<int64_t> records;              // --records N: job hours and cost
  int workers = 1;                             // --num_workers / --max_num_workers (>= 1)
  double startup_hours = kWorkerStartupHours;
  // Constraints on the recommendation (--max_cost_per_million, --deadline in hours; the deadline
  // needs records): rows that miss one are never cheapest or fastest.
  std::optional<double> max_cost_per_million;
  std::optional<double> deadline_hours;
};

// What a configuration is: the row's shape (catalog_plan.h fills it from a CatalogPlanRow).
struct EstimateShape {
  const GpuType* gpu = nullptr;
  int gpus = 1;                                // per worker
  double gpu_share = 1.0;                      // MIG: slices / the GPU's slices
  int vcpus = 0;
  std::optional<double> memory_gb;             // the machine type's memory; nullopt = no machine type
  bool billable = true;                        // false for MIG rows (Dataflow has no MIG)
};

struct Estimate {
  bool speed_known = false;
  std::string speed_unknown;       // why not: "no model work figures", "no datasheet peaks for GPU"
  double gpu_compute_rps = 0;      // records/s per worker if GPU compute were the only limit
  double gpu_bandwidth_rps = 0;    // ... GPU memory bandwidth
  double gpu_rps = 0;              // roofline of the two, per model, summed
  double cpu_rps = 0;
  double records_per_second = 0;   // per worker: min(gpu_rps, cpu_rps)
  Bottleneck bottleneck = Bottleneck::kUnknown;
  double gpu_wait = 0;             // CPU-bound: the share of time the GPU would wait
  std::vector<std::string> inputs; // every figure used, with where it came from

  bool priced = false;
  std::string price_unknown;       // why not
  std::string currency;
  double price_per_hour = 0;       // one worker
  bool price_verified = false;     // every rate used was verified
  std::string price_how;           // "8 vCPU x 0.056 + 32 GB x 0.003557 + 1 x nvidia-l4 x 0.56"
  double cost_per_thousand = 0;
  double cost_per_million = 0;
  std::optional<double> job_hours; // with records: records / (rps x workers x 3600) + start-up
  std::optional<double> job_cost;  // workers x price per hour x job hours
};

// Pure arithmetic over its arguments; no I/O.
Estimate EstimateConfiguration(const EstimateShape& shape, const std::vector<ModelRequirement>& models,
                               const EstimateInputs& in);

}  // namespace dfw
