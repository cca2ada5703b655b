#include "dfw/common/child_env.h"

#include <map>
#include <string_view>

#include <unistd.h>  // environ

namespace dfw {
namespace {

std::string_view Key(std::string_view entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::vector<std::string> ChildEnvironment(const std::vector<std::string>& overrides, const std::vector<std::string>& defaults) {
  std::map<std::string, std::string, std::less<>> last_override;  // key → its last entry
  for (const std::string& o : overrides) last_override[std::string(Key(o))] = o;
  std::vector<std::string> env;
  std::map<std::string, bool, std::less<>> present;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    present[std::string(Key(entry))] = true;
    if (last_override.find(Key(entry)) == last_override.end()) env.emplace_back(entry);
  }
  for (const std::string& d : defaults) {
    const std::string_view k = Key(d);
    if (present.find(k) == present.end() && last_override.find(k) == last_override.end()) {
      env.push_back(d);
      present[std::string(k)] = true;
    }
  }
  for (const auto& [key, entry] : last_override) env.push_back(entry);
  return env;
}

}  // namespace dfw
