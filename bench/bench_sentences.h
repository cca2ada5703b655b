// The sentences the encoder benchmarks encode: the lines of $DFW_BENCH_SENTENCES when it names a
// file (scripts/make_sentences.py writes the scripts' sets), else `count` seeded random sentences
// of 4 to 3 + `max_extra_words` words drawn from `words`.
#pragma once

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace dfw {

inline std::vector<std::string> BenchSentences(std::initializer_list<const char*> words, int count, int max_extra_words) {
  std::vector<std::string> out;
  if (const char* path = std::getenv("DFW_BENCH_SENTENCES")) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  const std::vector<const char*> w(words);
  std::mt19937 rng(7);
  for (int i = 0; i < count; ++i) {
    std::string s;
    const int n = 4 + static_cast<int>(rng() % static_cast<unsigned>(max_extra_words));
    for (int k = 0; k < n; ++k) s += std::string(k ? " " : "") + w[rng() % w.size()];
    out.push_back(s);
  }
  return out;
}

}  // namespace dfw
