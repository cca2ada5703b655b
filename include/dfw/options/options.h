// PipelineOptions: the Dataflow/Beam launch options of one job, parsed from the command line and
// the pipeline file's `options:` block (see parse.h), plus what the service options mean.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dfw/options/diagnostic.h"

namespace dfw {

// One option value and where it was written.
struct OptionValue {
  std::string value;
  Origin origin;  // origin.value_offset points at the first byte of `value`
};

// A sub-field of a structured value (e.g. "count:2" inside worker_accelerator), located in origin.text.
struct SubField {
  std::string text;         // the sub-field as written, e.g. "count:2"
  std::size_t offset = 0;   // byte offset inside Origin::text
};

// How the accelerator was requested (reference §3, §4).
enum class AcceleratorForm {
  kServiceOption,  // --dataflow_service_options=worker_accelerator=...
  kExperiment,     // --experiments=worker_accelerator=... (older form)
  kResourceHint,   // --resource_hints=accelerator=... (right fitting)
};

const char* AcceleratorFormName(AcceleratorForm form);

// A parsed `type:T;count:N;install-nvidia-driver[:ARG];use_nvidia_mps` value.
struct AcceleratorSpec {
  AcceleratorForm form = AcceleratorForm::kServiceOption;
  Origin origin;                      // the flag it came from
  std::string gpu_type;               // "nvidia-l4"; empty when missing (a diagnostic was emitted)
  int count = 0;                      // GPUs per worker; 0 when missing or malformed
  bool install_driver = false;        // install-nvidia-driver present
  std::string driver_arg;             // "5xx", "latest" (= latest driver), "version=latest", ... ("" = default)
  bool use_mps = false;               // use_nvidia_mps present
  std::string machine_type;           // right-fitting hint `machine_type:M` (resource hints only)
  // `provisioning_model:FLEX_START`: GPU flex-start provisioning (Preview, batch pipelines only, per
  // https://cloud.google.com/dataflow/docs/gpu/use-gpus and the 2025-09-24 release note); "" = the
  // default (standard) provisioning. FLEX_START is the only value Dataflow documents.
  std::string provisioning_model;
  std::optional<SubField> type_field, count_field, driver_field, mps_field, machine_field, provisioning_field;
};

// Where an option's value came from (the dry-run report's `sources`).
enum class OptionSource {
  kDefault,       // not given
  kPipelineYaml,  // the pipeline file's options: block
  kCommandLine,   // a flag (the command line overrides YAML scalars)
  kBoth,          // a list with items from the options: block and from flags
};

// "default", "pipeline_yaml", "command_line", "pipeline_yaml+command_line".
const char* OptionSourceName(OptionSource source);

// One resource hint written in the pipeline file (Beam YAML `resource_hints:` on the pipeline or on a
// transform). The pipeline loader owns the structure (a mapping of known keys to scalars) and refuses
// anything else; the options parser reads the values, so they get the same grammar and rules as
// --resource_hints, with the YAML position as the origin.
struct YamlResourceHint {
  std::string transform;  // the transform's name as written (its type when unnamed); "" = the pipeline level
  std::string transform_where;  // "file:line:col" of that transform (or of `pipeline:`)
  std::string key;        // "accelerator", "min_ram" or "cpu_count"
  OptionValue value;      // the scalar as written; origin = its YAML position
};

// What one transform asked for in its own `resource_hints:`, merged with the pipeline-level hints as
// Beam merges them: the innermost accelerator wins, min_ram and cpu_count take the maximum.
struct TransformResourceHints {
  std::string transform;                    // as in YamlResourceHint
  std::string where;                        // "file:line:col" of the transform ("" at the pipeline level)
  std::optional<AcceleratorSpec> accelerator;  // effective accelerator (own, else the pipeline's)
  bool own_accelerator = false;             // the transform wrote it (not inherited)
  std::optional<uint64_t> min_ram_bytes;    // effective min_ram
  std::optional<int> cpu_count;             // effective cpu_count
};

struct PipelineOptions {
  // --- raw lists, in the order given (YAML block first, then command line) ---
  std::vector<OptionValue> dataflow_service_options;  // each element is ONE service option
  std::vector<OptionValue> experiments;               // each element is ONE experiment
  std::vector<OptionValue> resource_hints;            // "accelerator=...", "min_ram=4GB"

  // --- scalars (the last one given wins; the command line overrides the YAML block) ---
  std::optional<OptionValue> machine_type;                  // --machine_type / --worker_machine_type
  std::optional<int> number_of_worker_harness_threads;      // threads per SDK process, >= 1
  std::optional<OptionValue> number_of_worker_harness_threads_origin;
  std::optional<int> sdk_worker_parallelism;                // SDK processes, 0 = runner decides
  std::optional<OptionValue> sdk_worker_parallelism_origin;
  std::optional<std::string> sdk_container_image;
  std::optional<std::string> runner;
  std::optional<std::string> project;
  std::optional<std::string> region;
  std::optional<std::string> temp_location;
  bool streaming = false;                                   // --streaming
  std::optional<OptionValue> streaming_origin;
  // --flexrs_goal / --flexRSGoal (COST_OPTIMIZED or SPEED_OPTIMIZED): Flexible Resource Scheduling,
  // which "doesn't support GPUs" (https://cloud.google.com/dataflow/docs/guides/flexrs).
  std::optional<OptionValue> flexrs_goal;
  // --python_env: a venv or prefix of Python 3.11 whose packages the embedded Python imports
  // (dfw/python/python.h UseEnvironment); checked by the commands that start Python.
  std::optional<OptionValue> python_env;
  // --python_row_timeout: seconds a Python callable may spend on one row before that row fails with
  // TimeoutError (its error output); 0 = no limit (Dataflow has none: it reports the step stuck).
  int python_row_timeout_s = 0;
  std::optional<OptionValue> python_row_timeout_origin;
  std::map<std::string, std::string> other;                 // known Beam flags dfworker ignores

  // --- provenance ---
  std::vector<std::string> unknown_flags;  // flags (names without dashes) not in the table, in order
  // Python name of each option that was given ("experiments", "machine_type", ...) -> where from;
  // absent = default.
  std::map<std::string, OptionSource> sources;

  // --- derived from the lists above ---
  std::optional<AcceleratorSpec> worker_accelerator;  // service option or experiment form
  // Resource hint form (right fitting): the pipeline-level hint (flags, options: block, `pipeline:
  // resource_hints`), or the transforms' own accelerator hint (they must agree: one worker, one GPU type).
  std::optional<AcceleratorSpec> accelerator_hint;
  std::optional<uint64_t> min_ram_bytes;              // resource hint min_ram: the largest anywhere
  std::optional<OptionValue> enable_prime;            // service option enable_prime
  std::optional<OptionValue> no_use_multiple_sdk_containers;  // that experiment
  std::vector<OptionValue> standalone_mps;            // use_nvidia_mps outside worker_accelerator
  bool java_list_style = false;  // a Java spelling was used: --experiments=a,b is split on commas

  // Problems found while parsing (option-syntax, unknown-flag, misspelled-flag).
  std::vector<Diagnostic> diagnostics;

  // --- resource hints from the pipeline file (Beam YAML), and where the winning values came from ---
  std::vector<YamlResourceHint> yaml_resource_hints;  // in file order (pipeline level and transforms)
  std::optional<TransformResourceHints> pipeline_hints;  // the pipeline level (transform ""), when any hint is there
  std::vector<TransformResourceHints> transform_hints;  // one per transform with its own resource_hints
  std::optional<OptionValue> min_ram_origin;   // the hint that set min_ram_bytes (the largest)
  std::optional<int> cpu_count;                // resource hint cpu_count: the largest anywhere
  std::optional<OptionValue> cpu_count_origin; // the hint that set cpu_count
};

}  // namespace dfw
