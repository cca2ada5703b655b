// The launch half of the Beam export: the validated pipeline options as Dataflow flags, in the
// two forms Dataflow takes a Beam YAML job (python -m apache_beam.yaml.main, gcloud dataflow yaml
// run), written as launch.sh and explained in README.md with the notes.
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "beam_internal.h"
#include "dfw/common/file.h"

namespace dfw {
namespace {

constexpr const char* kWheel = "dist/dfworker_beam-0.1.0-py3-none-any.whl";

// A value for the shell: single-quoted literally, or a "${VAR}" placeholder left to expand.
std::string ShellValue(const std::string& v) {
  if (v.rfind("${", 0) == 0 && v.back() == '}') return "\"" + v + "\"";
  std::string out = "'";
  for (char c : v) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

struct Flag {
  std::string name;
  std::string value;  // literal, or a ${VAR} placeholder
};

// Dataflow flags, in a fixed order: where the job runs, then the worker shape dfworker validated.
std::vector<Flag> DataflowFlags(const PipelineOptions& o, bool companion) {
  std::vector<Flag> f;
  f.push_back({"runner", "DataflowRunner"});
  f.push_back({"project", o.project.value_or("${PROJECT}")});
  f.push_back({"region", o.region.value_or("${REGION}")});
  f.push_back({"temp_location", o.temp_location.value_or("${TEMP_LOCATION}")});
  if (o.machine_type) f.push_back({"machine_type", o.machine_type->value});
  for (const OptionValue& v : o.dataflow_service_options) f.push_back({"dataflow_service_options", v.value});
  for (const OptionValue& v : o.experiments) f.push_back({"experiments", v.value});
  for (const OptionValue& v : o.resource_hints) f.push_back({"resource_hints", v.value});
  if (o.number_of_worker_harness_threads) {
    f.push_back({"number_of_worker_harness_threads", std::to_string(*o.number_of_worker_harness_threads)});
  }
  if (o.sdk_worker_parallelism) f.push_back({"sdk_worker_parallelism", std::to_string(*o.sdk_worker_parallelism)});
  f.push_back({"sdk_container_image", o.sdk_container_image.value_or("${SDK_CONTAINER_IMAGE}")});
  static const std::set<std::string> kSetAbove = {"runner", "project", "region", "temp_location", "machine_type",
                                                  "worker_machine_type", "sdk_container_image", "extra_package",
                                                  "extra_packages", "yaml_experimental_features"};
  for (const auto& [k, v] : o.other) if (!kSetAbove.count(k)) f.push_back({k, v});
  if (companion) f.push_back({"extra_package", kWheel});
  return f;
}

std::string Placeholders(const std::vector<Flag>& flags) {
  std::string out;
  for (const Flag& f : flags) {
    if (f.value.rfind("${", 0) != 0) continue;
    const std::string var = f.value.substr(2, f.value.size() - 3);
    out += fmt::format(": \"${{{}:?set {} (the --{} of the Dataflow job)}}\"\n", var, var, f.name);
  }
  return out;
}

std::string LaunchScript(const std::vector<Flag>& flags, const BeamExport& e, const BeamExportOptions& eo) {
  std::string s = "#!/usr/bin/env bash\n";
  s += "# Dataflow launch of pipeline.yaml, written by `dfworker export --to beam` from " + eo.pipeline_path + ".\n";
  s += "# The flags are the ones dfworker validated (--dry_run); ${VARS} are placeholders to set.\n";
  s += "#   bash launch.sh          python -m apache_beam.yaml.main (needs apache-beam[gcp,yaml] here)\n";
  s += "#   bash launch.sh gcloud   gcloud dataflow yaml run\n";
  s += "set -euo pipefail\nhere=\"$(cd \"$(dirname \"$0\")\" && pwd)\"\n";
  s += Placeholders(flags);
  if (e.uses_companion) {
    s += "# The companion package (dfworker_beam) as the wheel Dataflow installs on every worker.\n";
    s += fmt::format("python -m pip wheel --no-deps \"${{DFWORKER_PYTHON_DIR:-{}}}\" -w \"$here/dist\"\n",
                     eo.companion_dir.empty() ? std::string("python") : eo.companion_dir);
  }
  s += "if [ \"${1:-python}\" = gcloud ]; then\n";
  if (e.uses_companion) {
    s += "  : \"${EXTRA_PACKAGE_GCS:?set EXTRA_PACKAGE_GCS (the wheel in dist/ copied to gs://...)}\"\n";
  }
  // gcloud takes the options as one KEY=VALUE list; service options hold ';' and ',', so the list
  // delimiter is changed to '~' with gcloud's ^DELIM^ escape.
  std::string opts;
  for (const Flag& f : flags) {
    if (f.name == "runner" || f.name == "region" || f.name == "project") continue;
    std::string v = f.value;
    if (f.name == "extra_package") {
      opts += (opts.empty() ? "" : "~") + std::string("extra_packages=${EXTRA_PACKAGE_GCS}");
      continue;
    }
    opts += (opts.empty() ? "" : "~") + f.name + "=" + v;
  }
  s += "  gcloud dataflow yaml run \"${JOB_NAME:-dfworker-export}\" \\\n";
  s += "    --yaml-pipeline-file=\"$here/pipeline.yaml\" \\\n";
  s += fmt::format("    --project={} --region={} \\\n", ShellValue(flags[1].value), ShellValue(flags[2].value));
  s += "    --pipeline-options=\"^~^" + opts + "\"\n";
  s += "else\n";
  s += "  python -m apache_beam.yaml.main --yaml_pipeline_file=\"$here/pipeline.yaml\"";
  for (const Flag& f : flags) {
    const std::string v = f.name == "extra_package" ? "$here/" + f.value : f.value;
    s += " \\\n    --" + f.name + "=" + (f.name == "extra_package" ? "\"" + v + "\"" : ShellValue(v));
  }
  s += "\nfi\n";
  return s;
}

std::string Readme(const std::vector<Flag>& flags, const BeamExport& e, const BeamExportOptions& eo) {
  std::string r = "# Beam export of `" + eo.pipeline_path + "`\n\n";
  r += "Written by `dfworker export --to beam`. Files:\n\n";
  r += "- `pipeline.yaml`: the pipeline in Beam YAML (Apache Beam 2.77's loader accepts it).\n";
  r += "- `launch.sh`: the Dataflow launch with the flags dfworker validated (`bash launch.sh` or `bash launch.sh gcloud`).\n";
  if (e.uses_companion) {
    r += "- It needs the companion package `dfworker_beam` (the `python/` folder of the dfworker repository";
    r += eo.companion_dir.empty() ? "" : ", here `" + eo.companion_dir + "`";
    r += "): its transforms load the same model files dfworker loads. Beam finds them through the `providers:` entry "
         "of type python (no `packages:`, so nothing is installed at run time: the package must be importable where "
         "the pipeline is built, and Dataflow workers get it as `--extra_package`).\n";
  }
  r += "\n## Run it locally (Beam's DirectRunner)\n\n```\n";
  r += "python -m venv venv && venv/bin/pip install 'apache-beam[yaml]'";
  if (e.uses_companion) r += " " + (eo.companion_dir.empty() ? std::string("path/to/dfworker/python") : eo.companion_dir);
  r += "\n";
  if (e.uses_ml) r += "venv/bin/pip install sentence-transformers   # MLTransform's SentenceTransformerEmbeddings\n";
  r += "# from the directory the dfworker pipeline runs from (paths in pipeline.yaml are relative to it):\n";
  r += "venv/bin/python -m apache_beam.yaml.main --yaml_pipeline_file=" + eo.out_dir + "/pipeline.yaml --runner=DirectRunner\n```\n";
  r += "\n## Run it on Dataflow\n\nInputs, outputs and model directories must be `gs://` paths the workers can read: "
       "edit them in `pipeline.yaml` (or turn them into `{{ JINJA }}` variables) before launching.\n\n```\n";
  std::string cmd = "python -m apache_beam.yaml.main --yaml_pipeline_file=pipeline.yaml";
  for (const Flag& f : flags) cmd += " \\\n  --" + f.name + "=" + ShellValue(f.value);
  r += cmd + "\n```\n\nor `bash launch.sh gcloud` for the `gcloud dataflow yaml run` form (the options go in one "
            "`--pipeline-options` list; with the companion package, upload the wheel and set `EXTRA_PACKAGE_GCS`).\n";
  r += "\n## Not carried over, or changed\n\n";
  if (e.notes.empty()) r += "Nothing: every transform and key has the same meaning in Beam.\n";
  for (const std::string& n : e.notes) r += "- " + n + "\n";
  if (e.uses_ml) {
    r += "- Beam's MLTransform refuses a `write_artifact_location` that already holds artifacts: remove it before "
         "running the pipeline again.\n";
  }
  r += "- Beam's ReadFromJson parses through pandas: a list column arrives as the text of the list, and a float can "
       "differ from a correctly rounded parse in the last digit (the companion transforms read such text back).\n";
  if (!e.manual_steps.empty()) {
    r += "\n## MANUAL STEPS (the pipeline does not run until each is done)\n\n";
    for (const std::string& m : e.manual_steps) {
      r += "- " + m + ": `pipeline.yaml` holds a `PyTransform` placeholder (`dfworker_beam.ManualStep`) that stops the "
           "pipeline with this message; replace it with a Beam transform.\n";
    }
  }
  return r;
}

}  // namespace

namespace export_internal {
void AddLaunchFiles(const PipelineOptions& options, const BeamExportOptions& eo, BeamExport& e) {
  const std::vector<Flag> flags = DataflowFlags(options, e.uses_companion);
  e.launch_sh = LaunchScript(flags, e, eo);
  e.readme = Readme(flags, e, eo);
}
}  // namespace export_internal

Status WriteBeamExport(const BeamExport& e, const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return IoError("--out '" + out_dir + "': cannot create the folder: " + ec.message());
  for (const auto& [name, text] : std::vector<std::pair<std::string, const std::string*>>{
           {"pipeline.yaml", &e.pipeline_yaml}, {"README.md", &e.readme}, {"launch.sh", &e.launch_sh}}) {
    const mode_t mode = name == "launch.sh" ? mode_t{0755} : kOutputFileMode;  // launch.sh is run as it is
    RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/" + name, *text, /*sync=*/true, mode));
  }
  return Status::OK();
}

}  // namespace dfw
