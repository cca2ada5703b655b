#include "dfw/plan/plan.h"

#include <gtest/gtest.h>

#include "catalog/catalog_test_util.h"
#include "dfw/options/parse.h"
#include "test_util.h"

namespace dfw {
namespace plan_test {

using dfw::testing::kGiB;
using dfw::testing::kMiB;
using dfw::testing::kL4Flag;
using Kind = device::Accelerator::Kind;

WorkerPlan Plan(const std::vector<std::string>& args, const std::vector<ModelRequirement>& models = {},
                HostInfo host = {6, 0, std::nullopt, ""}) {
  auto plan = MakePlan(ParsePipelineOptions(args), testing::SourceCatalog(), models, host);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? *plan : WorkerPlan{};
}

TEST(MakePlan, OneSdkProcessPerVcpuOfTheMachineType) {
  WorkerPlan p = Plan({kL4Flag + ";use_nvidia_mps", "--machine_type=g2-standard-8"});
  EXPECT_EQ(p.sdk_processes, 8);
  EXPECT_EQ(p.harness_threads_per_process, kDefaultHarnessThreads);
  EXPECT_TRUE(p.accelerator.present);
  EXPECT_EQ(p.accelerator.type, "nvidia-l4");
  EXPECT_TRUE(p.accelerator.mps);
  EXPECT_EQ(p.accelerator.backend, Kind::kEmulated);
  EXPECT_EQ(p.accelerator.mps_client_limit, 48);
}

TEST(MakePlan, HostCoresWithoutMachineTypeAndOneWithNoUseMultipleSdkContainers) {
  EXPECT_EQ(Plan({}, {}, {6, 0, std::nullopt, ""}).sdk_processes, 6);
  EXPECT_EQ(Plan({"--machine_type=n1-standard-16", "--experiments=no_use_multiple_sdk_containers"}).sdk_processes, 1);
  EXPECT_EQ(Plan({"--machine_type=n1-standard-16", "--sdk_worker_parallelism=3"}).sdk_processes, 3);
  EXPECT_EQ(Plan({"--number_of_worker_harness_threads=7"}).harness_threads_per_process, 7);
}

// Two harness threads where the second has work of its own (a GPU, or fewer processes than
// vCPUs); one on the CPU alone, where the processes already take every vCPU, model or not; the
// option wins.
TEST(MakePlan, HarnessThreadsAreTwoWhereASecondThreadHasWorkAndOneOnTheCpuAlone) {
  const HostInfo host{6, 0, std::nullopt, ""};
  ModelRequirement model;
  model.name = "m";
  model.bytes = 1 << 20;
  EXPECT_EQ(Plan({}, {}, host).harness_threads_per_process, kCpuHarnessThreads);
  EXPECT_EQ(Plan({"--machine_type=n2-standard-4"}, {}, host).harness_threads_per_process, kCpuHarnessThreads);
  EXPECT_EQ(Plan({}, {model}, host).harness_threads_per_process, kCpuHarnessThreads);
  EXPECT_EQ(Plan({kL4Flag, "--machine_type=g2-standard-4"}, {}, host).harness_threads_per_process, kDefaultHarnessThreads);
  EXPECT_EQ(Plan({kL4Flag, "--machine_type=g2-standard-4"}, {model}, host).harness_threads_per_process, kDefaultHarnessThreads);
  EXPECT_EQ(Plan({"--sdk_worker_parallelism=3"}, {}, host).harness_threads_per_process, kDefaultHarnessThreads);
  EXPECT_EQ(Plan({"--experiments=no_use_multiple_sdk_containers"}, {}, host).harness_threads_per_process, kDefaultHarnessThreads);
  EXPECT_EQ(Plan({"--number_of_worker_harness_threads=3"}, {}, host).harness_threads_per_process, 3);
  EXPECT_EQ(Plan({"--number_of_worker_harness_threads=2"}, {model}, host).harness_threads_per_process, 2);
  EXPECT_NE(kCpuHarnessThreads, kDefaultHarnessThreads);
}

TEST(MakePlan, BackendIsCudaWhenTheHostHasAGpuAndNoneWithoutAccelerator) {
  EXPECT_EQ(Plan({kL4Flag, "--machine_type=g2-standard-4"}, {}, {4, 1, std::nullopt, ""}).accelerator.backend, Kind::kCuda);
  WorkerPlan cpu = Plan({"--machine_type=n2-standard-4"});
  EXPECT_FALSE(cpu.accelerator.present);
  EXPECT_EQ(cpu.accelerator.backend, Kind::kNone);
  EXPECT_EQ(cpu.gpu_memory.planned_peak_bytes, 0u);
}

TEST(MakePlan, DeviceSelectionDecidesTheBackend) {
  // A GPU is visible but the device module picked emulation (CUDA backend did not load, or forced).
  WorkerPlan forced = Plan({kL4Flag, "--machine_type=g2-standard-4"}, {}, {4, 1, Kind::kEmulated, "CUDA backend did not load"});
  EXPECT_EQ(forced.accelerator.backend, Kind::kEmulated);
  EXPECT_EQ(forced.accelerator.backend_reason, "CUDA backend did not load");
  WorkerPlan cuda = Plan({kL4Flag, "--machine_type=g2-standard-4"}, {}, {4, 1, Kind::kCuda, ""});
  EXPECT_EQ(cuda.accelerator.backend, Kind::kCuda);
  EXPECT_EQ(cuda.accelerator.backend_reason, "");
  // No accelerator declared: "none" whatever the host has.
  EXPECT_EQ(Plan({"--machine_type=n2-standard-4"}, {}, {4, 1, Kind::kCuda, ""}).accelerator.backend, Kind::kNone);
}

TEST(MakePlan, ModelsKeepTheirDeviceAndOrigin) {
  ModelRequirement m{"Embed", 1024, CopiesPolicy::kPerProcess, 1, 0, "GPU", Origin{"p.yaml:3:9", "device: GPU", 8}};
  WorkerPlan p = Plan({"--machine_type=n2-standard-4"}, {m});
  ASSERT_EQ(p.models.size(), 1u);
  EXPECT_EQ(p.models[0].device, "GPU");
  ASSERT_TRUE(p.models[0].origin.has_value());
  EXPECT_EQ(p.models[0].origin->where, "p.yaml:3:9");
}

TEST(MakePlan, WithoutMpsEveryProcessOwnsAContext) {
  WorkerPlan p = Plan({kL4Flag, "--machine_type=g2-standard-8"});
  EXPECT_EQ(p.gpu_memory.contexts, 8);
  EXPECT_EQ(p.gpu_memory.context_bytes, 8 * 350 * kMiB);
  EXPECT_EQ(p.gpu_memory.capacity_bytes, 24 * kGiB);
}

TEST(MakePlan, UnderMpsOneSharedServerContext) {
  WorkerPlan p = Plan({kL4Flag + ";use_nvidia_mps", "--machine_type=g2-standard-8"});
  EXPECT_EQ(p.gpu_memory.contexts, 1);
  EXPECT_EQ(p.gpu_memory.clients, 8);
  EXPECT_EQ(p.gpu_memory.planned_peak_bytes, 350 * kMiB);
}

TEST(MakePlan, ModelCopiesFollowBeamPolicies) {
  std::vector<ModelRequirement> models = {
      {"per_process", 1 * kGiB, CopiesPolicy::kPerProcess, 1, 10 * kMiB, "CPU", std::nullopt},
      {"large", 2 * kGiB, CopiesPolicy::kLargeModel, 1, 0, "CPU", std::nullopt},
      {"copies", 3 * kGiB, CopiesPolicy::kModelCopies, 2, 0, "CPU", std::nullopt},
  };
  WorkerPlan p = Plan({kL4Flag + ";use_nvidia_mps", "--machine_type=g2-standard-4"}, models);
  ASSERT_EQ(p.models.size(), 3u);
  EXPECT_EQ(p.models[0].copies, 4);
  EXPECT_EQ(p.models[1].copies, 1);
  EXPECT_EQ(p.models[2].copies, 2);
  EXPECT_EQ(p.gpu_memory.model_bytes, 4 * kGiB + 2 * kGiB + 6 * kGiB);
  EXPECT_EQ(p.gpu_memory.workspace_bytes, 4 * 10 * kMiB);
  EXPECT_EQ(p.gpu_memory.clients, 4 + 1 + 2);  // SDK processes + model hosts
  EXPECT_EQ(p.gpu_memory.planned_peak_bytes, 350 * kMiB + 12 * kGiB + 40 * kMiB);
}

TEST(MakePlan, ProcessesSpreadOverSeveralGpus) {
  WorkerPlan p = Plan({"--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:4;install-nvidia-driver",
                       "--machine_type=g2-standard-48"},
                      {{"m", 1 * kGiB, CopiesPolicy::kModelCopies, 6, 0, "CPU", std::nullopt}});
  EXPECT_EQ(p.gpu_memory.processes_per_gpu, 12);
  EXPECT_EQ(p.models[0].copies_per_gpu, 2);
  EXPECT_EQ(p.gpu_memory.contexts, 12 + 2);
}

TEST(MakePlan, UnknownNamesAreInvalidArgument) {
  HostInfo host{4, 0, std::nullopt, ""};
  auto gpu = MakePlan(ParsePipelineOptions({"--dataflow_service_options=worker_accelerator=type:nope;count:1"}),
                      testing::SourceCatalog(), {}, host);
  EXPECT_EQ(gpu.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gpu.status().message().find("'nope'"), std::string::npos);
  auto machine = MakePlan(ParsePipelineOptions({"--machine_type=z9-big-1"}), testing::SourceCatalog(), {}, host);
  EXPECT_EQ(machine.status().code(), StatusCode::kInvalidArgument);
}

TEST(RenderPlanText, NamesProcessesAcceleratorAndMemory) {
  std::string text = RenderPlanText(Plan({kL4Flag + ";use_nvidia_mps", "--machine_type=g2-standard-8"}));
  EXPECT_NE(text.find("SDK processes:   8"), std::string::npos) << text;
  EXPECT_NE(text.find("MPS on"), std::string::npos) << text;
  EXPECT_NE(text.find("planned peak 350.0 MiB of 24.0 GiB"), std::string::npos) << text;
}

}  // namespace plan_test
}  // namespace dfw
