// Internal: the rule functions. Each looks at one restriction and appends its findings.
#pragma once

#include <string>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/options/diagnostic.h"
#include "dfw/options/options.h"
#include "dfw/plan/plan.h"
#include "dfw/validate/validate.h"

namespace dfw::validate_internal {

struct RuleContext {
  const PipelineOptions& options;
  const Catalog& catalog;
  const WorkerPlan* plan;               // null when the plan could not be made
  const AcceleratorSpec* accelerator;   // worker_accelerator, else the accelerator hint, else null
  std::vector<Diagnostic>& out;
  CheckFor check_for = CheckFor::kDataflowLaunch;

  // Adds a diagnostic of rule `code` pointing at [offset, offset+length) of origin.text.
  void Add(const char* code, const Origin& origin, std::size_t offset, std::size_t length, std::string message,
           std::string help) const;
};

using Rule = void (*)(const RuleContext&);

// rules_accelerator.cc
void GpuUnknownType(const RuleContext& ctx);
void MachineUnknownType(const RuleContext& ctx);
void GpuCountInvalid(const RuleContext& ctx);
void GpuMachineMismatch(const RuleContext& ctx);
void N1GpuShape(const RuleContext& ctx);
void DriverNotInstalled(const RuleContext& ctx);
void RightFittingConflict(const RuleContext& ctx);
// rules_launch.cc: streaming, FlexRS and flex-start provisioning
void StreamingUnsupported(const RuleContext& ctx);
void StreamingRightFitting(const RuleContext& ctx);
void FlexrsWithGpu(const RuleContext& ctx);
void FlexStartBatchOnly(const RuleContext& ctx);
// rules_mps.cc
void MpsMultiGpu(const RuleContext& ctx);
void MpsSingleSdkProcess(const RuleContext& ctx);
void MpsPrime(const RuleContext& ctx);
void MpsOutsideAccelerator(const RuleContext& ctx);
void MpsRestrictedParallelism(const RuleContext& ctx);
void MpsSingleVcpu(const RuleContext& ctx);
void MpsClientLimit(const RuleContext& ctx);
void MpsRecommended(const RuleContext& ctx);
// rules_memory.cc
void GpuMemory(const RuleContext& ctx);
// Text generation: not one sequence of the context fits the GPU's budget (kv-cache-no-sequence), or
// the engine's own cache holds none (kv-cache-short).
void KvCacheSequences(const RuleContext& ctx);
// rules_models.cc
void GpuRequestedNoAccelerator(const RuleContext& ctx);
// rules_hints.cc
void ResourceHintExceedsMachine(const RuleContext& ctx);

}  // namespace dfw::validate_internal
