// BatchElements: Beam's batching of elements ahead of RunInference (apache_beam/transforms/util.py).
//
// BatchSizeEstimator picks each batch's size. With min == max the size is fixed. Otherwise it
// models "time = fixed_cost + n × per_element_cost" from the timings of earlier batches: no data →
// min; one point → max(min(max, 2·min), min + 1); then a least-squares fit (top 20 % of points by
// size dropped, keeping ≥ 20; refined by dropping Cook's-distance outliers > 0.5 and refitting
// with weights 1/size when ≥ 10 points) and the target is the largest size satisfying
//   per-element time b·n ≤ target_batch_duration_secs   (or a + b·n ≤ …_including_fixed_cost)
//   fixed share a / (a + b·n) ≥ target_batch_overhead     (n ≤ (a/b)(1/overhead − 1))
// capped at 2× the last size (the 1, 2, 4, 8, … ramp), jittered by ±variance after 10 points,
// with +0/+1 alternating on the lower bound. At most 100 timings are kept (thinned at random).
// The first batch of every bundle is not timed (setup); its size is replayed.
//
// BatchElements<T> buffers elements and hands full batches to a consumer, timing each consumer
// call for the estimator (the consumer is the fused downstream work: inference). A partial batch
// is emitted at the end of a bundle and when its first element has waited max_batch_duration_secs.
//
// Size-aware batching (Beam 2.7x's max_batch_weight / element_size_fn, apache/beam#37428): each
// element may carry a weight (a text model's tokens); a batch never holds more than
// max_batch_weight in total (an element heavier than that alone is a batch of one). With
// sort_window > 0 elements are pooled until the pool holds sort_window of them and at least one
// full batch (the target count, or the weight cap), then sorted by weight (stable) and cut into
// batches of similar weights, so a text model pads less: only full batches leave the pool before
// the bundle ends (or an element has waited max_batch_duration_secs); the rest waits for more.
// The estimator's sizes stay counts of elements.
//
// Clock and jitter are injectable so tests are exact. Threading: neither class is thread-safe; one
// instance is driven by one thread at a time (the RunInference stage is serial).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "dfw/common/status.h"

namespace dfw {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double NowSecs() = 0;  // monotonic seconds
};
// A process-wide steady clock.
Clock* SystemClock();

struct BatchElementsOptions {
  int64_t min_batch_size = 1;      // >= 1
  int64_t max_batch_size = 10000;  // >= min_batch_size; min == max gives a fixed size
  std::optional<double> target_batch_overhead = 0.05;  // in (0, 1]; nullopt = rule off
  // Per-element time per batch, excluding the fixed cost (Beam >= 2.46). nullopt = rule off.
  // When neither duration is given, 10 s applies (Beam's default).
  std::optional<double> target_batch_duration_secs;
  // Beam < 2.46 behaviour: a + b·n ≤ this. At most one of the two durations may be set.
  std::optional<double> target_batch_duration_secs_including_fixed_cost;
  std::optional<double> max_batch_duration_secs;  // > 0: flush a partial batch this old
  double variance = 0.25;                         // relative jitter after 10 timings, in [0, 1]
  std::optional<int64_t> max_batch_weight;        // >= 1: total weight per batch at most this
  int64_t sort_window = 0;                        // > 0: pool this many elements, cut them sorted by weight
  uint64_t seed = 0;                              // jitter / thinning RNG seed
};

class BatchSizeEstimator {
 public:
  static constexpr std::size_t kMaxDataPoints = 100;
  static constexpr int64_t kMaxGrowthFactor = 2;

  // kInvalidArgument on min > max, min < 1, overhead outside (0, 1], non-positive durations,
  // both durations set, or both the overhead and duration rules off.
  static Result<BatchSizeEstimator> Make(const BatchElementsOptions& options);

  int64_t NextBatchSize();
  // The next recorded timing is discarded and its batch size replayed (first emit of a bundle).
  void IgnoreNextTiming() { ignore_next_timing_ = true; }
  void RecordTime(int64_t batch_size, double elapsed_secs);
  // Least-squares fit (Beam's refined variant); exposed for tests. Returns {a, b}.
  static std::pair<double, double> LinearRegression(const std::vector<std::pair<double, double>>& points);

  const std::vector<std::pair<int64_t, double>>& data() const { return data_; }
  const BatchElementsOptions& options() const { return options_; }

 private:
  explicit BatchSizeEstimator(const BatchElementsOptions& options);
  int64_t CalculateNextBatchSize();
  void ThinData();

  BatchElementsOptions options_;
  std::vector<std::pair<int64_t, double>> data_;  // (batch size, seconds)
  bool ignore_next_timing_ = false;
  int64_t replay_last_batch_size_ = 0;
  std::mt19937_64 rng_;
};

template <typename T>
class BatchElements {
 public:
  // `clock` must outlive this object.
  static Result<BatchElements> Make(const BatchElementsOptions& options, Clock* clock) {
    ASSIGN_OR_RETURN(BatchSizeEstimator estimator, BatchSizeEstimator::Make(options));
    return BatchElements(std::move(estimator), clock);
  }

  // Beam's start_bundle: pick the first size; its timing will be ignored.
  void StartBundle() {
    target_ = estimator_.NextBatchSize();
    estimator_.IgnoreNextTiming();
  }

  // Buffers `item` of weight `weight` (>= 1; 1 = a plain count); emits the batch to
  // `consume(std::vector<T>&)` when it reaches the target size (or the weight cap), or its first
  // element is older than max_batch_duration_secs. A consumer error is returned as is (the timing
  // is then not recorded, as in Beam).
  template <typename Consume>
  Status Add(T item, Consume&& consume) {
    return Add(std::move(item), 1, consume);
  }
  template <typename Consume>
  Status Add(T item, int64_t weight, Consume&& consume) {
    weight = std::max<int64_t>(weight, 1);
    const BatchElementsOptions& o = estimator_.options();
    if (o.sort_window > 0) {
      const double now = clock_->NowSecs();
      if (pool_.empty() || now < pool_oldest_) pool_oldest_ = now;
      pool_.push_back(Pooled{std::move(item), weight, now});
      pool_weight_ += weight;
      // Cut when the pool holds the window and at least one full batch (by count or by weight).
      const int64_t n = static_cast<int64_t>(pool_.size());
      if (n >= o.sort_window && (n >= target_ || (o.max_batch_weight && pool_weight_ >= *o.max_batch_weight))) {
        return CutPool(consume, false);
      }
      return Expired() ? CutPool(consume, true) : Status::OK();
    }
    // The weight cap closes the batch before an element that would overflow it.
    if (o.max_batch_weight && !buffer_.empty() && buffer_weight_ + weight > *o.max_batch_weight) {
      RETURN_IF_ERROR(Emit(consume));
    }
    if (buffer_.empty()) first_added_ = clock_->NowSecs();
    buffer_.push_back(std::move(item));
    buffer_weight_ += weight;
    if (static_cast<int64_t>(buffer_.size()) >= target_ || (o.max_batch_weight && buffer_weight_ >= *o.max_batch_weight) ||
        Expired()) {
      return Emit(consume);
    }
    return Status::OK();
  }

  // Emits a partial batch whose first element has waited max_batch_duration_secs (call between
  // inputs, e.g. from a timer). No-op otherwise.
  template <typename Consume>
  Status Poll(Consume&& consume) {
    if (!Expired()) return Status::OK();
    if (!pool_.empty()) return CutPool(consume, true);
    return !buffer_.empty() ? Emit(consume) : Status::OK();
  }

  // Beam's finish_bundle: emits the partial batch (every pooled element), then picks the next size.
  template <typename Consume>
  Status FinishBundle(Consume&& consume) {
    if (!pool_.empty()) RETURN_IF_ERROR(CutPool(consume, true));
    if (!buffer_.empty()) RETURN_IF_ERROR(Emit(consume));
    target_ = estimator_.NextBatchSize();
    return Status::OK();
  }

  int64_t target_batch_size() const { return target_; }
  std::size_t buffered() const { return buffer_.size() + pool_.size(); }
  const BatchSizeEstimator& estimator() const { return estimator_; }

 private:
  struct Pooled {
    T item;
    int64_t weight;
    double added;  // clock seconds, for max_batch_duration_secs
  };

  BatchElements(BatchSizeEstimator estimator, Clock* clock) : estimator_(std::move(estimator)), clock_(clock) {
    target_ = estimator_.options().min_batch_size;
  }

  // The oldest buffered (or pooled) element has waited max_batch_duration_secs.
  bool Expired() const {
    const auto& max = estimator_.options().max_batch_duration_secs;
    if (!max.has_value()) return false;
    if (pool_.empty() && buffer_.empty()) return false;
    return clock_->NowSecs() - (pool_.empty() ? first_added_ : pool_oldest_) >= *max;
  }

  // Sorts the pool by weight and emits batches cut from it: full ones only, unless `all` (the end
  // of the bundle, or an expired element), when the rest goes too.
  template <typename Consume>
  Status CutPool(Consume& consume, bool all) {
    const BatchElementsOptions& o = estimator_.options();
    std::stable_sort(pool_.begin(), pool_.end(), [](const Pooled& a, const Pooled& b) { return a.weight < b.weight; });
    std::size_t start = 0;
    while (start < pool_.size()) {
      std::size_t end = start;
      int64_t weight = 0;
      while (end < pool_.size() && static_cast<int64_t>(end - start) < target_ &&
             (!o.max_batch_weight || end == start || weight + pool_[end].weight <= *o.max_batch_weight)) {
        weight += pool_[end].weight;
        ++end;
      }
      const bool full = static_cast<int64_t>(end - start) >= target_ || end < pool_.size();
      if (!full && !all) break;
      for (std::size_t i = start; i < end; ++i) buffer_.push_back(std::move(pool_[i].item));
      buffer_weight_ = weight;
      pool_weight_ -= weight;
      start = end;
      Status s = Emit(consume);
      if (!s.ok()) {
        pool_.erase(pool_.begin(), pool_.begin() + static_cast<std::ptrdiff_t>(start));
        RecomputeOldest();
        return s;
      }
    }
    pool_.erase(pool_.begin(), pool_.begin() + static_cast<std::ptrdiff_t>(start));
    RecomputeOldest();
    return Status::OK();
  }

  // The oldest pooled element's arrival, after a cut took some (once per cut, not per element).
  void RecomputeOldest() {
    if (pool_.empty()) return;
    pool_oldest_ = pool_.front().added;
    for (const Pooled& p : pool_) pool_oldest_ = std::min(pool_oldest_, p.added);
  }

  template <typename Consume>
  Status Emit(Consume& consume) {
    std::vector<T> batch;
    batch.swap(buffer_);
    buffer_weight_ = 0;
    const int64_t size = static_cast<int64_t>(batch.size());
    const double start = clock_->NowSecs();
    RETURN_IF_ERROR(consume(batch));
    estimator_.RecordTime(size, clock_->NowSecs() - start);
    target_ = estimator_.NextBatchSize();
    buffer_.reserve(static_cast<std::size_t>(target_));
    return Status::OK();
  }

  BatchSizeEstimator estimator_;
  Clock* clock_;
  std::vector<T> buffer_;
  int64_t buffer_weight_ = 0;
  std::vector<Pooled> pool_;  // sort_window > 0: elements not yet cut into a batch
  int64_t pool_weight_ = 0;   // their total weight
  double pool_oldest_ = 0;    // the earliest `added` among them (valid when the pool is not empty)
  int64_t target_ = 1;
  double first_added_ = 0;
};

}  // namespace dfw
