// The driver/NVML seam: the only file in dfworker's core that talks to NVIDIA libraries. They are
// dlopen'd (never linked) so the binary starts on machines without a driver, and the few entry
// points are declared here with their documented C signatures instead of including cuda.h/nvml.h,
// which the non-CUDA build does not have.
#include <dlfcn.h>

#include <string>

#include "dfw/device/accelerator.h"

namespace dfw::device {
namespace {

using CuResult = int;  // CUresult; 0 = CUDA_SUCCESS
using CuDevice = int;  // CUdevice
constexpr int kCcMajorAttr = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kCcMinorAttr = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

using NvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using NvmlDevice = void*;
struct NvmlMemory {      // nvmlMemory_t (v1)
  unsigned long long total, free, used;
};

struct CudaDriver {
  CuResult (*init)(unsigned int) = nullptr;
  CuResult (*get_count)(int*) = nullptr;
  CuResult (*get)(CuDevice*, int) = nullptr;
  CuResult (*get_name)(char*, int, CuDevice) = nullptr;
  CuResult (*total_mem)(std::size_t*, CuDevice) = nullptr;
  CuResult (*get_attribute)(int*, int, CuDevice) = nullptr;
  CuResult (*error_string)(CuResult, const char**) = nullptr;
};

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*handle_by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*memory_info)(NvmlDevice, NvmlMemory*) = nullptr;
};

template <typename F>
bool Load(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  return fn != nullptr;
}

class SystemGpuProbe final : public GpuProbe {
 public:
  Result<std::vector<GpuInfo>> ListGpus() override {
    RETURN_IF_ERROR(OpenDriver());
    int count = 0;
    RETURN_IF_ERROR(Check(cu_.get_count(&count), "cuDeviceGetCount"));
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < count; ++i) {
      CuDevice dev = 0;
      RETURN_IF_ERROR(Check(cu_.get(&dev, i), "cuDeviceGet"));
      GpuInfo g;
      g.ordinal = i;
      char name[256] = {};
      RETURN_IF_ERROR(Check(cu_.get_name(name, sizeof name - 1, dev), "cuDeviceGetName"));
      g.name = name;
      std::size_t total = 0;
      RETURN_IF_ERROR(Check(cu_.total_mem(&total, dev), "cuDeviceTotalMem_v2"));
      g.total_bytes = total;
      RETURN_IF_ERROR(Check(cu_.get_attribute(&g.cc_major, kCcMajorAttr, dev), "cuDeviceGetAttribute"));
      RETURN_IF_ERROR(Check(cu_.get_attribute(&g.cc_minor, kCcMinorAttr, dev), "cuDeviceGetAttribute"));
      gpus.push_back(std::move(g));
    }
    return gpus;
  }

  Result<GpuMemoryUsage> MemoryUsage(int ordinal) override {
    if (OpenNvml().ok()) {
      NvmlDevice dev = nullptr;
      NvmlMemory mem{};
      NvmlReturn r = nvml_.handle_by_index(static_cast<unsigned>(ordinal), &dev);
      if (r == 0) r = nvml_.memory_info(dev, &mem);
      if (r == 0) return GpuMemoryUsage{mem.total, mem.used, mem.free, "nvml"};
    }
    // Without NVML: the driver knows the total; use without a context is not measurable.
    ASSIGN_OR_RETURN(std::vector<GpuInfo> gpus, ListGpus());
    if (ordinal < 0 || ordinal >= static_cast<int>(gpus.size())) {
      return OutOfRange("GPU ordinal " + std::to_string(ordinal) + " is not visible (" + std::to_string(gpus.size()) + " GPUs)");
    }
    return Unavailable("NVML (libnvidia-ml.so.1) is not available: GPU " + std::to_string(ordinal) + " has " +
                       std::to_string(gpus[ordinal].total_bytes) + " bytes but its use cannot be measured");
  }

 private:
  Status OpenDriver() {
    if (driver_status_) return *driver_status_;
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = ::dlerror();
      driver_status_ = Unavailable(std::string("no NVIDIA driver: cannot load libcuda.so.1 (") + (why ? why : "?") + ")");
      return *driver_status_;
    }
    bool ok = Load(lib, "cuInit", cu_.init) && Load(lib, "cuDeviceGetCount", cu_.get_count) &&
              Load(lib, "cuDeviceGet", cu_.get) && Load(lib, "cuDeviceGetName", cu_.get_name) &&
              Load(lib, "cuDeviceTotalMem_v2", cu_.total_mem) && Load(lib, "cuDeviceGetAttribute", cu_.get_attribute);
    Load(lib, "cuGetErrorString", cu_.error_string);
    if (!ok) {
      driver_status_ = Unavailable("libcuda.so.1 lacks a driver API entry point dfworker needs (driver too old?)");
      return *driver_status_;
    }
    driver_status_ = Check(cu_.init(0), "cuInit");
    return *driver_status_;
  }

  Status OpenNvml() {
    if (nvml_status_) return *nvml_status_;
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    bool ok = lib != nullptr && Load(lib, "nvmlInit_v2", nvml_.init) &&
              Load(lib, "nvmlDeviceGetHandleByIndex_v2", nvml_.handle_by_index) &&
              Load(lib, "nvmlDeviceGetMemoryInfo", nvml_.memory_info);
    nvml_status_ = ok && nvml_.init() == 0 ? Status::OK() : Unavailable("NVML not available");
    return *nvml_status_;
  }

  Status Check(CuResult r, const char* call) const {
    if (r == 0) return Status::OK();
    const char* text = nullptr;
    if (cu_.error_string != nullptr) cu_.error_string(r, &text);
    return Unavailable(std::string(call) + " returned " + std::to_string(r) + " (" + (text ? text : "unknown error") + ")");
  }

  CudaDriver cu_;
  Nvml nvml_;
  std::optional<Status> driver_status_;
  std::optional<Status> nvml_status_;
};

}  // namespace

std::unique_ptr<GpuProbe> MakeSystemGpuProbe() { return std::make_unique<SystemGpuProbe>(); }

}  // namespace dfw::device
