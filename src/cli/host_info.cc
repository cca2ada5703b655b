#include "host_info.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>

namespace dfw::cli {

HostInfo DetectHost() {
  HostInfo host;
  host.cpu_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::error_code ec;
  for (int i = 0; i < 16 && std::filesystem::exists("/dev/nvidia" + std::to_string(i), ec); ++i) ++host.cuda_devices;
  return host;
}

}  // namespace dfw::cli
