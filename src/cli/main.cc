// dfworker entry point: registers the subcommands, splits pipeline flags off argv, runs CLI11.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include "arg_split.h"
#include "commands.h"
#include "dfw/common/exit_code.h"

int main(int argc, char** argv) {
  CLI::App app{"dfworker: one Google Cloud Dataflow GPU worker VM on this machine", "dfworker"};
  app.set_version_flag("--version", std::string("dfworker ") + DFW_VERSION);
  app.require_subcommand(1);
  dfw::cli::CliContext context;
  dfw::cli::AddRunCommand(app, context);
  dfw::cli::AddPlanCommand(app, context);
  dfw::cli::AddReportCommand(app, context);
  dfw::cli::AddBenchCommand(app, context);
  dfw::cli::AddExportCommand(app, context);
  dfw::cli::AddTestCommand(app, context);
  dfw::cli::AddMpsCommand(app, context);
  dfw::cli::AddSdkHarnessCommand(app, context);
  dfw::cli::AddModelHostCommand(app, context);

  std::vector<std::string> args(argv + 1, argv + argc);
  dfw::cli::SplitArgs split = dfw::cli::SplitPipelineArgs(app, args);
  context.pipeline_args = std::move(split.pipeline);
  std::reverse(split.cli.begin(), split.cli.end());  // CLI11 takes the vector form in reverse order
  try {
    app.parse(split.cli);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help/version (code 0) or the error
    return code == 0 ? 0 : static_cast<int>(dfw::ExitCode::kInvalidInvocation);
  }
  return context.exit_code;
}
