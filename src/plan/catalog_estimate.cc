// Speed and cost of every row of the catalog plan, and which fitting row is cheapest and fastest.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

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

bool Fits(const CatalogPlanRow& r) {
  return r.verdict != FitVerdict::kDoesNotFit && r.mig_profile.empty() && r.estimate && r.estimate->speed_known;
}

bool MeetsCost(const Estimate& e, const EstimateInputs& in) {
  return !in.max_cost_per_million || (e.priced && e.cost_per_million <= *in.max_cost_per_million);
}

bool MeetsDeadline(const Estimate& e, const EstimateInputs& in) {
  return !in.deadline_hours || (e.job_hours && *e.job_hours <= *in.deadline_hours);
}

std::string Fixed(double v, const char* fmt) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

// The fitting row nearest to each constraint it misses, in one sentence.
std::string ClosestMiss(const CatalogPlan& plan, const EstimateInputs& in) {
  const CatalogPlanRow* cheapest = nullptr;
  const CatalogPlanRow* quickest = nullptr;
  for (const CatalogPlanRow& r : plan.rows) {
    if (!Fits(r)) continue;
    const Estimate& e = *r.estimate;
    if (e.priced && (!cheapest || e.cost_per_million < cheapest->estimate->cost_per_million)) cheapest = &r;
    if (e.job_hours && (!quickest || *e.job_hours < *quickest->estimate->job_hours)) quickest = &r;
  }
  auto name = [](const CatalogPlanRow& r) { return r.machine_type + " + " + std::to_string(r.gpu_count) + " x " + r.gpu; };
  std::vector<std::string> parts;
  if (in.max_cost_per_million) {
    parts.push_back(cheapest ? "the cheapest that fits, " + name(*cheapest) + ", costs " + cheapest->estimate->currency +
                                   " " + Fixed(cheapest->estimate->cost_per_million, "%.4g") +
                                   " per million records (limit " + Fixed(*in.max_cost_per_million, "%.4g") + ")"
                             : "no configuration that fits has a price");
  }
  if (in.deadline_hours) {
    parts.push_back(quickest ? "the quickest that fits, " + name(*quickest) + ", takes " +
                                   Fixed(*quickest->estimate->job_hours, "%.3g") + " h (deadline " +
                                   Fixed(*in.deadline_hours, "%.3g") + " h, " + std::to_string(in.workers) + " worker(s))"
                             : "no configuration that fits has a job time");
  }
  std::string out = "no configuration that fits meets the constraints: ";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out;
}

bool Eligible(const CatalogPlanRow& r, const EstimateInputs& in) {
  return Fits(r) && MeetsCost(*r.estimate, in) && MeetsDeadline(*r.estimate, in);
}

}  // namespace

void AddEstimates(CatalogPlan& plan, const Catalog& catalog, const std::vector<ModelRequirement>& models,
                  const EstimateInputs& inputs) {
  plan.estimate_inputs = inputs;
  for (CatalogPlanRow& row : plan.rows) row.estimate = EstimateConfiguration(ShapeOf(row, catalog), models, inputs);
  for (int i = 0; i < static_cast<int>(plan.rows.size()); ++i) {
    const CatalogPlanRow& r = plan.rows[i];
    if (!Eligible(r, inputs)) continue;
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
  if ((inputs.max_cost_per_million || inputs.deadline_hours) && plan.fastest < 0) {
    plan.constraint_miss = ClosestMiss(plan, inputs);
  }
}

}  // namespace dfw
