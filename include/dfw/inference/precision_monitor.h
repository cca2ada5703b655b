// The run-time half of `dtype: auto` (and of an explicit reduced dtype): a sampled fraction of
// batches is recomputed in float32 and compared row by row with what the model returned, by the
// tolerance the precision was chosen with (precision_choice.h). A row outside it moves every
// token-count bucket running that dtype to the next safer one (int8 -> bfloat16 -> float32,
// SaferDType) for the rest of the job in this process, logged at warning.
//
// Figures (Model::BatchFigures, so metrics.json, `dfworker report` and `dfworker bench` get them):
//   embeddings   "precision_check_cosine_ppm", one value per row checked: the distribution's min is
//                the worst row's cosine to float32 x 1e6, sum / count the mean, count the rows;
//   classifiers  "precision_check_argmax_same" (1 or 0 per row: the mean is the agreement rate) and
//                "precision_check_prob_diff_ppm" (per row max |p - p_float32| x 1e6);
//   a switch     "precision_switches" (1) and "linear_dtype_bits" (the new dtype's bits: the
//                report then shows the model as mixed).
// Threading: PrecisionPlanState is shared by the lanes of a handler and locks itself; a
// PrecisionMonitor belongs to one lane (one thread at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dfw/inference/precision_choice.h"

namespace dfw {

// The handlers' default `precision_check_every`: one batch in 64 recomputed in float32.
inline constexpr int kDefaultPrecisionCheckEvery = 64;

// What the lanes of one handler run in this process: the choice (with its buckets) as switches
// left it, and a generation that each switch bumps, so a lane sees when to re-prepare.
class PrecisionPlanState {
 public:
  PrecisionPlanState(PrecisionChoice plan, std::function<Status(LinearDType)> can_run)
      : plan_(std::move(plan)), can_run_(std::move(can_run)) {}
  PrecisionChoice plan() const;
  int generation() const;
  // Moves every bucket running `d` (and the model's dtype, if it is `d`) to SaferDType(d). Returns
  // false, changing nothing, when the plan no longer runs `d` (another lane moved it first).
  bool Demote(LinearDType d, LinearDType& to);

 private:
  mutable std::mutex mu_;
  PrecisionChoice plan_;
  int generation_ = 0;
  std::function<Status(LinearDType)> can_run_;
};

// The plan for a handler's lanes in this process: `choice` (what `dtype: auto` chose) or, without
// one, the explicit `dtype` (float32 when unset) judged by `tolerance`. A switch may move to any
// dtype this CPU runs; off the CPU backend (`backend_name` not "cpu") only to float32.
std::shared_ptr<PrecisionPlanState> MakePrecisionPlanState(const std::optional<PrecisionChoice>& choice,
                                                           std::optional<LinearDType> dtype,
                                                           const PrecisionTolerance& tolerance,
                                                           std::string_view backend_name);

class PrecisionMonitor {
 public:
  // `every`: one batch in `every` is checked (the first one included); 0 or less: none.
  PrecisionMonitor(std::shared_ptr<PrecisionPlanState> state, PrecisionTolerance tolerance, int every, std::string model)
      : state_(std::move(state)), tolerance_(tolerance), every_(every), model_(std::move(model)) {}

  // Counts a batch; true when this one is to be checked.
  bool Due() { return every_ > 0 && batches_++ % every_ == 0; }

  // `got` (rows x width, as returned, row r computed in row_dtypes[r]) against `ref` (the same rows
  // in float32). Rows computed in float32 are skipped. Records the figures; on a row outside the
  // tolerance, demotes its dtype in the shared plan and logs a warning.
  void Check(std::span<const float> ref, std::span<const float> got, int width, std::span<const LinearDType> row_dtypes);

  // The figures recorded since the last call (then cleared).
  std::vector<std::pair<std::string, int64_t>> TakeFigures();

  PrecisionPlanState& state() { return *state_; }

 private:
  std::shared_ptr<PrecisionPlanState> state_;
  PrecisionTolerance tolerance_;
  int every_;
  std::string model_;
  int64_t batches_ = 0;
  std::vector<std::pair<std::string, int64_t>> figures_;
};

}  // namespace dfw
