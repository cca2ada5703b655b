// Speed and cost of every row of the catalog plan, and which fitting row is cheapest and fastest.
#include <algorithm>
#include <cmath>

#include "dfw/plan/catalog_plan.h"

namespace dfw {
namespace {

EstimateShape ShapeOf(const CatalogPlanRow& row, const Catalog& catalog) {
  EstimateShape s;
  s.gpu = catalog.FindGpu(row.gpu);
  s.gpus = std::max(1, row.gpu_count);
  s.vcpus = row.plan.vcpus;
  if (!row.mig_profile.empty()) {
    s.billable = false;
    s.gpu_share = row.mig_gpu_slices > 0 ? static_cast<double>(row.mig_compute_slices) / row.mig_gpu_slices : 1.0;
  }
  if (!row.machine_type.empty()) {
    if (auto m = catalog.FindMachine(row.machine_type)) s.memory_gb = static_cast<double>(m->memory_bytes) / 1073741824.0;
  }
  return s;
}

bool Eligible(const CatalogPlanRow& r) {
  return r.verdict != FitVerdict::kDoesNotFit && r.mig_profile.empty() && r.estimate && r.estimate->speed_known;
}

}  // namespace

void AddEstimates(CatalogPlan& plan, const Catalog& catalog, const std::vector<ModelRequirement>& models,
                  const EstimateInputs& inputs) {
  plan.estimate_inputs = inputs;
  for (CatalogPlanRow& row : plan.rows) row.estimate = EstimateConfiguration(ShapeOf(row, catalog), models, inputs);
  for (int i = 0; i < static_cast<int>(plan.rows.size()); ++i) {
    const CatalogPlanRow& r = plan.rows[i];
    if (!Eligible(r)) continue;
    const Estimate& e = *r.estimate;
    if (e.priced && e.cost_per_million > 0 &&
        (plan.cheapest < 0 || e.cost_per_million < plan.rows[plan.cheapest].estimate->cost_per_million)) {
      plan.cheapest = i;
    }
    if (plan.fastest < 0) {
      plan.fastest = i;
      continue;
    }
    const Estimate& best = *plan.rows[plan.fastest].estimate;
    // Equal speed (within 0.1%): the cheaper one.
    const bool tie = std::fabs(e.records_per_second - best.records_per_second) <= 1e-3 * best.records_per_second;
    if ((!tie && e.records_per_second > best.records_per_second) ||
        (tie && e.priced && (!best.priced || e.cost_per_million < best.cost_per_million))) {
      plan.fastest = i;
    }
  }
}

}  // namespace dfw
