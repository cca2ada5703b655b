// `dfworker model_host --weights W --models_dir D --copy C --name N [--ready_fd F] [--device CPU|GPU]` (hidden): one
// model-host process of a running job, holding one shared model copy (dfw/worker/model_host.h).
// `dfworker run` fork+execs it (model_hosts.h); it is not meant to be run by hand.
#include <memory>

#include <sys/stat.h>

#include "commands.h"
#include "dfw/common/logging.h"
#include "dfw/worker/model_host.h"

namespace dfw::cli {

void AddModelHostCommand(CLI::App& app, CliContext& context) {
  auto options = std::make_shared<ModelHostOptions>();
  CLI::App* host = app.add_subcommand("model_host", "One model-host process of a running job (started by run)");
  host->group("");  // hidden
  host->add_option("--weights", options->weights_path, "The model's safetensors file")->required();
  host->add_option("--models_dir", options->models_dir, "Where shared copies are published")->required();
  host->add_option("--copy", options->copy, "Which copy this host holds")->check(CLI::NonNegativeNumber);
  host->add_option("--name", options->name, "Client name (ledger, MPS, logs)");
  host->add_option("--ready_fd", options->ready_fd, "File descriptor to report readiness on (set by run)");
  host->add_option("--device", options->device, "The model's device: GPU also exports a CUDA copy")
      ->check(CLI::IsMember({"CPU", "GPU"}));
  host->callback([options, &context] {
    ::umask(077);  // as the launcher sets it (run_command.cc), for one started by hand
    (void)InitLogging("info", options->name);
    context.exit_code = RunModelHost(*options);
  });
}

}  // namespace dfw::cli
