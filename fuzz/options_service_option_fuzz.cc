// libFuzzer target for the service-option parser: the worker_accelerator grammar in its three
// forms, whole command lines (one argument per line) and the YAML options: block.
// Invariants checked beyond "no crash": every diagnostic's caret lies inside the text it quotes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/options/accelerator.h"
#include "dfw/options/parse.h"

namespace {

void CheckCarets(const std::vector<dfw::Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) {
    if (d.code.empty() || d.message.empty()) std::abort();
    if (d.origin && d.caret_offset + d.caret_length > d.origin->text.size()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
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
  } else {
    dfw::PipelineOptions options = dfw::ParsePipelineOptions({}, text, "fuzz.yaml");
    CheckCarets(options.diagnostics);
  }
  return 0;
}
