// Beam/Dataflow flags are not CLI11 options: there are too many spellings and unknown ones must
// only warn. Before CLI11 parses argv, the flags of a subcommand that allows extras are moved
// aside for the options parser; the rest (that subcommand's own CLI11 options and positionals)
// stays for CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace dfw::cli {

struct SplitArgs {
  std::vector<std::string> cli;       // for CLI11 (argv without argv[0])
  std::vector<std::string> pipeline;  // for OptionsParser::AddCommandLine, in order
};

// `args` excludes argv[0]. `--flag value` pairs stay together: a known pipeline flag takes the next
// argument unless it starts with "--"; an unknown one takes it only after the first positional
// (so `run --foo pipeline.yaml` keeps the pipeline path).
SplitArgs SplitPipelineArgs(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace dfw::cli
