// A strict well-formedness check for the reports' HTML (written as XHTML-style markup): every
// element closed in order, void elements self-closed, attributes quoted, no stray '<' or '&'.
#pragma once

#include <string>
#include <vector>

namespace dfw::report::testing {

// "" when well formed, else what is wrong and where.
inline std::string CheckWellFormed(const std::string& html) {
  std::vector<std::string> open;
  std::size_t i = 0;
  if (html.rfind("<!DOCTYPE html>", 0) != 0) return "no <!DOCTYPE html>";
  i = html.find('>') + 1;
  while (i < html.size()) {
    const char c = html[i];
    if (c == '&') {
      std::size_t semi = html.find(';', i);
      if (semi == std::string::npos || semi - i > 8) return "stray & at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (c != '<') {
      ++i;
      continue;
    }
    std::size_t end = html.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = html.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside a tag at " + std::to_string(i);
    // Quotes inside a tag must pair up.
    std::size_t quotes = 0;
    for (char t : tag) quotes += t == '"';
    if (quotes % 2) return "unbalanced quotes in <" + tag + ">";
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes <" + (open.empty() ? std::string("nothing") : open.back()) + "> at " + std::to_string(i);
      }
      open.pop_back();
    } else if (!tag.empty() && tag.back() == '/') {
      // self-closed
    } else {
      const std::string name = tag.substr(0, tag.find_first_of(" \t\n"));
      if (name == "meta" || name == "br" || name == "img" || name == "link") return "void <" + name + "> not self-closed";
      open.push_back(name);
      if (name == "style") {  // raw text up to </style>
        std::size_t close = html.find("</style>", end);
        if (close == std::string::npos) return "unclosed <style>";
        end = close - 1;
      }
    }
    i = end + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return "";
}

}  // namespace dfw::report::testing
