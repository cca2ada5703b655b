// Placeholder entry point; replaced by the CLI module.
#include <CLI/CLI.hpp>
#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"dfworker: one Dataflow GPU worker VM on this machine"};
  app.set_version_flag("--version", std::string("dfworker ") + DFW_VERSION);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
