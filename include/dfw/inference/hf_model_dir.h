// Where a Hugging Face model is on this machine: `model:` is a local directory, or a hub id
// ("ORG/NAME" or "NAME") found in the local Hugging Face cache as huggingface_hub lays it out —
// CACHE/models--ORG--NAME/snapshots/<revision>/, the revision read from refs/main — with CACHE the
// first set of $HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub. Nothing is downloaded.
#pragma once

#include <string>

#include "dfw/common/status.h"

namespace dfw {

// The environment the lookup reads (passed in, so tests need not change the process's).
struct HfCacheEnv {
  std::string hf_hub_cache;  // $HF_HUB_CACHE
  std::string hf_home;       // $HF_HOME
  std::string home;          // $HOME
};
// This process's HF_HUB_CACHE, HF_HOME and HOME (docs/environment.md).
HfCacheEnv HfCacheEnvFromProcess();

// The model directory for `model`. A missing model is kInvalidArgument naming every place looked
// at; a directory with pytorch_model.bin and no model.safetensors is kInvalidArgument saying how to
// convert it; sharded checkpoints (model.safetensors.index.json) are refused by name.
Result<std::string> ResolveHfModelDir(const std::string& model, const HfCacheEnv& env);

}  // namespace dfw
