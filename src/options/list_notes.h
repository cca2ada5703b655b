// Internal: which list rule applies to one occurrence of a list flag, and the notes a Beam Python
// split deserves (an item Beam drops, a line that Beam <= 2.66 reads differently).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dfw/options/diagnostic.h"
#include "dfw/options/list_split.h"
#include "flag_table.h"

namespace dfw::options_internal {

// YAML sequence elements: never split. Java spellings (and plain --experiments once any Java
// spelling is in use): Java's comma list. Other YAML scalars: one item (Beam YAML passes the
// options: block as keyword arguments). Python --experiments / --dataflow_service_options on the
// command line: Beam >= 2.67's _smart_split. Everything else: one item.
ListSplit ListSplitFor(const FlagSpec& spec, std::string_view name, bool from_yaml, bool from_yaml_list,
                       bool java_list_style);

// After a kBeamPython split of `value` (the text after `--name=`) into `kept` non-empty items:
// warns about dropped empty items (list-empty-item) and, when the occurrence became more than one
// item, that Beam <= 2.66 reads it as one string (beam-version-split).
void NoteBeamPythonSplit(const std::string& name, const std::string& value, const Origin& origin,
                         const ListSplitResult& split, std::size_t kept, std::vector<Diagnostic>& out);

// `text` in single quotes, shortened in the middle past 120 bytes so a 1 MB argument stays readable.
std::string QuoteShort(std::string_view text);

}  // namespace dfw::options_internal
