// Local directory or offline hub-cache lookup for HuggingFacePipelineModelHandler's `model:`.
#include "dfw/inference/hf_model_dir.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

#include "dfw/common/file.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;

bool IsHfDir(const std::string& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}
bool IsHfFile(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The checkpoint must be one model.safetensors.
Status CheckWeights(const std::string& dir, const std::string& model) {
  if (IsHfFile(dir + "/model.safetensors")) return Status::OK();
  if (IsHfFile(dir + "/model.safetensors.index.json")) {
    return InvalidArgument("model '" + model + "' ('" + dir +
                           "') is a sharded safetensors checkpoint (model.safetensors.index.json); dfworker reads one "
                           "model.safetensors");
  }
  if (IsHfFile(dir + "/pytorch_model.bin")) {
    return InvalidArgument("model '" + model + "' ('" + dir +
                           "') has pytorch_model.bin and no model.safetensors; dfworker reads safetensors only (it "
                           "never unpickles). Convert it once with transformers: python -c \"from transformers import "
                           "AutoModel; AutoModel.from_pretrained('" + dir + "').save_pretrained('" + dir +
                           "', safe_serialization=True)\" (use the AutoModelFor... class of its head so the head is kept)");
  }
  return InvalidArgument("model '" + model + "': no model.safetensors in '" + dir + "'");
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

HfCacheEnv HfCacheEnvFromProcess() {
  auto get = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  return HfCacheEnv{get("HF_HUB_CACHE"), get("HF_HOME"), get("HOME")};
}

Result<std::string> ResolveHfModelDir(const std::string& model, const HfCacheEnv& env) {
  if (model.empty()) return InvalidArgument("'model' is empty; give a local model directory or a hub id");
  if (IsHfDir(model)) {
    RETURN_IF_ERROR(CheckWeights(model, model));
    return model;
  }
  std::vector<std::string> looked = {"'" + model + "' (not a directory)"};
  const bool hub_id = model[0] != '/' && model[0] != '.' && model.find("//") == std::string::npos &&
                      std::count(model.begin(), model.end(), '/') <= 1;
  if (hub_id) {
    std::string repo = "models--" + model;
    for (std::size_t p = 0; (p = repo.find('/', p)) != std::string::npos;) repo.replace(p, 1, "--");
    std::vector<std::string> caches;
    if (!env.hf_hub_cache.empty()) caches.push_back(env.hf_hub_cache);
    if (!env.hf_home.empty()) caches.push_back(env.hf_home + "/hub");
    if (!env.home.empty()) caches.push_back(env.home + "/.cache/huggingface/hub");
    for (const std::string& cache : caches) {
      const std::string base = cache + "/" + repo;
      ASSIGN_OR_RETURN(std::optional<std::string> ref, ReadFileIfPresent(base + "/refs/main", FileKind{"refs/main", 4096}));
      std::string rev = ref ? ref->substr(0, ref->find('\n')) : std::string();
      if (!Trimmed(rev).empty()) {
        const std::string snap = base + "/snapshots/" + Trimmed(rev);
        if (IsHfDir(snap)) {
          RETURN_IF_ERROR(CheckWeights(snap, model));
          return snap;
        }
        looked.push_back("'" + snap + "' (refs/main names it; missing)");
        continue;
      }
      looked.push_back("'" + base + "/refs/main'");
    }
  }
  std::string where;
  for (const auto& l : looked) where += (where.empty() ? "" : ", ") + l;
  return InvalidArgument("model '" + model + "' not found; looked at " + where +
                         ". dfworker downloads nothing: give a local directory, or fetch the model into the Hugging Face "
                         "cache first (huggingface-cli download " + model + ")");
}

}  // namespace dfw
