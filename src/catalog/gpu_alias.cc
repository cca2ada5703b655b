// GPU types written like product names ("L4", "a100", "nvidia-l4-gpu"): which catalog types they
// probably mean. Compute Engine names are lower-case model tokens joined by '-', with "nvidia" and
// sometimes "tesla" in front; people write the marketing name, drop the prefix or add "-gpu".
#include <algorithm>
#include <cctype>
#include <set>

#include "dfw/catalog/catalog.h"

namespace dfw {
namespace {

std::set<std::string> ModelTokens(std::string_view name) {
  std::set<std::string> tokens;
  std::string token;
  auto flush = [&] {
    if (!token.empty() && token != "nvidia" && token != "tesla" && token != "gpu" && token != "gpus") {
      tokens.insert(token);
    }
    token.clear();
  };
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ' || c == ':') {
      flush();
    } else {
      token += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  flush();
  return tokens;
}

}  // namespace

std::vector<const GpuType*> Catalog::GpuTypesLike(std::string_view written) const {
  std::set<std::string> want = ModelTokens(written);
  std::vector<const GpuType*> exact, containing;
  if (want.empty() || written.size() > 64) return {};
  for (const GpuType& g : gpus_) {
    std::set<std::string> have = ModelTokens(g.name);
    if (have == want) {
      exact.push_back(&g);
    } else if (std::includes(have.begin(), have.end(), want.begin(), want.end())) {
      containing.push_back(&g);
    }
  }
  exact.insert(exact.end(), containing.begin(), containing.end());
  if (exact.size() > 3) exact.resize(3);
  return exact;
}

}  // namespace dfw
