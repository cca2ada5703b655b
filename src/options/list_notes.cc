#include "list_notes.h"

namespace dfw::options_internal {

ListSplit ListSplitFor(const FlagSpec& spec, std::string_view name, bool from_yaml, bool from_yaml_list,
                       bool java_list_style) {
  if (from_yaml_list) return ListSplit::kNone;
  if (spec.java || (java_list_style && name == "experiments")) return ListSplit::kJava;
  if (from_yaml) return ListSplit::kNone;
  if (spec.dest == FlagDest::kServiceOptions || spec.dest == FlagDest::kExperiments) return ListSplit::kBeamPython;
  return ListSplit::kNone;
}

std::string QuoteShort(std::string_view text) {
  constexpr std::size_t kMax = 120;
  if (text.size() <= kMax) return "'" + std::string(text) + "'";
  return "'" + std::string(text.substr(0, 60)) + "..." + std::string(text.substr(text.size() - 40)) + "' (" +
         std::to_string(text.size()) + " bytes)";
}

void NoteBeamPythonSplit(const std::string& name, const std::string& value, const Origin& origin,
                         const ListSplitResult& split, std::size_t kept, std::vector<Diagnostic>& out) {
  const bool service = name.find("service") != std::string::npos;
  const std::string noun = service ? "service option" : "experiment";
  const std::size_t base = origin.value_offset;
  if (kept == 0) {
    out.push_back(MakeDiagnostic(Severity::kWarning, "list-empty-item",
                                 "--" + name + "=" + QuoteShort(value) + " holds no " + noun +
                                     ": Beam drops this occurrence",
                                 "remove the flag, or give it a value", origin, base, value.size()));
    return;
  }
  if (!split.empty_items.empty()) {
    std::size_t n = split.empty_items.size();
    out.push_back(MakeDiagnostic(Severity::kWarning, "list-empty-item",
                                 "--" + name + "=" + QuoteShort(value) + " has " + std::to_string(n) + " empty " +
                                     (n == 1 ? "item" : "items") + " between commas; Beam drops " +
                                     (n == 1 ? "it" : "them"),
                                 "remove the extra commas", origin, base + split.empty_items.front(), 0));
  }
  if (kept < 2) return;
  std::vector<std::string> quoted;
  std::string repeated;
  for (std::size_t i = 0; i < split.items.size(); ++i) {
    std::string_view item = std::string_view(value).substr(split.items[i].offset, split.items[i].length);
    if (i < 4) quoted.push_back(QuoteShort(item));
    if (i < 2) {
      repeated += (i ? " --" : "--") + name + "=" + (item.size() <= 200 ? std::string(item) : QuoteShort(item));
    }
  }
  std::string list;
  for (std::size_t i = 0; i < quoted.size(); ++i) list += (i ? ", " : "") + quoted[i];
  if (split.items.size() > quoted.size()) list += ", ...";
  out.push_back(MakeDiagnostic(
      Severity::kWarning, "beam-version-split",
      "Beam >= 2.67 reads --" + name + "=" + QuoteShort(value) + " as " + std::to_string(kept) + " " + noun +
          "s (" + list + "); Beam <= 2.66 reads it as ONE " + noun + ", the whole string",
      "to mean the same on every Beam version, repeat the flag once per " + noun + ": " + repeated +
          (kept > 2 ? " ..." : ""),
      origin, base, value.size()));
}

}  // namespace dfw::options_internal
