#include "dfw/worker/bundle_table.h"

#include "dfw/common/strings.h"

namespace dfw {

WorkRange ToWorkRange(const Bundle& b) { return WorkRange{b.source, b.split.path, b.split.begin, b.split.end, b.split.first_line}; }

Bundle FromWorkRange(int64_t id, const WorkRange& r) {
  Bundle b;
  b.id = id;
  b.source = r.source;
  b.split = SourceSplit{r.path, r.begin, r.end, r.first_line};
  return b;
}

std::optional<std::string> EncodeBundleTable(const std::vector<Bundle>& bundles) {
  std::vector<TableEntry> entries;
  entries.reserve(bundles.size());
  for (const Bundle& b : bundles) entries.push_back(TableEntry{std::to_string(b.id), ToWorkRange(b)});
  return EncodeRangeTable(entries);
}

Result<std::vector<Bundle>> DecodeBundleTable(std::string_view text) {
  ASSIGN_OR_RETURN(std::vector<TableEntry> entries, DecodeRangeTable(text));
  std::vector<Bundle> bundles;
  bundles.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto id = ParseInt64(entries[i].id);
    if (!id || *id < 0) {
      return DataLoss("bundle table line " + std::to_string(i + 1) + ": bundle " + entries[i].id +
                      " has an impossible id (not a number >= 0)");
    }
    bundles.push_back(FromWorkRange(*id, entries[i].range));
  }
  return bundles;
}

}  // namespace dfw
