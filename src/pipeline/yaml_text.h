// Finding where a YAML node ends in the file's text (yaml-cpp gives only where a node starts), for
// the edits --fix_tests and --create_test make without re-emitting the rest of the file.
#pragma once

#include <cstddef>
#include <string>

namespace dfw::pipeline_internal {

// End (exclusive) of the flow collection starting at text[begin] ('[' or '{'), quotes and comments respected.
std::size_t FlowEnd(const std::string& text, std::size_t begin);

// End (exclusive, before the newline) of the block sequence whose first '-' is at `begin`, in
// 0-based column `column`: its last content line before a line indented less, or as much but not
// a `-` item. Blank and comment lines after the last item are not part of it.
std::size_t BlockEnd(const std::string& text, std::size_t begin, int column);

}  // namespace dfw::pipeline_internal
