// libFuzzer target for the service-option parser: the worker_accelerator grammar in its three
// forms, whole command lines (one argument per line), the YAML options: block, and the list
// splitter (Beam Python's _smart_split, Java's comma lists).
// Invariants checked beyond "no crash": every diagnostic's caret lies inside the text it quotes;
// split items lie inside the value, in order, without overlap; Beam items are non-empty, hold no
// separating comma and carry no surrounding whitespace; Java items rejoined with ',' give the value.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/options/accelerator.h"
#include "dfw/options/list_split.h"
#include "dfw/options/parse.h"

namespace {

void CheckCarets(const std::vector<dfw::Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) {
    if (d.code.empty() || d.message.empty()) std::abort();
    if (d.origin && d.caret_offset + d.caret_length > d.origin->text.size()) std::abort();
  }
}

void CheckSplit(std::string_view value) {
  dfw::ListSplitResult beam = dfw::SplitListValue(value, dfw::ListSplit::kBeamPython);
  std::size_t end = 0;
  for (const dfw::ListItem& item : beam.items) {
    if (item.length == 0 || item.offset < end || item.offset + item.length > value.size()) std::abort();
    std::string_view text = value.substr(item.offset, item.length);
    if (dfw::PythonSpaceAt(text, 0) != 0) std::abort();
    // A comma inside an item is only kept after two '=' of that item.
    std::size_t comma = text.find(',');
    if (comma != std::string_view::npos) {
      std::string_view head = text.substr(0, comma);
      if (std::count(head.begin(), head.end(), '=') < 2) std::abort();
    }
    end = item.offset + item.length;
  }
  dfw::ListSplitResult java = dfw::SplitListValue(value, dfw::ListSplit::kJava);
  std::string joined;
  for (std::size_t i = 0; i < java.items.size(); ++i) {
    if (i) joined += ',';
    joined += value.substr(java.items[i].offset, java.items[i].length);
  }
  if (joined != value) std::abort();
  // The parser over the same value: Python and Java spellings, '=' and space forms.
  for (const char* flag : {"--experiments", "--dataflow_service_option", "--dataflowServiceOptions"}) {
    std::string arg = std::string(flag) + "=" + std::string(value);
    CheckCarets(dfw::ParsePipelineOptions({arg}).diagnostics);
    CheckCarets(dfw::ParsePipelineOptions({flag, std::string(value)}).diagnostics);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 4;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode == 0) {
    for (auto form : {dfw::AcceleratorForm::kServiceOption, dfw::AcceleratorForm::kExperiment,
                      dfw::AcceleratorForm::kResourceHint}) {
      std::string arg = "--dataflow_service_options=worker_accelerator=" + std::string(text);
      dfw::Origin origin{"fuzz", arg, 27};
      std::vector<dfw::Diagnostic> diagnostics;
      dfw::AcceleratorSpec spec = dfw::ParseAcceleratorSpec(text, 46, form, origin, diagnostics);
      if (spec.count < 0) std::abort();
      CheckCarets(diagnostics);
    }
  } else if (mode == 1) {
    std::vector<std::string> args;
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      args.emplace_back(text.substr(start, end - start));
      start = end + 1;
    }
    dfw::PipelineOptions options = dfw::ParsePipelineOptions(args);
    CheckCarets(options.diagnostics);
  } else if (mode == 2) {
    dfw::PipelineOptions options = dfw::ParsePipelineOptions({}, text, "fuzz.yaml");
    CheckCarets(options.diagnostics);
  } else {
    CheckSplit(text);
  }
  return 0;
}
