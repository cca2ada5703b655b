// The plan across the catalog (`dfworker plan`): the job's WorkerPlan on every GPU type × compatible
// machine type, and on the MIG profiles that could hold it, each with a verdict and the rule that
// decided it. Every row is MakePlan (plan.h) for that configuration — there is no second memory
// model here; MIG rows are the plan on one GPU of the parent type with the capacity of the slice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dfw/catalog/catalog.h"
#include "dfw/common/status.h"
#include "dfw/options/options.h"
#include "dfw/plan/estimate.h"
#include "dfw/plan/plan.h"

namespace dfw {

// A plan "fits with headroom" up to this share of GPU memory; above it is "tight" (the dry run's
// gpu-memory-tight rule in src/validate/rules_memory.cc uses the same 90%).
inline constexpr double kTightMemoryFraction = 0.9;

enum class FitVerdict { kFits, kTight, kDoesNotFit };
const char* FitVerdictName(FitVerdict verdict);  // "fits", "tight", "does not fit"

struct CatalogPlanRequest {
  std::vector<std::string> gpus;  // GPU types to consider (empty = every type in the catalog)
  // Copies of this job that must share one GPU on MIG rows (N instances of one profile); >= 1.
  int mig_instances = 1;
  // Speed and cost per row (estimate.h); nullopt = memory fit only.
  std::optional<EstimateInputs> estimate = std::nullopt;
};

struct CatalogPlanRow {
  std::string gpu;             // GPU type
  std::string machine_type;    // "" on MIG rows and on the user's row without --machine_type
  int gpu_count = 0;           // GPUs per worker (1 on MIG rows)
  std::string mig_profile;     // "" = whole GPUs
  int mig_compute_slices = 0;  // MIG: N of mig_gpu_slices
  int mig_gpu_slices = 0;      // MIG: the whole GPU's compute slices (7, or 4 on RTX PRO 6000)
  int mig_max_instances = 0;   // MIG: instances of the profile one GPU holds
  WorkerPlan plan;             // MakePlan for the row (MIG: capacity and client limit of the slice)
  uint64_t headroom_bytes = 0; // capacity - planned peak on the busiest GPU (0 when over)
  // Copies of the pipeline's models (all of them, once each) that the busiest GPU holds beside
  // the row's contexts and workspace; -1 when the pipeline loads no model.
  int64_t model_copies_that_fit = -1;
  // Text generation: sequences of the context per GPU (the fewest over the pipeline's generating
  // models, WorkerPlan::Model::Sequences::per_gpu); -1 when the pipeline generates no text.
  int64_t sequences_per_gpu = -1;
  int mps_clients = 0;         // client processes per GPU when MPS is on (0 = MPS off)
  int mps_client_limit = 0;    // the MPS server's limit for the row (MIG: lowered with the slice)
  FitVerdict verdict = FitVerdict::kDoesNotFit;
  std::string rule;            // the rule that decided, with the numbers
  bool selected = false;       // the configuration the user's flags select
  bool smallest = false;       // whole GPUs: the smallest configuration that fits with headroom;
                               // MIG: the smallest profile of this GPU type that does
  std::optional<Estimate> estimate = std::nullopt;  // with CatalogPlanRequest::estimate
};

struct CatalogPlan {
  std::vector<CatalogPlanRow> rows;     // user's row first when it is not a catalog row, then by GPU
  std::vector<std::string> notes;       // e.g. "no MIG profile of nvidia-a100-80gb holds ..."
  std::string processes_note;           // what decides the SDK process count of MIG rows
  // With estimates: the rows (indices into `rows`) that fit (fits or tight) and are cheapest per
  // record / fastest per worker among Dataflow configurations (whole GPUs); -1 = none.
  int cheapest = -1;
  int fastest = -1;
  // With constraints that no fitting configuration meets: the closest miss, said in a sentence
  // ("" = the constraints are met, or there are none). `dfworker plan` exits 2 with it.
  std::string constraint_miss;
  // A text-generation pipeline none of whose rows holds one sequence of its context within the
  // gpu_memory_utilization budget: the row that comes closest, with its numbers ("" = some row
  // does, or no text generation). `dfworker plan` exits 2 with it.
  std::string sequence_miss;
  std::optional<EstimateInputs> estimate_inputs;
};

// Builds every row. `options` are the user's (their machine type and accelerator mark the selected
// row; their MPS, copies and process flags apply to every row). With `options.machine_type` given
// only rows of that machine type are built. kInvalidArgument for an unknown --gpu (did-you-mean),
// an unknown machine type, a machine type no GPU of the request attaches to, or mig_instances < 1.
Result<CatalogPlan> MakeCatalogPlan(const PipelineOptions& options, const Catalog& catalog,
                                    const std::vector<ModelRequirement>& models, const HostInfo& host,
                                    const CatalogPlanRequest& request);

// Fills every row's estimate and the cheapest/fastest marks (catalog_estimate.cc); MakeCatalogPlan
// calls it when the request has estimate inputs.
void AddEstimates(CatalogPlan& plan, const Catalog& catalog, const std::vector<ModelRequirement>& models,
                  const EstimateInputs& inputs);

// Text: with estimates, the recommendation and the estimate table (the 10 cheapest fitting rows and
// the two recommended ones, or every fitting row with `all_rows`) lead; the memory-fit table follows.
std::string RenderCatalogPlanText(const CatalogPlan& plan, bool all_rows = false);
std::string RenderCatalogPlanJson(const CatalogPlan& plan);

}  // namespace dfw
