#include "dfw/worker/bundle_table.h"

#include "dfw/common/strings.h"

namespace dfw {

std::optional<std::string> EncodeBundleTable(const std::vector<Bundle>& bundles) {
  std::string out;
  for (const Bundle& b : bundles) {
    if (b.split.path.find('\n') != std::string::npos) return std::nullopt;
    out += std::to_string(b.id) + ' ' + std::to_string(b.source) + ' ' + std::to_string(b.split.begin) + ' ' +
           std::to_string(b.split.end) + ' ' + std::to_string(b.split.first_line) + ' ' + b.split.path + '\n';
  }
  return out;
}

Result<std::vector<Bundle>> DecodeBundleTable(std::string_view text) {
  std::vector<Bundle> bundles;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    std::size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      return DataLoss("bundle table line " + std::to_string(line_no) + ": not terminated by a newline");
    }
    const std::string_view full = text.substr(0, nl);
    std::string_view line = full;
    text.remove_prefix(nl + 1);
    int64_t numbers[5];
    for (int64_t& n : numbers) {
      std::size_t sp = line.find(' ');
      auto value = sp == std::string_view::npos ? std::nullopt : ParseInt64(line.substr(0, sp));
      if (!value) {
        return DataLoss("bundle table line " + std::to_string(line_no) +
                        ": expected '<id> <source> <begin> <end> <first_line> <path>', got '" + std::string(full) + "'");
      }
      n = *value;
      line.remove_prefix(sp + 1);
    }
    Bundle b;
    b.id = numbers[0];
    b.source = static_cast<int>(numbers[1]);
    b.split = SourceSplit{std::string(line), numbers[2], numbers[3], numbers[4]};
    if (b.id < 0 || numbers[1] < 0 || numbers[1] > (1 << 30) || b.split.begin < 0 || b.split.begin > b.split.end ||
        b.split.first_line < 1) {
      return DataLoss("bundle table line " + std::to_string(line_no) + ": bundle " + std::to_string(b.id) +
                      " has an impossible range (source " + std::to_string(numbers[1]) + ", bytes " +
                      std::to_string(b.split.begin) + ".." + std::to_string(b.split.end) + ", first line " +
                      std::to_string(b.split.first_line) + ")");
    }
    bundles.push_back(std::move(b));
  }
  return bundles;
}

}  // namespace dfw
