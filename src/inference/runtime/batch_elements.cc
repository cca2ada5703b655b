// BatchSizeEstimator: the adaptive part of Beam's BatchElements (see the header for the rules).
#include "dfw/inference/batch_elements.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

namespace dfw {
namespace {

class SteadyClock final : public Clock {
 public:
  double NowSecs() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

// Weighted least squares for y = a + b·x minimising Σ wᵢ (yᵢ − a − b·xᵢ)². nullopt when degenerate.
std::optional<std::pair<double, double>> WeightedFit(const std::vector<std::pair<double, double>>& p,
                                                     const std::vector<double>& w) {
  double sw = 0, sx = 0, sy = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    sw += w[i];
    sx += w[i] * p[i].first;
    sy += w[i] * p[i].second;
  }
  if (sw <= 0) return std::nullopt;
  const double xbar = sx / sw, ybar = sy / sw;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    sxx += w[i] * (p[i].first - xbar) * (p[i].first - xbar);
    sxy += w[i] * (p[i].first - xbar) * (p[i].second - ybar);
  }
  if (sxx <= 0) return std::nullopt;
  const double b = sxy / sxx;
  return std::make_pair(ybar - b * xbar, b);
}

}  // namespace

Clock* SystemClock() {
  static SteadyClock clock;
  return &clock;
}

BatchSizeEstimator::BatchSizeEstimator(const BatchElementsOptions& options) : options_(options), rng_(options.seed) {
  if (!options_.target_batch_duration_secs && !options_.target_batch_duration_secs_including_fixed_cost) {
    options_.target_batch_duration_secs = 10.0;
  }
}

Result<BatchSizeEstimator> BatchSizeEstimator::Make(const BatchElementsOptions& o) {
  if (o.min_batch_size < 1) {
    return InvalidArgument("min_batch_size " + std::to_string(o.min_batch_size) + " must be >= 1");
  }
  if (o.min_batch_size > o.max_batch_size) {
    return InvalidArgument("min_batch_size " + std::to_string(o.min_batch_size) + " must not be greater than " +
                           "max_batch_size " + std::to_string(o.max_batch_size));
  }
  if (o.target_batch_overhead && !(*o.target_batch_overhead > 0 && *o.target_batch_overhead <= 1)) {
    return InvalidArgument("target_batch_overhead " + std::to_string(*o.target_batch_overhead) +
                           " must be in (0, 1]");
  }
  for (const auto& [name, v] : {std::pair{"target_batch_duration_secs", o.target_batch_duration_secs},
                                std::pair{"target_batch_duration_secs_including_fixed_cost",
                                          o.target_batch_duration_secs_including_fixed_cost},
                                std::pair{"max_batch_duration_secs", o.max_batch_duration_secs}}) {
    if (v && !(std::isfinite(*v) && *v > 0)) {
      return InvalidArgument(std::string(name) + " " + std::to_string(*v) + " must be a positive number of seconds");
    }
  }
  if (o.target_batch_duration_secs && o.target_batch_duration_secs_including_fixed_cost) {
    return InvalidArgument(
        "at most one of target_batch_duration_secs and target_batch_duration_secs_including_fixed_cost may be set");
  }
  if (o.max_batch_weight && *o.max_batch_weight < 1) {
    return InvalidArgument("max_batch_weight " + std::to_string(*o.max_batch_weight) + " must be >= 1");
  }
  if (o.sort_window < 0) return InvalidArgument("sort_window " + std::to_string(o.sort_window) + " must be >= 0");
  if (!(o.variance >= 0 && o.variance <= 1)) {
    return InvalidArgument("variance " + std::to_string(o.variance) + " must be in [0, 1]");
  }
  return BatchSizeEstimator(o);
}

void BatchSizeEstimator::RecordTime(int64_t batch_size, double elapsed_secs) {
  if (ignore_next_timing_) {
    ignore_next_timing_ = false;
    replay_last_batch_size_ = std::min(batch_size, options_.max_batch_size);
    return;
  }
  data_.emplace_back(batch_size, elapsed_secs);
  if (data_.size() >= kMaxDataPoints) ThinData();
}

void BatchSizeEstimator::ThinData() {
  // Two removals keep the parity of data_.size(), which drives the +0/+1 alternation.
  data_.erase(data_.begin() + static_cast<std::ptrdiff_t>(rng_() % (data_.size() / 4)));
  data_.erase(data_.begin() + static_cast<std::ptrdiff_t>(rng_() % (data_.size() / 2)));
}

std::pair<double, double> BatchSizeEstimator::LinearRegression(const std::vector<std::pair<double, double>>& p) {
  const double n = static_cast<double>(p.size());
  double xbar = 0, ybar = 0;
  for (const auto& [x, y] : p) {
    xbar += x / n;
    ybar += y / n;
  }
  if (xbar == 0) return {ybar, 0.0};
  if (std::all_of(p.begin(), p.end(), [&](const auto& q) { return q.first == p[0].first; })) {
    return {0.0, ybar / xbar};  // one batch size only: all of the time is per element
  }
  const auto [a, b] = *WeightedFit(p, std::vector<double>(p.size(), 1.0));
  if (p.size() < 10) return {a, b};
  // Refine: drop points with Cook's distance > 0.5, refit weighting by 1/x (numpy's polyfit
  // weight w multiplies the residual, so the squared residual is weighted by w²).
  double sum_x = 0, sum_x2 = 0, s2 = 0;
  for (const auto& [x, y] : p) {
    sum_x += x;
    sum_x2 += x * x;
    s2 += (a + b * x - y) * (a + b * x - y);
  }
  s2 /= n - 2;
  if (s2 == 0) return {a, b};  // an exact fit
  std::vector<double> w(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double x = p[i].first, err = a + b * x - p[i].second;
    const double h = (sum_x2 - 2 * sum_x * x + n * x * x) / (n * sum_x2 - sum_x * sum_x);
    const double cook = h >= 1 ? INFINITY : 0.5 / s2 * err * err * (h / ((1 - h) * (1 - h)));
    w[i] = cook <= 0.5 ? 1.0 / (x * x) : 0.0;
  }
  return WeightedFit(p, w).value_or(std::make_pair(a, b));
}

int64_t BatchSizeEstimator::CalculateNextBatchSize() {
  const int64_t min = options_.min_batch_size, max = options_.max_batch_size;
  if (min == max || data_.empty()) return min;
  if (data_.size() < 2) return std::max(std::min(max, min * kMaxGrowthFactor), min + 1);

  // The top quantile is noisy and dominates the regression: drop the largest 20 % of sizes.
  std::vector<std::pair<int64_t, double>> sorted = data_;
  std::sort(sorted.begin(), sorted.end());
  sorted.resize(std::min(sorted.size(), std::max<std::size_t>(20, data_.size() * 4 / 5)));
  std::vector<std::pair<double, double>> points;
  for (const auto& [x, y] : sorted) points.emplace_back(static_cast<double>(x), y);
  auto [a, b] = LinearRegression(points);
  a = std::max(a, 1e-10);
  b = std::max(b, 1e-20);

  const int64_t cap = std::min(data_.back().first * kMaxGrowthFactor, max);
  double target = static_cast<double>(max);
  if (options_.target_batch_duration_secs) target = std::min(target, *options_.target_batch_duration_secs / b);
  if (options_.target_batch_duration_secs_including_fixed_cost) {
    target = std::min(target, (*options_.target_batch_duration_secs_including_fixed_cost - a) / b);
  }
  if (options_.target_batch_overhead) target = std::min(target, (a / b) * (1 / *options_.target_batch_overhead - 1));
  // Alternate the lower bound so a run stuck at `min` still sees two sizes to fit a line to.
  const int64_t jitter = static_cast<int64_t>(data_.size() % 2);
  if (data_.size() > 10) {
    const double r = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    target += std::trunc(target * options_.variance * 2 * (r - 0.5));
  }
  const double chosen = std::max(static_cast<double>(min + jitter), std::min(target, static_cast<double>(cap)));
  return static_cast<int64_t>(chosen);
}

int64_t BatchSizeEstimator::NextBatchSize() {
  if (replay_last_batch_size_ > 0) {
    const int64_t size = replay_last_batch_size_;
    replay_last_batch_size_ = 0;
    return size;
  }
  return CalculateNextBatchSize();
}

}  // namespace dfw
