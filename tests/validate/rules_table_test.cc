// Option lines × expected diagnostic codes: every rule and every spelling, through the whole
// parse → plan → validate path (no processes, no GPU).
#include <gtest/gtest.h>

#include <algorithm>

#include "catalog/catalog_test_util.h"
#include "dfw/options/parse.h"
#include "dfw/validate/report.h"
#include "dfw/validate/validate.h"
#include "test_util.h"

namespace dfw {
namespace {

using dfw::testing::kGiB;
using dfw::testing::kL4Accelerator;

const std::string kSO = "--dataflow_service_options=worker_accelerator=";
const std::string kT4 = "type:nvidia-tesla-t4;count:1;install-nvidia-driver";
const std::string kMps = ";use_nvidia_mps";

// A pipeline whose second transform carries `resource_hints: HINTS` (the flow-style mapping as written).
std::string HintPipeline(const std::string& hints) {
  return "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [1]}\n"
         "    - type: LogForTesting\n      name: Show\n      resource_hints: " + hints + "\n";
}

struct Case {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> codes;  // expected, any order (duplicates count)
  std::string yaml = "";
  std::vector<ModelRequirement> models = {};
  CheckFor check_for = CheckFor::kDataflowLaunch;
};

// A Gemma-2B-shaped text-generation model in bfloat16 (docs/right-sizing.md): 144 MiB per 8192 tokens.
ModelRequirement Decoder(int64_t context, uint64_t cache_bytes) {
  ModelRequirement m{"gen", uint64_t{5012344832}, CopiesPolicy::kPerProcess, 1, 0, "CPU", std::nullopt};
  KvCacheRequirement kv;
  kv.bytes_per_token = 18432;
  kv.context_tokens = context;
  kv.block_tokens = 16;
  kv.cache_bytes = cache_bytes;
  kv.activation_bytes = 67518464;
  m.workspace = WorkspaceSize(cache_bytes + kv.activation_bytes, "test");
  m.kv_cache = kv;
  return m;
}

// Keeps CTest names readable (gtest would print the struct's bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // --- spellings that are fine ---
      {"l4_mps_ok", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8"}, {}},
      {"l4_no_mps_ok", {kSO + kL4Accelerator, "--machine_type=g2-standard-4"}, {}},
      {"singular_service_option", {"--dataflow_service_option=worker_accelerator=" + kL4Accelerator + kMps, "--machine_type=g2-standard-8"}, {}},
      {"java_spellings", {"--dataflowServiceOptions=worker_accelerator=" + kL4Accelerator + kMps, "--workerMachineType=g2-standard-8"}, {}},
      {"space_separated_values", {"--dataflow_service_options", "worker_accelerator=" + kL4Accelerator, "--machine_type", "g2-standard-8"}, {}},
      {"worker_machine_type_alias", {kSO + kL4Accelerator, "--worker_machine_type=g2-standard-12"}, {}},
      {"experiment_form", {"--experiments=worker_accelerator=" + kT4, "--experiments=use_runner_v2", "--machine_type=n1-standard-4"}, {}},
      {"experiment_singular", {"--experiment", "worker_accelerator=" + kT4, "--experiment", "use_runner_v2", "--machine_type=n1-standard-4"}, {}},
      {"resource_hint_form", {"--resource_hints=accelerator=\"" + kL4Accelerator + "\"", "--machine_type", "g2-standard-8"}, {}},
      {"resource_hint_singular_and_min_ram", {"--resource_hint=min_ram=16GB", "--resource_hints", "accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8"}, {}},
      {"java_resource_hints", {"--resourceHints=min_ram=8GiB,accelerator=" + kL4Accelerator, "--workerMachineType=g2-standard-8"}, {}},
      {"resource_hint_machine_type", {"--resource_hints=accelerator=" + kL4Accelerator + ";machine_type:g2-standard-8"}, {}},
      {"driver_5xx", {kSO + "type:nvidia-tesla-t4;count:1;install-nvidia-driver:5xx", "--machine_type=n1-standard-8"}, {}},
      {"driver_version_latest", {kSO + "type:nvidia-tesla-t4;count:1;install-nvidia-driver:version=latest", "--machine_type=n1-standard-8"}, {}},
      {"any_sub_field_order", {kSO + "use_nvidia_mps;install-nvidia-driver;count:1;type:nvidia-l4", "--machine_type=g2-standard-8"}, {}},
      {"threads_python", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8", "--number_of_worker_harness_threads=4"}, {}},
      {"threads_java", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8", "--numberOfWorkerHarnessThreads=4"}, {}},
      {"g4_rtx_pro_6000", {kSO + "type:nvidia-rtx-pro-6000;count:1;install-nvidia-driver;use_nvidia_mps", "--machine_type=g4-standard-48"}, {}},
      {"g4_fixed_count", {kSO + "type:nvidia-rtx-pro-6000;count:2;install-nvidia-driver", "--machine_type=g4-standard-48"}, {"gpu-count-invalid"}},
      {"h200_eight", {kSO + "type:nvidia-h200-141gb;count:8;install-nvidia-driver", "--machine_type=a3-ultragpu-8g"}, {}},
      {"a100_80gb_ultra", {kSO + "type:nvidia-a100-80gb;count:1;install-nvidia-driver;use_nvidia_mps", "--machine_type=a2-ultragpu-1g"}, {}},
      {"t4_custom_n1", {kSO + kT4, "--machine_type=custom-8-30720"}, {}},
      {"t4_custom_extended_memory", {kSO + kT4, "--machine_type=custom-1-13312-ext"}, {}},
      {"v100_n1_custom", {kSO + "type:nvidia-tesla-v100;count:1;install-nvidia-driver", "--machine_type=n1-custom-8-30720"}, {}},
      {"p100_n1_custom", {kSO + "type:nvidia-tesla-p100;count:1;install-nvidia-driver", "--machine_type=n1-custom-8-30720"}, {}},
      {"p4_n1_custom", {kSO + "type:nvidia-tesla-p4;count:1;install-nvidia-driver", "--machine_type=custom-8-30720"}, {}},
      {"n2_custom_no_gpu", {"--machine_type=n2-custom-8-32768"}, {}},
      {"other_scalars", {"--runner=DataflowRunner", "--project=p", "--region=us-central1", "--temp_location=gs://b/t", "--sdk_container_image=img", "--streaming=false"}, {}},
      {"java_scalars", {"--tempLocation=gs://b/t", "--sdkContainerImage=img"}, {}},
      {"ignored_beam_flags", {"--job_name=x", "--num_workers=3", "--save_main_session", "--max_num_workers", "5"}, {}},
      {"no_accelerator", {"--machine_type=n2-standard-8"}, {}},
      {"no_flags_at_all", {}, {}},
      {"driver_latest", {kSO + "type:nvidia-l4;count:1;install-nvidia-driver:latest", "--machine_type=g2-standard-8"}, {}},
      {"known_service_options", {"--dataflow_service_options=enable_hot_key_logging", "--dataflow_service_options=max_workflow_runtime_walltime_seconds=3600"}, {}},
      {"no_use_multiple_without_mps", {kSO + kL4Accelerator, "--machine_type=g2-standard-8", "--experiments=no_use_multiple_sdk_containers"}, {}},
      {"yaml_experiments_not_split", {}, {}, "options:\n  machine_type: g2-standard-8\n  dataflow_service_options: [\"worker_accelerator=" + kL4Accelerator + kMps + "\"]\n  experiments: [\"use_runner_v2,no_use_multiple_sdk_containers\"]\n"},
      // --- option-syntax and flag diagnostics ---
      {"missing_count", {kSO + "type:nvidia-l4;install-nvidia-driver", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"missing_type", {kSO + "count:1;install-nvidia-driver", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"count_zero", {kSO + "type:nvidia-l4;count:0;install-nvidia-driver", "--machine_type=g2-standard-8"}, {"gpu-count-invalid"}},
      {"count_not_a_number", {kSO + "type:nvidia-l4;count:one;install-nvidia-driver", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"duplicate_type", {kSO + kL4Accelerator + ";type:nvidia-l4", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"unknown_sub_field", {kSO + "types:nvidia-l4;count:1;install-nvidia-driver", "--machine_type=g2-standard-8"}, {"option-syntax", "option-syntax"}},
      {"bad_driver_arg", {kSO + "type:nvidia-l4;count:1;install-nvidia-driver:4xx", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"mps_with_value", {kSO + kL4Accelerator + ";use_nvidia_mps:true", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"trailing_semicolon", {kSO + kL4Accelerator + ";", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"worker_accelerator_without_value", {"--dataflow_service_options=worker_accelerator"}, {"option-syntax"}},
      {"accelerator_twice", {kSO + kL4Accelerator, "--experiments=worker_accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8"}, {"accelerator-duplicate"}},
      {"kept_comma_warning", {kSO + "type:nvidia-l4;count:1;install-nvidia-driver:version=latest,enable_prime", "--machine_type=g2-standard-8"}, {"service-option-comma", "option-syntax"}},
      {"yaml_comma_warning", {}, {"service-option-comma"}, "options:\n  machine_type: g2-standard-8\n  dataflow_service_options: [\"worker_accelerator=" + kL4Accelerator + "\", \"enable_prime,use_nvidia_mps\"]\n"},
      // --- Beam >= 2.67 list semantics (Python spellings split at commas, _smart_split) ---
      {"python_experiments_split", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8", "--experiments=use_runner_v2,no_use_multiple_sdk_containers"}, {"mps-single-sdk-process", "beam-version-split"}},
      {"python_service_options_split_prime_mps", {"--dataflow_service_options=enable_prime,worker_accelerator=" + kL4Accelerator + kMps, "--machine_type=g2-standard-8"}, {"mps-prime", "beam-version-split"}},
      {"python_service_options_split_standalone_mps", {kSO + kL4Accelerator + kMps, "--dataflow_service_options=enable_prime,use_nvidia_mps", "--machine_type=g2-standard-8"}, {"mps-prime", "mps-outside-accelerator", "beam-version-split"}},
      {"one_equals_accelerator_then_comma", {"--experiments=worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver,use_runner_v2", "--machine_type=n1-standard-4"}, {"beam-version-split"}},
      {"python_list_empty_item", {"--experiments=use_runner_v2,,", "--dataflow_service_options=,"}, {"list-empty-item", "list-empty-item"}},
      {"python_list_leading_spaces", {"--experiments", " use_runner_v2", "--experiment= no_use_multiple_sdk_containers"}, {}},
      {"unknown_flag", {"--foo=bar"}, {"unknown-flag"}},
      {"unknown_flag_with_separate_value", {"--totally_unrelated_flag", "value"}, {"unknown-flag"}},
      {"misspelled_service_options", {"--dataflow_servce_options=enable_prime"}, {"misspelled-flag"}},
      {"misspelled_machine_type", {"--machine_typ", "g2-standard-8"}, {"misspelled-flag"}},
      {"abbreviated_service_options", {"--dataflow_service_opt=enable_prime"}, {"misspelled-flag"}},
      {"misspelled_harness_threads", {"--number_of_worker_harness_thread=4"}, {"misspelled-flag"}},
      {"misspelled_container_image", {"--sdk_container_imag=img"}, {"misspelled-flag"}},
      {"near_miss_of_other_option_warns", {"--temp_locaton=gs://b/t"}, {"unknown-flag"}},
      {"user_argument_project_id", {"--project_id", "my-project", "--input_table=t"}, {"unknown-flag", "unknown-flag"}},
      {"user_argument_like_experiments", {"--experiment_name=exp-7"}, {"unknown-flag"}},
      {"beam_abbreviation_of_other_option", {"--no_use_public_ip"}, {"unknown-flag"}},
      {"real_beam_options_accepted", {"--sdk_location=container", "--requirements_file=r.txt", "--pickle_library=cloudpickle", "--no_use_public_ips", "--dataflow_kms_key=k", "--prebuild_sdk_container_engine=cloud_build", "--extra_package", "x.tar.gz"}, {}},
      {"real_java_options_accepted", {"--filesToStage=a.jar", "--usePublicIps=false", "--defaultWorkerLogLevel=INFO", "--workerMachineType=g2-standard-8"}, {}},
      {"threads_zero", {"--number_of_worker_harness_threads=0"}, {"option-syntax"}},
      {"parallelism_negative", {"--sdk_worker_parallelism=-1"}, {"option-syntax"}},
      {"streaming_bad_bool", {"--streaming=maybe"}, {"option-syntax"}},
      {"stray_argument", {"extra"}, {"option-syntax"}},
      {"value_missing_at_end", {"--machine_type"}, {"option-syntax"}},
      {"empty_machine_type", {"--machine_type="}, {"option-syntax"}},
      {"min_ram_not_a_size", {"--resource_hints=min_ram=lots"}, {"option-syntax"}},
      {"unknown_resource_hint", {"--resource_hints=min_rma=4GB"}, {"option-syntax"}},
      {"java_empty_list_element", {"--dataflowServiceOptions=enable_prime,,enable_hot_key_logging"}, {"option-syntax"}},
      // --- mistakes people make (issue 16) ---
      // A dry run gives Dataflow's verdict (streaming GPU launches are accepted); `run` refuses streaming.
      {"streaming_python", {"--streaming"}, {"streaming-batch-only"}},
      {"streaming_java_true", {"--streaming=true"}, {"streaming-batch-only"}},
      {"streaming_with_worker_accelerator", {kSO + kL4Accelerator, "--machine_type=g2-standard-8", "--streaming"}, {"streaming-batch-only"}},
      {"streaming_t4_experiment_form", {"--experiments=worker_accelerator=" + kT4, "--experiments=use_runner_v2", "--machine_type=n1-standard-4", "--streaming"}, {"streaming-batch-only"}},
      {"streaming_yaml", {}, {"streaming-batch-only"}, "options:\n  streaming: true\n"},
      {"streaming_local_run", {"--streaming"}, {"streaming-unsupported"}, "", {}, CheckFor::kLocalRun},
      {"streaming_gpu_local_run", {kSO + kL4Accelerator, "--machine_type=g2-standard-8", "--streaming"}, {"streaming-unsupported"}, "", {}, CheckFor::kLocalRun},
      {"batch_local_run", {kSO + kL4Accelerator, "--machine_type=g2-standard-8"}, {}, "", {}, CheckFor::kLocalRun},
      // --- GPU flex-start provisioning (batch only) and FlexRS (no GPUs) ---
      {"flex_start_batch", {kSO + kL4Accelerator + ";provisioning_model:FLEX_START", "--machine_type=g2-standard-8"}, {}},
      {"flex_start_before_type", {kSO + "provisioning_model:FLEX_START;type:nvidia-tesla-t4;count:1;install-nvidia-driver", "--machine_type=n1-standard-4"}, {}},
      {"flex_start_experiment_form", {"--experiments=worker_accelerator=" + kT4 + ";provisioning_model:FLEX_START", "--machine_type=n1-standard-4"}, {}},
      {"flex_start_resource_hint", {"--resource_hints=accelerator=" + kL4Accelerator + ";provisioning_model:FLEX_START", "--machine_type=g2-standard-8"}, {}},
      {"flex_start_with_mps", {kSO + kL4Accelerator + kMps + ";provisioning_model:FLEX_START", "--machine_type=g2-standard-8"}, {}},
      {"flex_start_streaming", {kSO + kL4Accelerator + ";provisioning_model:FLEX_START", "--machine_type=g2-standard-8", "--streaming"}, {"streaming-batch-only", "flex-start-batch-only"}},
      {"flex_start_hint_streaming", {"--resource_hints=accelerator=" + kL4Accelerator + ";provisioning_model:FLEX_START", "--machine_type=g2-standard-8", "--streaming", "--experiments=enable_streaming_rightfitting"}, {"streaming-batch-only", "flex-start-batch-only"}},
      {"provisioning_model_spot", {kSO + kL4Accelerator + ";provisioning_model:SPOT", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"provisioning_model_lowercase", {kSO + kL4Accelerator + ";provisioning_model:flex_start", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"provisioning_model_empty", {kSO + kL4Accelerator + ";provisioning_model:", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"provisioning_model_twice", {kSO + kL4Accelerator + ";provisioning_model:FLEX_START;provisioning_model:FLEX_START", "--machine_type=g2-standard-8"}, {"option-syntax"}},
      {"flexrs_with_gpu", {"--flexrs_goal=COST_OPTIMIZED", kSO + kL4Accelerator, "--machine_type=g2-standard-8"}, {"flexrs-gpu"}},
      {"flexrs_speed_with_t4", {"--flexrs_goal", "SPEED_OPTIMIZED", kSO + kT4, "--machine_type=n1-standard-4"}, {"flexrs-gpu"}},
      {"flexrs_java_spelling", {"--flexRSGoal=COST_OPTIMIZED", "--dataflowServiceOptions=worker_accelerator=" + kL4Accelerator, "--workerMachineType=g2-standard-8"}, {"flexrs-gpu"}},
      {"flexrs_with_accelerator_hint", {"--flexrs_goal=COST_OPTIMIZED", "--resource_hints=accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8"}, {"flexrs-gpu"}},
      {"flexrs_yaml_with_gpu", {kSO + kL4Accelerator, "--machine_type=g2-standard-8"}, {"flexrs-gpu"}, "options:\n  flexrs_goal: COST_OPTIMIZED\n"},
      {"flexrs_without_gpu", {"--flexrs_goal=COST_OPTIMIZED", "--machine_type=n1-standard-4"}, {}},
      {"flexrs_bad_goal", {"--flexrs_goal=CHEAP"}, {"option-syntax"}},
      {"flexrs_java_unspecified_is_no_flexrs", {"--flexRSGoal=UNSPECIFIED", "--dataflowServiceOptions=worker_accelerator=" + kL4Accelerator, "--workerMachineType=g2-standard-8"}, {}},
      {"flexrs_python_unspecified", {"--flexrs_goal=UNSPECIFIED"}, {"option-syntax"}},
      {"service_option_as_flag", {"--worker_accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8"}, {"service-option-as-flag"}},
      {"service_option_as_flag_space", {"--worker_accelerator", kL4Accelerator, "--machine_type=g2-standard-8"}, {"service-option-as-flag"}},
      {"service_option_as_flag_java", {"--workerAccelerator=" + kL4Accelerator, "--workerMachineType=g2-standard-8"}, {"service-option-as-flag"}},
      {"mps_as_flag", {kSO + kL4Accelerator, "--use_nvidia_mps", "--machine_type=g2-standard-8"}, {"service-option-as-flag"}},
      {"prime_as_flag", {"--enable_prime"}, {"service-option-as-flag"}},
      {"service_option_unknown", {"--dataflow_service_options=enable_primee"}, {"service-option-unknown"}},
      {"accelerator_list_literal", {"--dataflow_service_options=['worker_accelerator=" + kL4Accelerator + "']", "--machine_type=g2-standard-8"}, {"accelerator-mangled"}},
      {"accelerator_list_literal_two", {"--dataflow_service_options=['worker_accelerator=" + kL4Accelerator + "', 'enable_prime']"}, {"accelerator-mangled", "service-option-unknown", "beam-version-split"}},
      {"accelerator_colon", {"--dataflow_service_options=worker_accelerator:" + kL4Accelerator}, {"accelerator-mangled"}},
      {"accelerator_bare_value", {"--dataflow_service_options=" + kL4Accelerator}, {"accelerator-mangled"}},
      {"accelerator_misspelled", {"--dataflow_service_options=worker_acelerator=" + kL4Accelerator}, {"accelerator-mangled"}},
      {"experiment_naming_the_accelerator_is_fine", {"--experiments=disable_worker_accelerator_check"}, {}},
      {"accelerator_quoted_experiment", {"--experiments=\"worker_accelerator=" + kT4 + "\""}, {"accelerator-mangled"}},
      {"gpu_product_name", {kSO + "type:L4;count:1;install-nvidia-driver", "--machine_type=g2-standard-8"}, {"gpu-unknown-type"}},
      {"gpu_retired_k80", {kSO + "type:nvidia-tesla-k80;count:1;install-nvidia-driver", "--machine_type=n1-standard-4"}, {"gpu-unknown-type"}},
      // --- catalog rules ---
      {"gpu_unknown", {kSO + "type:nvidia-l5;count:1;install-nvidia-driver", "--machine_type=g2-standard-8"}, {"gpu-unknown-type"}},
      {"machine_unknown", {kSO + kL4Accelerator, "--machine_type=g2-standard-7"}, {"machine-unknown-type"}},
      {"custom_odd_vcpus", {"--machine_type=n1-custom-3-12288"}, {"machine-unknown-type"}},
      {"custom_needs_ext", {kSO + kT4, "--machine_type=custom-1-13312"}, {"machine-unknown-type"}},
      {"t4_on_n2_custom", {kSO + kT4, "--machine_type=n2-custom-8-32768"}, {"gpu-machine-mismatch"}},
      {"l4_on_n1_custom", {kSO + kL4Accelerator, "--machine_type=custom-8-30720"}, {"gpu-machine-mismatch"}},
      {"v100_n1_custom_too_big", {kSO + "type:nvidia-tesla-v100;count:1;install-nvidia-driver", "--machine_type=custom-16-61440"}, {"n1-gpu-shape"}},
      {"hint_machine_unknown", {"--resource_hints=accelerator=" + kL4Accelerator + ";machine_type:g2-standard-7"}, {"machine-unknown-type"}},
      {"t4_count_three", {kSO + "type:nvidia-tesla-t4;count:3;install-nvidia-driver", "--machine_type=n1-standard-8"}, {"gpu-count-invalid"}},
      {"g2_fixed_count", {kSO + "type:nvidia-l4;count:2;install-nvidia-driver", "--machine_type=g2-standard-8"}, {"gpu-count-invalid"}},
      {"a3_fixed_count", {kSO + "type:nvidia-h100-80gb;count:3;install-nvidia-driver", "--machine_type=a3-highgpu-1g"}, {"gpu-count-invalid"}},
      {"l4_on_n1", {kSO + kL4Accelerator, "--machine_type=n1-standard-8"}, {"gpu-machine-mismatch"}},
      {"a100_on_g2", {kSO + "type:nvidia-tesla-a100;count:1;install-nvidia-driver", "--machine_type=g2-standard-8"}, {"gpu-machine-mismatch"}},
      {"t4_on_a2", {kSO + kT4, "--machine_type=a2-highgpu-1g"}, {"gpu-machine-mismatch"}},
      {"t4_on_n2", {kSO + kT4, "--machine_type=n2-standard-8"}, {"gpu-machine-mismatch"}},
      {"v100_n1_too_big", {kSO + "type:nvidia-tesla-v100;count:1;install-nvidia-driver", "--machine_type=n1-standard-16"}, {"n1-gpu-shape"}},
      {"driver_missing", {kSO + "type:nvidia-l4;count:1", "--machine_type=g2-standard-8"}, {"driver-not-installed"}},
      {"right_fitting_conflict", {kSO + kL4Accelerator, "--resource_hints=accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8"}, {"right-fitting-conflict"}},
      {"right_fitting_streaming", {"--resource_hints=accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8", "--streaming"}, {"streaming-batch-only", "streaming-right-fitting"}},
      {"right_fitting_streaming_experiment", {"--resource_hints=accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8", "--streaming", "--experiments=enable_streaming_rightfitting"}, {"streaming-batch-only"}},
      {"right_fitting_streaming_local_run", {"--resource_hints=accelerator=" + kL4Accelerator, "--machine_type=g2-standard-8", "--streaming"}, {"streaming-unsupported", "streaming-right-fitting"}, "", {}, CheckFor::kLocalRun},
      // --- MPS rules ---
      {"mps_two_gpus", {kSO + "type:nvidia-l4;count:2;install-nvidia-driver;use_nvidia_mps", "--machine_type=g2-standard-24"}, {"mps-multi-gpu"}},
      {"mps_no_multiple_containers", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8", "--experiments=no_use_multiple_sdk_containers"}, {"mps-single-sdk-process"}},
      {"mps_java_comma_experiments", {"--dataflowServiceOptions=worker_accelerator=" + kL4Accelerator + kMps, "--workerMachineType=g2-standard-8", "--experiments=use_runner_v2,no_use_multiple_sdk_containers"}, {"mps-single-sdk-process"}},
      {"mps_prime", {kSO + kL4Accelerator + kMps, "--dataflow_service_options=enable_prime", "--machine_type=g2-standard-8"}, {"mps-prime"}},
      {"mps_prime_java_comma", {"--dataflowServiceOptions=enable_prime,worker_accelerator=" + kL4Accelerator + kMps, "--workerMachineType=g2-standard-8"}, {"mps-prime"}},
      {"mps_standalone_service_option", {kSO + kL4Accelerator, "--dataflow_service_options=use_nvidia_mps", "--machine_type=g2-standard-8"}, {"mps-outside-accelerator"}},
      {"mps_standalone_experiment", {kSO + kL4Accelerator, "--experiments=use_nvidia_mps", "--machine_type=g2-standard-8"}, {"mps-outside-accelerator"}},
      {"mps_one_thread", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8", "--number_of_worker_harness_threads=1"}, {"mps-restricted-parallelism"}},
      {"mps_one_process", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8", "--sdk_worker_parallelism=1"}, {"mps-restricted-parallelism"}},
      {"mps_single_vcpu", {kSO + kT4 + kMps, "--machine_type=n1-standard-1"}, {"mps-single-vcpu"}},
      {"mps_client_limit_volta", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8", "--sdk_worker_parallelism=64"}, {"mps-client-limit"}},
      {"mps_client_limit_pre_volta", {kSO + "type:nvidia-tesla-p100;count:1;install-nvidia-driver;use_nvidia_mps", "--machine_type=n1-standard-16", "--sdk_worker_parallelism=20"}, {"mps-client-limit"}},
      {"mps_recommended", {kSO + kL4Accelerator, "--machine_type=g2-standard-4"}, {"mps-recommended"}, "", {{"m", 1 * kGiB, CopiesPolicy::kPerProcess, 1, 0, "CPU", std::nullopt}}},
      {"large_model_needs_no_mps", {kSO + kL4Accelerator, "--machine_type=g2-standard-4"}, {}, "", {{"m", 1 * kGiB, CopiesPolicy::kLargeModel, 1, 0, "CPU", std::nullopt}}},
      // --- GPU memory ---
      {"memory_exceeded_contexts", {kSO + kT4, "--machine_type=n1-standard-8", "--sdk_worker_parallelism=60"}, {"gpu-memory-exceeded"}},
      {"memory_tight_contexts", {kSO + kT4, "--machine_type=n1-standard-8", "--sdk_worker_parallelism=50"}, {"gpu-memory-tight"}},
      {"memory_exceeded_models", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8"}, {"gpu-memory-exceeded"}, "", {{"m", 4 * kGiB, CopiesPolicy::kPerProcess, 1, 0, "CPU", std::nullopt}}},
      {"memory_large_model_fits", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8"}, {}, "", {{"m", 4 * kGiB, CopiesPolicy::kLargeModel, 1, 0, "CPU", std::nullopt}}},
      {"memory_model_copies_fit", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8"}, {}, "", {{"m", 4 * kGiB, CopiesPolicy::kModelCopies, 5, 0, "CPU", std::nullopt}}},
      {"memory_model_copies_exceed", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8"}, {"gpu-memory-exceeded"}, "", {{"m", 4 * kGiB, CopiesPolicy::kModelCopies, 6, 0, "CPU", std::nullopt}}},
      {"memory_workspace_tight", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8"}, {"gpu-memory-tight"}, "", {{"m", 6 * kGiB, CopiesPolicy::kModelCopies, 2, 1200ull << 20, "CPU", std::nullopt}}},
      // --- text generation: sequences of the context within gpu_memory_utilization 0.9 ---
      {"kv_sequences_fit", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8", "--sdk_worker_parallelism=4"}, {}, "", {Decoder(8192, 256ull << 20)}},
      {"kv_no_sequence", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8", "--sdk_worker_parallelism=4"}, {"kv-cache-no-sequence", "kv-cache-short"}, "", {Decoder(65536, 256ull << 20)}},
      {"kv_cache_short", {"--machine_type=n1-standard-4"}, {"kv-cache-short"}, "", {Decoder(8192, 1ull << 20)}},
      // --- issue 6: a 3 GiB model on one T4 (n1-standard-8 = 8 SDK processes) ---
      {"t4_3gib_per_process_exceeds", {kSO + kT4, "--machine_type=n1-standard-8"}, {"gpu-memory-exceeded", "mps-recommended"}, "", {{"m", 3 * kGiB, CopiesPolicy::kPerProcess, 1, 0, "CPU", std::nullopt}}},
      {"t4_3gib_two_copies_mps_fit", {kSO + kT4 + kMps, "--machine_type=n1-standard-8"}, {}, "", {{"m", 3 * kGiB, CopiesPolicy::kModelCopies, 2, 0, "CPU", std::nullopt}}},
      {"t4_3gib_two_copies_no_mps", {kSO + kT4, "--machine_type=n1-standard-8"}, {"mps-recommended"}, "", {{"m", 3 * kGiB, CopiesPolicy::kModelCopies, 2, 0, "CPU", std::nullopt}}},
      {"t4_3gib_large_model_fits", {kSO + kT4, "--machine_type=n1-standard-8"}, {}, "", {{"m", 3 * kGiB, CopiesPolicy::kLargeModel, 1, 0, "CPU", std::nullopt}}},
      // --- device: GPU in the pipeline ---
      {"gpu_requested_no_accelerator", {"--machine_type=n1-standard-4"}, {"gpu-requested-no-accelerator"}, "", {{"m", kGiB / 4, CopiesPolicy::kPerProcess, 1, 0, "GPU", Origin{"p.yaml:9:21", "            device: GPU", 20}}}},
      {"gpu_requested_no_origin", {}, {"gpu-requested-no-accelerator"}, "", {{"m", 1024, CopiesPolicy::kPerProcess, 1, 0, "GPU", std::nullopt}}},
      {"gpu_requested_with_accelerator", {kSO + kL4Accelerator + kMps, "--machine_type=g2-standard-8"}, {}, "", {{"m", 1024, CopiesPolicy::kPerProcess, 1, 0, "GPU", std::nullopt}}},
      {"cpu_model_no_accelerator", {}, {}, "", {{"m", 1024, CopiesPolicy::kPerProcess, 1, 0, "CPU", std::nullopt}}},
      // --- the pipeline file's options: block ---
      {"yaml_block_only", {}, {}, "options:\n  machine_type: g2-standard-8\n  dataflow_service_options:\n    - worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps\n"},
      {"yaml_then_cli_appends", {"--dataflow_service_options=enable_prime"}, {"mps-prime"}, "options:\n  machine_type: g2-standard-8\n  dataflow_service_options: [\"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps\"]\n"},
      {"cli_overrides_yaml_scalar", {"--machine_type=g2-standard-8"}, {}, "options:\n  machine_type: n1-standard-8\n  dataflow_service_options: [\"worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver\"]\n"},
      {"yaml_java_keys", {}, {}, "options:\n  workerMachineType: g2-standard-8\n  dataflowServiceOptions: worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver\n"},
      {"yaml_misspelled_key", {}, {"misspelled-flag"}, "options:\n  machine_typo: g2-standard-8\n"},
      {"yaml_unknown_key", {}, {"unknown-flag"}, "options:\n  completely_new_option: 3\n"},
      {"yaml_options_not_a_map", {}, {"option-syntax"}, "options: [a, b]\n"},
      {"yaml_nested_value", {}, {"option-syntax"}, "options:\n  machine_type: {a: b}\n"},
      {"yaml_syntax_error", {}, {"option-syntax"}, "options:\n  machine_type: [unclosed\n"},
      {"yaml_threads_not_a_number", {}, {"option-syntax"}, "options:\n  number_of_worker_harness_threads: many\n"},
      // --- resource hints in the pipeline file (Beam YAML resource_hints:) ---
      {"yaml_transform_accelerator_hint", {"--machine_type=g2-standard-8"}, {}, HintPipeline("{accelerator: \"" + kL4Accelerator + "\"}")},
      {"yaml_pipeline_level_hints", {"--machine_type=g2-standard-8"}, {}, "pipeline:\n  resource_hints: {min_ram: 1.5GB, accelerator: \"" + kL4Accelerator + "\"}\n  transforms: []\n"},
      {"yaml_hint_with_worker_accelerator", {kSO + kL4Accelerator, "--machine_type=g2-standard-8"}, {"right-fitting-conflict"}, HintPipeline("{accelerator: \"" + kL4Accelerator + "\"}")},
      {"yaml_hint_l4_on_n1", {"--machine_type=n1-standard-8"}, {"gpu-machine-mismatch"}, HintPipeline("{accelerator: \"" + kL4Accelerator + "\"}")},
      {"yaml_hint_without_driver", {"--machine_type=g2-standard-8"}, {"driver-not-installed"}, HintPipeline("{accelerator: \"type:nvidia-l4;count:1\"}")},
      {"yaml_hint_unknown_gpu", {"--machine_type=g2-standard-8"}, {"gpu-unknown-type"}, HintPipeline("{accelerator: \"type:nvidia-l5;count:1;install-nvidia-driver\"}")},
      {"yaml_min_ram_fits", {"--machine_type=g2-standard-8"}, {}, HintPipeline("{min_ram: 32GB}")},
      {"yaml_min_ram_above_machine", {"--machine_type=g2-standard-8"}, {"resource-hint-exceeds-machine"}, HintPipeline("{min_ram: 64GB}")},
      {"yaml_min_ram_above_hint_machine", {"--resource_hints=accelerator=" + kL4Accelerator + ";machine_type:g2-standard-4"}, {"resource-hint-exceeds-machine"}, HintPipeline("{min_ram: 20GB}")},
      {"yaml_min_ram_not_a_size", {}, {"option-syntax"}, HintPipeline("{min_ram: lots}")},
      {"yaml_cpu_count_above_machine", {"--machine_type=g2-standard-8"}, {"resource-hint-exceeds-machine"}, HintPipeline("{cpu_count: 12}")},
      {"yaml_cpu_count_not_a_number", {}, {"option-syntax"}, HintPipeline("{cpu_count: many}")},
      {"cli_min_ram_above_machine", {"--resource_hints=min_ram=64GiB", "--machine_type=n1-standard-8"}, {"resource-hint-exceeds-machine"}},
      {"no_machine_type_no_min_ram_check", {"--resource_hints=min_ram=640GB"}, {}},
      {"yaml_transforms_ask_for_different_gpus", {"--machine_type=g2-standard-8"}, {"resource-hints-conflict"},
       "pipeline:\n  transforms:\n    - type: Create\n      resource_hints: {accelerator: \"" + kL4Accelerator + "\"}\n"
       "    - type: LogForTesting\n      resource_hints: {accelerator: \"" + kT4 + "\"}\n"},
      {"yaml_transform_differs_from_cli_hint", {"--resource_hints=accelerator=" + kT4, "--machine_type=n1-standard-8"}, {"resource-hints-conflict"}, HintPipeline("{accelerator: \"" + kL4Accelerator + "\"}")},
      {"yaml_experimental_features_string", {}, {}, "options:\n  yaml_experimental_features: Combine\n"},
      {"yaml_experimental_features_list", {}, {}, "options:\n  yaml_experimental_features: [Combine, ML]\n"},
      {"yaml_experimental_features_mapping", {}, {"option-syntax"}, "options:\n  yaml_experimental_features: {Combine: true}\n"},
  };
  return cases;
}

class RulesTable : public ::testing::TestWithParam<Case> {};

TEST_P(RulesTable, ReportsExactlyTheExpectedCodes) {
  const Case& c = GetParam();
  PipelineOptions options = ParsePipelineOptions(c.args, c.yaml, "pipeline.yaml");
  HostInfo host{4, 0, std::nullopt, ""};
  auto plan = MakePlan(options, testing::SourceCatalog(), c.models, host);
  auto diagnostics = Validate(options, testing::SourceCatalog(), plan.ok() ? &*plan : nullptr, c.check_for);
  std::vector<std::string> got, want = c.codes;
  for (const auto& d : diagnostics) got.push_back(d.code);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  std::string rendered;
  for (const auto& d : diagnostics) rendered += RenderDiagnosticText(d);
  EXPECT_EQ(got, want) << rendered;
  // Every diagnostic names a known rule and points inside the text it quotes.
  for (const auto& d : diagnostics) {
    EXPECT_FALSE(DocUrl(d.code).empty()) << d.code;
    if (d.origin) {
      EXPECT_LE(d.caret_offset + d.caret_length, d.origin->text.size()) << d.code;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Options, RulesTable, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(RulesTable, CoversEveryRuleCode) {
  std::vector<std::string> covered;
  for (const Case& c : Cases()) covered.insert(covered.end(), c.codes.begin(), c.codes.end());
  for (const RuleInfo& rule : AllRules()) {
    if (std::string_view(rule.code).rfind("tenant", 0) == 0) continue;  // tests/tenants/admission_test.cc covers these
    EXPECT_NE(std::find(covered.begin(), covered.end(), rule.code), covered.end()) << rule.code;
  }
  EXPECT_GE(Cases().size(), 60u);
}

}  // namespace
}  // namespace dfw
