// Run-time precision checks; see precision_monitor.h.
#include "dfw/inference/precision_monitor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "dfw/backend/cpu_isa.h"

namespace dfw {

PrecisionChoice PrecisionPlanState::plan() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plan_;
}

int PrecisionPlanState::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

std::shared_ptr<PrecisionPlanState> MakePrecisionPlanState(const std::optional<PrecisionChoice>& choice,
                                                           std::optional<LinearDType> dtype,
                                                           const PrecisionTolerance& tolerance,
                                                           std::string_view backend_name) {
  PrecisionChoice plan;
  if (choice.has_value()) {
    plan = *choice;
  } else {
    plan.dtype = dtype.value_or(LinearDType::kFloat32);
    plan.kind = tolerance.kind;
    plan.tolerance = tolerance;
  }
  std::function<Status(LinearDType)> can_run = [](LinearDType d) { return CheckLinearDTypeOn(DetectCpuIsa(), d); };
  if (backend_name != "cpu") {
    can_run = [](LinearDType d) {
      return d == LinearDType::kFloat32 ? Status::OK() : Unimplemented("float32 only off the CPU");
    };
  }
  return std::make_shared<PrecisionPlanState>(std::move(plan), std::move(can_run));
}

bool PrecisionPlanState::Demote(LinearDType d, LinearDType& to) {
  std::lock_guard<std::mutex> lock(mu_);
  bool runs = plan_.dtype == d;
  for (LinearDType b : plan_.bucket_dtypes) runs = runs || b == d;
  if (!runs || d == LinearDType::kFloat32) return false;
  to = SaferDType(d, can_run_);
  if (plan_.dtype == d) plan_.dtype = to;
  for (LinearDType& b : plan_.bucket_dtypes) {
    if (b == d) b = to;
  }
  ++generation_;
  return true;
}

void PrecisionMonitor::Check(std::span<const float> ref, std::span<const float> got, int width,
                             std::span<const LinearDType> row_dtypes) {
  const bool classifier = tolerance_.kind == PrecisionTolerance::Kind::kClassifier;
  std::vector<uint8_t> same;
  const std::vector<double> rows = RowAgreement(ref, got, width, tolerance_.kind, &same);
  // Per dtype: the worst row and how many rows broke the tolerance.
  std::map<LinearDType, std::pair<double, int>> worst;
  for (std::size_t r = 0; r < rows.size() && r < row_dtypes.size(); ++r) {
    const LinearDType d = row_dtypes[r];
    if (d == LinearDType::kFloat32) continue;
    const double a = rows[r];
    bool broke;
    if (classifier) {
      figures_.emplace_back("precision_check_argmax_same", same[r] ? 1 : 0);
      figures_.emplace_back("precision_check_prob_diff_ppm", std::llround(a * 1e6));
      broke = !same[r] || a > tolerance_.max_prob_diff;
    } else {
      figures_.emplace_back("precision_check_cosine_ppm", std::llround(a * 1e6));
      broke = a < tolerance_.MinCosine(d);
    }
    auto [it, fresh] = worst.try_emplace(d, a, 0);
    it->second.first = fresh ? a : (classifier ? std::max(it->second.first, a) : std::min(it->second.first, a));
    if (broke) ++it->second.second;
  }
  for (const auto& [d, w] : worst) {
    if (w.second == 0) continue;
    LinearDType to = d;
    if (!state_->Demote(d, to)) continue;  // another lane of this process switched it already
    figures_.emplace_back("precision_switches", 1);
    figures_.emplace_back("linear_dtype_bits", LinearDTypeBits(to));
    const std::string found =
        classifier ? fmt::format("max |p - p_float32| {:.2e} against {:.0e}, or a changed argmax", w.first, tolerance_.max_prob_diff)
                   : fmt::format("min cosine to float32 {:.5f} < {}", w.first, tolerance_.MinCosine(d));
    spdlog::warn("model '{}': a sampled batch recomputed in float32 found {} row(s) in {} outside the accuracy bound ({}); "
                 "running {} instead of {} for the rest of the job in this process",
                 model_, w.second, LinearDTypeName(d), found, LinearDTypeName(to), LinearDTypeName(d));
  }
}

std::vector<std::pair<std::string, int64_t>> PrecisionMonitor::TakeFigures() {
  std::vector<std::pair<std::string, int64_t>> out;
  out.swap(figures_);
  return out;
}

}  // namespace dfw
