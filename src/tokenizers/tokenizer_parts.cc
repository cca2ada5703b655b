// What the stages of a tokenizer.json pipeline share (tokenizer_parts.h): the vocabulary, the
// realignment of normalised text, the "not supported" error.
#include "tokenizer_parts.h"

#include <algorithm>

namespace dfw::tokenizers {

void Vocabulary::Add(const std::string& token, int32_t id) {
  if (tokens.size() <= static_cast<std::size_t>(id)) tokens.resize(static_cast<std::size_t>(id) + 1);
  tokens[static_cast<std::size_t>(id)] = token;
  index[token] = id;
}

int32_t Vocabulary::Find(std::string_view token) const {
  auto it = index.find(token);
  return it == index.end() ? -1 : it->second;
}

void TransformChars(NormalizedText& text, const std::vector<CharChange>& changes) {
  NormalizedText out;
  out.reserve(changes.size());
  const uint32_t base = text.empty() ? 0 : text[0].begin;
  std::size_t next = 0;  // the next input character to consume
  for (const CharChange& c : changes) {
    if (c.change > 0) {  // inserted: the range of the character before (none at the start)
      const std::size_t prev = std::min(next, text.size());
      out.push_back(prev == 0 ? NChar{c.cp, base, base} : NChar{c.cp, text[prev - 1].begin, text[prev - 1].end});
      continue;
    }
    const NChar& src = next < text.size() ? text[next] : (text.empty() ? NChar{0, base, base} : text.back());
    out.push_back({c.cp, src.begin, src.end});
    next += 1 + static_cast<std::size_t>(-c.change);
  }
  text.swap(out);
}

Status Unsupported(const std::string& origin, const std::string& component, const nlohmann::json& type,
                   const std::string& supported) {
  return InvalidArgument("'" + origin + "': " + component + " " + (type.is_null() ? "(no type)" : type.dump()) +
                         " is not supported; supported: " + supported);
}

}  // namespace dfw::tokenizers
