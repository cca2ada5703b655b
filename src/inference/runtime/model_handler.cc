// Shared option checks and the table of handler types: it starts from the built-in list
// (builtin_handlers.cc, the one place that knows which handlers exist) and takes registrations.
#include "dfw/inference/model_handler.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include <spdlog/spdlog.h>

#include "inference/builtin_handlers.h"
#include "dfw/backend/registry.h"
#include "dfw/common/strings.h"

namespace dfw {

namespace {

struct HandlerTable {
  std::mutex mu;
  std::vector<ModelHandlerTypeInfo> types = BuiltinModelHandlerTypes();
};

HandlerTable& Table() {
  static HandlerTable* table = new HandlerTable();  // never destroyed: usable during static teardown
  return *table;
}

}  // namespace

std::vector<ModelHandlerTypeInfo> ModelHandlerTypes() {
  HandlerTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.types;
}

Status RegisterModelHandlerType(ModelHandlerTypeInfo info) {
  if (info.type.empty() || !info.make) return InvalidArgument("model handler registration needs a type and a make function");
  HandlerTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (const ModelHandlerTypeInfo& existing : t.types) {
    if (existing.type == info.type) return InvalidArgument("model_handler type '" + info.type + "' is registered twice");
  }
  t.types.push_back(std::move(info));
  return Status::OK();
}

const std::vector<std::string>& CommonModelHandlerKeys() {
  static const std::vector<std::string> keys = {
      "model_path", "device", "input_field", "min_batch_size", "max_batch_size", "max_batch_duration_secs",
      "max_batch_weight", "large_model", "model_copies", "model_id", "blas_threads"};
  return keys;
}

Status ValidateModelHandlerOptions(const ModelHandlerOptions& o) {
  if (o.model_path.empty()) return InvalidArgument("model_handler config 'model_path' is required");
  if (o.input_field.empty()) return InvalidArgument("model_handler config 'input_field' is required");
  if (o.device != "CPU" && o.device != "GPU") {
    return InvalidArgument("model_handler config 'device': '" + o.device + "' is not allowed; allowed: CPU, GPU");
  }
  const BatchingKwargs& b = o.batching;
  if (b.min_batch_size && *b.min_batch_size < 1) {
    return InvalidArgument("model_handler config 'min_batch_size': " + std::to_string(*b.min_batch_size) +
                           " must be >= 1");
  }
  if (b.max_batch_size && *b.max_batch_size < 1) {
    return InvalidArgument("model_handler config 'max_batch_size': " + std::to_string(*b.max_batch_size) +
                           " must be >= 1");
  }
  const int64_t min = b.min_batch_size.value_or(1), max = b.max_batch_size.value_or(10000);
  if (min > max) {
    return InvalidArgument("model_handler config: min_batch_size " + std::to_string(min) +
                           " is greater than max_batch_size " + std::to_string(max) +
                           " (for a fixed batch size set both to the same value)");
  }
  if (b.max_batch_duration_secs && !(std::isfinite(*b.max_batch_duration_secs) && *b.max_batch_duration_secs > 0)) {
    return InvalidArgument("model_handler config 'max_batch_duration_secs': " +
                           std::to_string(*b.max_batch_duration_secs) + " must be a positive number of seconds");
  }
  if (b.max_batch_weight && *b.max_batch_weight < 1) {
    return InvalidArgument("model_handler config 'max_batch_weight': " + std::to_string(*b.max_batch_weight) +
                           " must be >= 1 (the most tokens per batch for a text model, examples for others)");
  }
  if (o.model_copies && *o.model_copies < 0) {
    return InvalidArgument("model_handler config 'model_copies': " + std::to_string(*o.model_copies) +
                           " must be >= 0 (0 behaves as 1, as in Beam)");
  }
  if (o.blas_threads && *o.blas_threads < 1) {
    return InvalidArgument("model_handler config 'blas_threads': " + std::to_string(*o.blas_threads) +
                           " must be >= 1 (leave it out for the runner's policy)");
  }
  return Status::OK();
}

Result<std::unique_ptr<ModelHandler>> MakeModelHandler(std::string_view type, ModelHandlerOptions options) {
  std::vector<std::string> names;
  for (const ModelHandlerTypeInfo& info : ModelHandlerTypes()) {  // a snapshot: safe while others register
    names.push_back(info.type);
    if (info.type != type) continue;
    for (const Field& f : options.extra.fields()) {
      std::vector<std::string> allowed = CommonModelHandlerKeys();
      allowed.insert(allowed.end(), info.extra_keys.begin(), info.extra_keys.end());
      if (std::find(info.extra_keys.begin(), info.extra_keys.end(), f.name) == info.extra_keys.end()) {
        return InvalidArgument("model_handler " + info.type + ": unknown config key '" + f.name + "'" +
                               DidYouMeanSuffix(f.name, allowed) + "; allowed: " + Join(allowed));
      }
    }
    RETURN_IF_ERROR(ValidateModelHandlerOptions(options).WithContext("model_handler " + info.type));
    return info.make(std::move(options));
  }
  return InvalidArgument("unknown model_handler type '" + std::string(type) + "'" +
                         DidYouMeanSuffix(std::string(type), names) + "; known types: " + Join(names));
}

std::unique_ptr<InferenceBackend> ModelHandler::MakeBackendForDevice() const {
  if (options().device == "GPU") {
    auto cuda = CreateBackend("cuda");
    if (cuda.ok()) return std::move(cuda).value();
    // Beam switches with one log line; we keep the line and add the reason.
    spdlog::warn("Model handler specified a 'GPU' device, but GPUs are not available ({}). Switching to CPU.",
                 cuda.status().message());
  }
  std::unique_ptr<InferenceBackend> cpu = MakeCpuBackend();
  // Once per process (every lane gets the same): the libraries and the GEMM path; the default path's
  // calibration is logged when it runs (at the first product that is not small).
  static std::once_flag logged;
  std::call_once(logged, [&] { spdlog::info("inference backend: cpu, {}", cpu->description()); });
  return cpu;
}

}  // namespace dfw
