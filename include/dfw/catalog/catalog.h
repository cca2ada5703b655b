// Catalog: GPU types, machine types and MPS limits, loaded from configs/*.yaml (each fact with its
// source URL). Immutable after Make; safe to share between threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/catalog/prices.h"
#include "dfw/common/status.h"

namespace dfw {

struct ComputeCapability {
  int major = 0;
  int minor = 0;
  bool AtLeast(const ComputeCapability& o) const { return major > o.major || (major == o.major && minor >= o.minor); }
  std::string ToString() const { return std::to_string(major) + "." + std::to_string(minor); }
};

// One Multi-Instance GPU profile ("3g.71gb"): a hardware partition with its own memory and SMs.
// Dataflow does not expose MIG; the planner shows what a job would need on a GPU box or GKE.
struct MigProfile {
  std::string name;               // "<N>g.<M>gb" or "<N>g.<M>gb+me" (media extensions)
  uint64_t memory_bytes = 0;      // M GB, treated as GiB like GpuType::memory_bytes
  int compute_slices = 0;         // N of the GPU's GpuType::mig_compute_slices
  int max_instances = 0;          // instances of this profile alone that one GPU holds
  bool media_extensions = false;  // "+me": same memory and SMs, plus the media engines (one per GPU)
};

struct GpuType {
  std::string name;                           // Compute Engine name, e.g. "nvidia-l4"
  std::string display_name;                   // "NVIDIA L4"
  uint64_t memory_bytes = 0;                  // marketed memory (GB treated as GiB)
  std::vector<std::string> machine_families;  // e.g. {"g2"} or {"n1"}
  std::vector<int> counts;                    // GPUs per VM that are offered
  ComputeCapability compute_capability;
  uint64_t context_overhead_bytes = 0;        // ESTIMATE: one CUDA context + cuBLAS per process
  std::map<std::string, std::string> sources; // fact -> source URL
  std::vector<MigProfile> mig_profiles;       // smallest first as listed; empty = no MIG (sources["mig"] when not)
  // Compute slices of the whole GPU under MIG: its SMs split in 7 on A100/H100/H200/B200, in 4 on
  // the RTX PRO 6000 (NVIDIA's MIG user guide, "Supported GPUs": max number of instances). 0 = no MIG.
  int mig_compute_slices = 0;
  // Datasheet peaks for the throughput estimate (0 = not in the catalog): dense FP32 (CUDA cores)
  // and dense FP16 Tensor Core TFLOP/s, and memory bandwidth in GB/s (10^9 B/s), each with its
  // source in sources["peak_tflops"] / sources["memory_bandwidth"].
  double peak_fp32_tflops = 0;
  double peak_fp16_tensor_tflops = 0;
  double memory_bandwidth_gbps = 0;
};

struct MachineType {
  std::string name;             // "g2-standard-8", "n1-standard-4", "custom-6-23040"
  std::string family;           // "g2", "n1", ...
  int vcpus = 0;
  uint64_t memory_bytes = 0;
  std::string fixed_gpu;        // accelerator-optimized: the GPU type built in ("" otherwise)
  int fixed_gpu_count = 0;      // accelerator-optimized: how many
  bool gpu_attachable = false;  // N1: GPUs are attached, not fixed
};

// A GPU type Compute Engine no longer offers; refused with its reason instead of "unknown".
struct RetiredGpu {
  std::string name;          // "nvidia-tesla-k80"
  std::string display_name;  // "NVIDIA K80"
  std::string reason;        // "end of support on Compute Engine"
  std::string source;        // URL
};

// Upper bound on an N1 worker's shape for an attached GPU type and count.
struct N1GpuLimit {
  std::string gpu;
  int gpus = 0;
  int max_vcpus = 0;
  uint64_t max_memory_bytes = 0;
};

struct MpsLimits {
  ComputeCapability min_cc{3, 5};
  ComputeCapability volta_cc{7, 0};
  int clients_pre_volta = 16;
  int clients_volta = 48;
};

// One YAML document of the catalog, named for error messages ("configs/gpus.yaml").
struct CatalogFile {
  std::string name;
  std::string text;
};

class Catalog {
 public:
  // Parses catalog files. A malformed file is kInvalidArgument naming "file:line:col" and the field.
  static Result<Catalog> Make(const std::vector<CatalogFile>& files);
  // Every *.yaml in `dir` (sorted by name).
  static Result<Catalog> LoadDir(const std::string& dir);
  // The copy of configs/ embedded into the binary at build time.
  static Result<Catalog> LoadEmbedded();
  // --catalog_dir (when given) > $DFW_CATALOG_DIR > the source tree's configs/ (when it exists) > embedded.
  static Result<Catalog> Locate(const std::string& flag_dir = "");

  const GpuType* FindGpu(std::string_view name) const;
  // Fixed types, generated family types (n1-standard-8) and valid custom types.
  std::optional<MachineType> FindMachine(std::string_view name) const;
  // Custom types, <family>-custom-<vCPUs>-<memory MB>[-ext] (custom-... alone is N1): vCPUs and
  // memory (MB = MiB) from the name, checked against the family's `custom:` rules in machines.yaml
  // (vCPU range and multiple, GB per vCPU, 256 MB steps; -ext allows more memory per vCPU up to the
  // family's extended maximum). nullopt when `name` is not written as a custom type;
  // kInvalidArgument naming the broken rule when it is but breaks one (custom_machine.cc).
  std::optional<Result<MachineType>> CustomMachine(std::string_view name) const;
  const N1GpuLimit* FindN1Limit(std::string_view gpu, int gpus) const;
  const RetiredGpu* FindRetiredGpu(std::string_view name) const;
  // The GPU types `written` probably means when it is spelled like a product name ("L4", "a100",
  // "nvidia-l4-gpu", "nvidia-h100-80gb-mega"): the same model tokens, ignoring case, order,
  // "nvidia", "tesla" and "gpu". Types with exactly those tokens first, then types that hold them
  // all; at most 3; empty when nothing fits (gpu_alias.cc).
  std::vector<const GpuType*> GpuTypesLike(std::string_view written) const;
  // Clients per device for this GPU's MPS server (16 pre-Volta, 48 Volta+).
  int MpsClientLimit(const GpuType& gpu) const;
  const MpsLimits& mps() const { return mps_; }
  // The catalog's price table (configs/prices.yaml, or the `prices:` file of --catalog_dir);
  // kNotFound when the catalog has none.
  Result<PriceTable> Prices() const;

  std::vector<std::string> GpuNames() const;
  std::vector<std::string> MachineNames() const;  // for did-you-mean
  const std::string& origin() const { return origin_; }  // "embedded" or the directory

 private:
  friend class CatalogLoader;
  struct Family {
    std::string family;
    bool gpu_attachable = false;
    std::vector<int> vcpus;
    std::map<std::string, double> variants;  // variant -> GB per vCPU
    std::optional<double> custom_min_gb, custom_max_gb;  // GB per vCPU; absent = no custom types
    int custom_step_mb = 256;
    int custom_min_vcpus = 1;          // 1 is allowed only when this is 1 (N1)
    int custom_max_vcpus = 96;
    int custom_vcpu_multiple = 2;      // vCPU counts above 1 are multiples of this
    std::optional<double> custom_extended_max_gb;  // total memory cap with -ext; absent = no -ext
  };
  Catalog() = default;

  std::vector<GpuType> gpus_;
  std::vector<MachineType> fixed_machines_;
  std::vector<Family> families_;
  std::vector<N1GpuLimit> n1_limits_;
  std::vector<RetiredGpu> retired_gpus_;
  MpsLimits mps_;
  std::optional<CatalogFile> prices_file_;
  std::string origin_;
};

}  // namespace dfw
