// Create: rows from the `elements` list in the YAML. Mappings become rows, other values become
// {element: value}; keys missing from some mappings are filled with null (as Beam does).
#include <algorithm>
#include <mutex>

#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "json_schema.h"

namespace dfw {
namespace {

struct CreateOptions {
  std::vector<Row> elements;  // the rows, already normalised
  // `reshuffle` (Beam default true) is accepted: a job-sized plan already cuts the elements into
  // bundles that every SDK process leases (PipelineRunner::PlanBundles).
};

class CreateReader final : public SplitReader {
 public:
  // Elements [begin, end) of `rows` (clamped to its size).
  CreateReader(const std::vector<Row>* rows, std::size_t begin, std::size_t end)
      : rows_(rows), begin_(std::min(begin, rows->size())), next_(begin_), end_(std::min(end, rows->size())) {}
  Result<bool> Next(StageOutput& out, std::size_t max_rows) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t n = 0; n < max_rows && next_ < end_; ++n) out.Emit((*rows_)[next_++]);
    return next_ < end_;
  }

  std::optional<SplitProgress> Progress() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return SplitProgress{static_cast<int64_t>(next_ - begin_), static_cast<int64_t>(end_ - begin_)};
  }

  // Any element index is a record boundary.
  std::optional<SourceSplit> TrySplit(double fraction) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_ >= end_) return std::nullopt;
    fraction = std::clamp(fraction, 0.0, 1.0);
    auto cut = next_ + static_cast<std::size_t>(fraction * static_cast<double>(end_ - next_));
    cut = std::max(cut, begin_ + 1);
    if (cut >= end_ || end_ - cut < static_cast<std::size_t>(kMinSplitElements)) return std::nullopt;
    SourceSplit residual{"", static_cast<int64_t>(cut), static_cast<int64_t>(end_), 1};
    end_ = cut;
    return residual;
  }

 private:
  const std::vector<Row>* rows_;
  std::size_t begin_;
  std::size_t next_;
  std::size_t end_;
  mutable std::mutex mu_;  // Next against Progress/TrySplit (another thread)
};

class Create final : public Stage {
 public:
  explicit Create(CreateOptions options) : options_(std::move(options)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("Create has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t) override {
    // One range of element indexes, even when empty, so that sinks still write their (empty)
    // shard; the runner cuts it by element count for a job-sized plan.
    return std::vector<SourceSplit>{SourceSplit{"", 0, static_cast<int64_t>(options_.elements.size()), 1}};
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    if (split.begin < 0 || split.end < split.begin) {
      return InvalidArgument("Create: impossible element range " + std::to_string(split.begin) + ".." + std::to_string(split.end));
    }
    return std::unique_ptr<SplitReader>(new CreateReader(&options_.elements, static_cast<std::size_t>(split.begin),
                                                         static_cast<std::size_t>(split.end)));
  }

 private:
  CreateOptions options_;
};

Result<std::unique_ptr<Stage>> MakeCreate(const StageConfig& config) {
  const ConfigNode& elements = config.config["elements"];
  if (!elements.IsDefined() || !elements.IsSequence()) {
    return ConfigKeyError(config, "elements", "expected a list of elements");
  }
  if (ConfigHas(config, "reshuffle")) { ASSIGN_OR_RETURN(bool ignored, ConfigBool(config, "reshuffle")); (void)ignored; }
  CreateOptions o;
  std::vector<std::string> all_keys;
  for (const ConfigNode& e : elements.items()) {
    Value v = ConfigToValue(e);
    if (v.is_row()) {
      o.elements.push_back(v.as_row());
      for (const Field& f : v.as_row().fields()) {
        if (std::find(all_keys.begin(), all_keys.end(), f.name) == all_keys.end()) all_keys.push_back(f.name);
      }
    } else {
      Row row;
      row.Append("element", std::move(v));
      o.elements.push_back(std::move(row));
    }
  }
  for (Row& row : o.elements) {
    if (row.Has("element") && row.size() == 1 && all_keys.empty()) continue;
    for (const std::string& k : all_keys) {
      if (!row.Has(k)) row.Append(k, Value());
    }
  }
  // Beam's output_schema: a JSON Schema every element must satisfy (checked here, at load).
  if (ConfigHas(config, "output_schema")) {
    ASSIGN_OR_RETURN(stages_internal::RowSchema schema, stages_internal::RowSchema::Make(config, "output_schema"));
    for (std::size_t i = 0; i < o.elements.size(); ++i) {
      if (std::optional<std::string> bad = schema.Validate(o.elements[i])) {
        return InvalidArgument(NodeLocation(config, elements.items()[i]) + ": element " + o.elements[i].ToJson() +
                               " does not match output_schema: " + *bad);
      }
    }
  }
  return std::unique_ptr<Stage>(new Create(std::move(o)));
}

}  // namespace

void RegisterCreate(StageRegistry& r) {
  (void)r.Register({"Create", MakeCreate, {"elements", "reshuffle", "output_schema"}, {"elements"}, StageTraits{.is_source = true}, CheckByMaking(MakeCreate)});
}

}  // namespace dfw
