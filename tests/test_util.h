// What every test binary shares: byte units, a temporary directory, whole-file read and write, and
// a bounded wait for an observable event. Module helpers (tests/<module>/*_util.h) build on it.
// A wait here guards against a hang; no test asserts how long something took.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace dfw::testing {

inline constexpr uint64_t kKiB = uint64_t{1} << 10;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// One NVIDIA L4 with the driver, as Dataflow spells it: the worker_accelerator value, and the flag.
inline const std::string kL4Accelerator = "type:nvidia-l4;count:1;install-nvidia-driver";
inline const std::string kL4Flag = "--dataflow_service_options=worker_accelerator=" + kL4Accelerator;

// The whole file; "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` to `path`, creating the parent directories.
inline void WriteFile(const std::string& path, const std::string& text) {
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Polls `done` every 10 ms until it holds or `limit_s` passed; returns its last value.
inline bool Eventually(const std::function<bool()>& done, int limit_s = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "dfw-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty() && !keep_) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  // Leaves the directory in place (a failed test's, to look at what the run left).
  void Keep() { keep_ = true; }
  // Writes `text` to `name` inside the directory (subdirectories created) and returns its path.
  std::string Write(const std::string& name, const std::string& text) const {
    WriteFile(*this / name, text);
    return *this / name;
  }

 private:
  std::string path_;
  bool keep_ = false;
};

}  // namespace dfw::testing
