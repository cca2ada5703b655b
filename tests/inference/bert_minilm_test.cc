// Optional check against the real all-MiniLM-L6-v2 (not committed: scripts/fetch_minilm.sh).
// Runs only when scripts/check_minilm.py sets DFW_MINILM_DIR (the model directory) and
// DFW_MINILM_REFERENCE (a JSON file of {"max_seq_length", "cases": [{"text", "ids", "embedding"}]}
// computed with sentence-transformers); skips otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dfw/backend/registry.h"
#include "dfw/inference/bert_encoder.h"
#include "dfw/inference/safetensors.h"
#include "dfw/tokenizers/wordpiece_tokenizer.h"

namespace dfw {
namespace {

TEST(BertMiniLM, MatchesSentenceTransformersCosineAtLeast0_9999) {
  const char* dir = std::getenv("DFW_MINILM_DIR");
  const char* ref = std::getenv("DFW_MINILM_REFERENCE");
  if (dir == nullptr || ref == nullptr) GTEST_SKIP() << "set by scripts/check_minilm.py";
  const char* backend_name = std::getenv("DFW_MINILM_BACKEND");
  auto backend = CreateBackend(backend_name ? backend_name : "cpu");
  if (!backend.ok()) GTEST_SKIP() << backend.status().ToString();

  std::ifstream in(ref);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str());
  const int max_seq = j["max_seq_length"].get<int>();

  auto tok = WordPieceTokenizer::Load(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  auto config = BertConfig::Load(std::string(dir) + "/config.json");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto weights = SafetensorsFile::Open(std::string(dir) + "/model.safetensors");
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  BertEncoderOptions o;
  o.max_seq_length = max_seq;
  o.max_batch = 32;
  auto enc = BertEncoder::Make(*config, **weights, backend->get(), o);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();

  std::vector<std::vector<int32_t>> ids(j["cases"].size());
  int token_mismatches = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& c = j["cases"][i];
    ASSERT_TRUE(tok->Encode(c["text"].get<std::string>(), max_seq, ids[i]).ok());
    if (ids[i] != c["ids"].get<std::vector<int32_t>>()) {
      ++token_mismatches;
      ADD_FAILURE() << "tokens differ for case " << i << ": " << c["text"];
    }
  }
  std::vector<std::span<const int32_t>> seqs(ids.begin(), ids.end());
  const std::size_t h = static_cast<std::size_t>(config->hidden_size);
  std::vector<float> out(seqs.size() * h);
  ASSERT_TRUE((*enc)->EncodeMany(seqs, out).ok());

  double min_cos = 1, sum_cos = 0;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const auto want = j["cases"][i]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(want.size(), h);
    double dot = 0, a2 = 0, b2 = 0;
    for (std::size_t k = 0; k < h; ++k) {
      dot += static_cast<double>(out[i * h + k]) * want[k];
      a2 += static_cast<double>(out[i * h + k]) * out[i * h + k];
      b2 += static_cast<double>(want[k]) * want[k];
    }
    const double cos = dot / std::sqrt(a2 * b2);
    EXPECT_GE(cos, 0.9999) << "case " << i << ": " << j["cases"][i]["text"];
    min_cos = std::min(min_cos, cos);
    sum_cos += cos;
  }
  std::printf("MiniLM check: %zu sentences, token mismatches %d, cosine min %.7f mean %.7f\n", seqs.size(),
              token_mismatches, min_cos, sum_cos / static_cast<double>(seqs.size()));
}

}  // namespace
}  // namespace dfw
