// The MLP model handler: a classifier/regressor from a model directory (config.json, see
// mlp_config.h, + model.safetensors), fed from a numeric list field.
//
// Example: a list of input_dim numbers (ints or floats). Prediction: a list of output_dim floats
// (probabilities when the config says "output": "softmax").
// Weights: F32 tensors are used in place from the mmapped file (no copy on the CPU backend when the
// file keeps them 4-byte aligned, as safetensors writers do); F16/BF16 are converted to F32 once,
// at load. Workspace buffers grow to the largest batch seen and are reused: no allocation per row
// or per batch on the compute path.
// Config key `dtype` (auto | float32 | bfloat16 | int8): the precision of the layers' products. auto
// (default) keeps the fastest this CPU runs that leaves every row's argmax unchanged and every output
// within 1e-3 of float32 on a fixed batch of 64 standard-normal inputs (precision_choice.h);
// softmax stays float32. An explicit dtype the CPU cannot run is refused when the handler is made.
// At run time (precision_monitor.h) one batch in `precision_check_every` (default 64, the first
// included; 0: none) run in a reduced dtype is recomputed in float32: a changed argmax or an output
// more than `max_prob_diff` (default 1e-3) from float32 moves the model to the next safer dtype for
// the rest of the job in this process (logged; the figures precision_check_argmax_same,
// precision_check_prob_diff_ppm and precision_switches reach metrics.json and the report).
// Shared copies (model_copies / large_model) inside a `dfworker run` job: the weights come from a
// model host's published F32 copy (shared_copy.h: round robin by SDK index, failover to a live
// host before a batch). On the emulated device the process charges its private weights and its
// workspace to the job's ledger (device_memory.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "dfw/inference/mlp_config.h"
#include "dfw/inference/model_handler.h"
#include "dfw/inference/safetensors.h"

namespace dfw {

inline constexpr std::string_view kMlpHandlerType = "MlpModelHandlerSafetensors";

struct ModelFiles {
  std::string config_path;   // <dir>/config.json
  std::string weights_path;  // <dir>/model.safetensors
};
// `model_path` is a directory holding config.json + model.safetensors, or a .safetensors file with
// config.json beside it.
Result<ModelFiles> ResolveModelFiles(const std::string& model_path);

// Checks that the weights match the architecture: every layer's weight [out, in] and bias [out]
// present with a supported dtype (F32, F16, BF16). Errors name the tensor, its shape/dtype and the
// expected one.
Status CheckMlpWeights(const MlpConfig& config, const SafetensorsHeader& header);

// Makes the handler; reads config.json and the safetensors header (not the weights) and checks they agree.
Result<std::unique_ptr<ModelHandler>> MakeMlpModelHandler(ModelHandlerOptions options);

}  // namespace dfw
