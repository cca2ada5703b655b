// Splitting one occurrence of a list flag (--experiments=a,b) into its items, the way the SDK that
// submits the job does (reference §2).
//
//   kBeamPython: Apache Beam Python >= 2.67 (`_CommaSeparatedListAction._smart_split` in
//                apache_beam/options/pipeline_options.py, 2.77 checked). A comma separates items
//                while the current item holds at most one '='; once it holds two or more, every
//                later comma of the occurrence stays inside it ("a=b=c,d" is one item,
//                "a=b,c" is two). Items are stripped of surrounding whitespace (Python's
//                str.strip(), Unicode whitespace included); empty items are dropped.
//   kJava:       Beam Java's shorthand list style (PipelineOptionsFactory): every comma separates;
//                items are kept as written, empty ones included (the caller refuses those).
//   kNone:       one item, the whole value (Beam Python <= 2.66, and keyword arguments such as the
//                pipeline file's options: block).
//
// Pure functions on bytes; never throw; any input (invalid UTF-8, 1 MB) is fine.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace dfw {

enum class ListSplit { kNone, kJava, kBeamPython };

// One item: value.substr(offset, length).
struct ListItem {
  std::size_t offset = 0;
  std::size_t length = 0;
};

struct ListSplitResult {
  std::vector<ListItem> items;            // kJava: may hold empty items; otherwise never empty ones
  std::vector<std::size_t> empty_items;   // kBeamPython: offsets of the items Beam drops as empty
  bool commas_kept = false;               // kBeamPython: a comma stayed inside an item (two '=' before it)
};

ListSplitResult SplitListValue(std::string_view value, ListSplit how);

// Convenience for tests and messages: the item texts.
std::vector<std::string_view> ListItemTexts(std::string_view value, const ListSplitResult& result);

// Bytes of the whitespace character at value[at] as Python's str.isspace() sees it (ASCII
// \t\n\v\f\r, \x1c-\x1f, space, and the UTF-8 encodings of U+0085, U+00A0, U+1680, U+2000-U+200A,
// U+2028, U+2029, U+202F, U+205F, U+3000), or 0 when it is not whitespace.
std::size_t PythonSpaceAt(std::string_view value, std::size_t at);

}  // namespace dfw
