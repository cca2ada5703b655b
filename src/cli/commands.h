// Subcommand registration. Each subcommand lives in its own file and exports one Add*Command
// function; main.cc calls each once, so adding a subcommand touches main.cc by one line.
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/exit_code.h"

namespace dfw::cli {

// What a subcommand callback returns for a bad invocation (usage, flags, an unreadable file named).
inline constexpr int kInvalid = kInvalidInvocationExit;

// The largest pipeline file `run`, `plan` and `export` read (a pipeline is text; this bounds a mistake).
inline constexpr std::size_t kMaxPipelineFileBytes = std::size_t{4} << 20;

// Prints "WHO: error: MESSAGE" to stderr and returns kInvalid (WHO: "dfworker" or "dfworker plan").
inline int InvocationError(std::string_view who, const std::string& message) {
  std::cerr << who << ": error: " << message << "\n";
  return kInvalid;
}

// Shared by main and the subcommands for one invocation.
struct CliContext {
  // Pipeline (Beam/Dataflow) flags pulled out of argv before CLI11 parses it (see arg_split.h);
  // only subcommands that allow extras receive them.
  std::vector<std::string> pipeline_args;
  // Set by the subcommand callback that ran: the process exit code.
  int exit_code = 0;
};

// `dfworker run PIPELINE.yaml [pipeline flags] [--dry_run] [--format=text|json] [--log_level=L]`.
void AddRunCommand(CLI::App& app, CliContext& context);

// `dfworker plan PIPELINE.yaml [flags] [--gpu T] [--format=text|json]`: the plan across the catalog (plan_command.cc).
void AddPlanCommand(CLI::App& app, CliContext& context);

// `dfworker report JOB_DIR [--out FILE.html]`: one self-contained HTML page of a run (report_command.cc).
void AddReportCommand(CLI::App& app, CliContext& context);

// `dfworker bench PIPELINE.yaml --sweep KEY=V1,V2 ...`: runs a grid of configurations (bench_command.cc).
void AddBenchCommand(CLI::App& app, CliContext& context);

// `dfworker export PIPELINE.yaml [pipeline flags] --to beam --out DIR [--allow_manual_steps]` (export_command.cc).
void AddExportCommand(CLI::App& app, CliContext& context);

// `dfworker test PIPELINE.yaml [--test_suite F] [--fix_tests] [--create_test]`: the pipeline's own
// tests: (test_command.cc; `run --test` is the same).
void AddTestCommand(CLI::App& app, CliContext& context);

// Hidden `dfworker mps status|quit|daemon --job_dir D` (mps_command.cc).
void AddMpsCommand(CLI::App& app, CliContext& context);

// Hidden `dfworker sdk_harness --job_dir D --index I --threads T`: one SDK process of a job,
// exec'd by the launcher (sdk_harness_command.cc).
void AddSdkHarnessCommand(CLI::App& app, CliContext& context);

// Hidden `dfworker model_host --weights W --models_dir D --copy C --name N --ready_fd F`: one
// model-host process holding a shared model copy, exec'd by run (model_host_command.cc).
void AddModelHostCommand(CLI::App& app, CliContext& context);

}  // namespace dfw::cli
