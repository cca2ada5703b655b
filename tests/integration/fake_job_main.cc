// dfw_fake_job: the launcher and SDK harness wired to the LineRangeExecutor, so real-process tests
// exercise process supervision, leases, commits, resume and signals without the pipeline module.
//   dfw_fake_job run --input FILE --lines_per_bundle K --processes N --output FILE
//                    [--job_dir DIR | --resume DIR] [--lease_timeout_ms MS] [--heartbeat_ms MS] [--grace_ms MS]
//   dfw_fake_job run --pipeline FILE.yaml --processes N [--job_dir DIR | --resume DIR]
//                    (the production path: RunPipelineJob, pipeline executor in every SDK process)
//   dfw_fake_job sdk_harness --job_dir DIR --index I --threads T      (started by the launcher)

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "dfw/launcher/launcher.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/logging.h"
#include "dfw/common/process.h"
#include "dfw/launcher/pipeline_launch.h"
#include "dfw/pipeline/spec.h"
#include "dfw/stages/stage.h"
#include "dfw/worker/sdk_harness.h"

namespace {

// Concatenates committed bundle outputs in plan order into one output file.
dfw::Status Finalize(const dfw::JobDir& dir, const std::string& output) {
  std::string all;
  for (const auto& b : dir.info().bundles) {
    auto text = dfw::ReadWholeFile(dir.CommittedDir() + "/out/bundle-" + b + ".done");
    if (!text.ok()) return dfw::DataLoss("committed output of bundle '" + b + "' is missing");
    all += *text;
  }
  return dfw::WriteFileAtomically(output, all);
}

int Run(int argc, char** argv) {
  CLI::App app{"dfw_fake_job"};
  app.require_subcommand(1);
  auto* run = app.add_subcommand("run");
  std::string input, output, job_dir, resume, pipeline;
  int64_t per_bundle = 10;
  int processes = 1, lease_ms = 3000, heartbeat_ms = 100, grace_ms = 5000;
  run->add_option("--input", input);
  run->add_option("--output", output);
  run->add_option("--pipeline", pipeline);
  run->add_option("--job_dir", job_dir);
  run->add_option("--resume", resume);
  run->add_option("--lines_per_bundle", per_bundle);
  run->add_option("--processes", processes);
  run->add_option("--lease_timeout_ms", lease_ms);
  run->add_option("--heartbeat_ms", heartbeat_ms);
  run->add_option("--grace_ms", grace_ms);
  auto* sdk = app.add_subcommand("sdk_harness");
  dfw::SdkHarnessOptions sdk_opts;
  sdk->add_option("--job_dir", sdk_opts.job_dir)->required();
  sdk->add_option("--index", sdk_opts.index)->required();
  sdk->add_option("--threads", sdk_opts.threads);
  sdk->add_option("--coordinator_socket", sdk_opts.coordinator_socket);
  CLI11_PARSE(app, argc, argv);

  if (sdk->parsed()) {
    dfw::Status s = dfw::RunSdkHarnessMain(sdk_opts);
    if (!s.ok()) std::fprintf(stderr, "sdk_harness: %s\n", s.ToString().c_str());
    return s.ok() ? 0 : 1;
  }
  if (!pipeline.empty()) {
    dfw::PipelineLaunchOptions p;
    // As `dfworker run` does: the pipeline loaded once, here, and handed to the launcher.
    dfw::LoadedPipeline loaded;
    if (resume.empty()) {
      std::ifstream in(pipeline);
      std::stringstream text;
      text << in.rdbuf();
      loaded.path = pipeline;
      loaded.yaml = text.str();
      dfw::StageRegistry registry;
      dfw::RegisterBuiltinStages(registry);
      dfw::Result<dfw::PipelineSpec> spec = dfw::LoadPipelineString(loaded.yaml, registry, loaded.path);
      if (!spec.ok()) {
        dfw::PrintRunStopped(spec.status().message());
        return static_cast<int>(dfw::ExitCodeFor(spec.status()));
      }
      loaded.spec = std::move(*spec);
      p.pipeline = &loaded;
    }
    p.processes = processes;
    p.job_dir = job_dir;
    p.resume_dir = resume;
    return dfw::RunPipelineJob(p);
  }
  dfw::LauncherOptions opts;
  opts.resume_dir = resume;
  opts.job_dir = job_dir;
  opts.processes = processes;
  opts.sdk_command = {dfw::SelfExecutable(), "sdk_harness"};
  opts.coordinator.lease_timeout = std::chrono::milliseconds(lease_ms);
  opts.grace = std::chrono::milliseconds(grace_ms);
  opts.progress_interval = std::chrono::milliseconds(500);
  opts.finalize = [output](const dfw::JobDir& dir, const dfw::MetricsSnapshot&, const std::vector<std::string>&) {
    return Finalize(dir, output);
  };
  if (resume.empty()) {
    std::ifstream in(input);
    if (!in) {
      std::fprintf(stderr, "run stopped: cannot read --input '%s'\n", input.c_str());
      return 2;
    }
    int64_t lines = 0;
    for (std::string l; std::getline(in, l);) ++lines;
    opts.job.executor = "lines";
    opts.job.params["input"] = input;
    opts.job.heartbeat_ms = heartbeat_ms;
    opts.job.bundles = dfw::LineRangeBundles(lines, per_bundle);
  }
  dfw::LaunchResult r = dfw::RunLauncher(opts);
  if (!r.message.empty()) std::fprintf(stderr, "run stopped: %s\n", r.message.c_str());
  return static_cast<int>(r.code);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run stopped: %s\n", e.what());
    return 1;
  }
}
