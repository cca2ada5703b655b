// Create: rows from the `elements` list in the YAML. Mappings become rows, other values become
// {element: value}; keys missing from some mappings are filled with null (as Beam does).
#include <algorithm>

#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"

namespace dfw {
namespace {

struct Options {
  std::vector<Row> elements;  // the rows, already normalised
  // `reshuffle` (Beam default true) is accepted: one process reads Create's single bundle, so
  // there is nothing to redistribute.
};

class CreateReader final : public SplitReader {
 public:
  explicit CreateReader(const std::vector<Row>* rows) : rows_(rows) {}
  Result<bool> Next(StageOutput& out, std::size_t max_rows) override {
    for (std::size_t n = 0; n < max_rows && next_ < rows_->size(); ++n) out.Emit((*rows_)[next_++]);
    return next_ < rows_->size();
  }

 private:
  const std::vector<Row>* rows_;
  std::size_t next_ = 0;
};

class Create final : public Stage {
 public:
  explicit Create(Options options) : options_(std::move(options)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("Create has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t) override {
    // Always one bundle, even when empty, so that sinks still write their (empty) shard.
    return std::vector<SourceSplit>{SourceSplit{"", 0, static_cast<int64_t>(options_.elements.size()), 1}};
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit&) override {
    return std::unique_ptr<SplitReader>(new CreateReader(&options_.elements));
  }

 private:
  Options options_;
};

Result<std::unique_ptr<Stage>> Make(const StageConfig& config) {
  YAML::Node elements = config.config.IsMap() ? config.config["elements"] : YAML::Node();
  if (!elements.IsDefined() || !elements.IsSequence()) {
    return ConfigKeyError(config, "elements", "expected a list of elements");
  }
  if (ConfigHas(config, "reshuffle")) { ASSIGN_OR_RETURN(bool ignored, ConfigBool(config, "reshuffle")); (void)ignored; }
  Options o;
  std::vector<std::string> all_keys;
  for (const YAML::Node& e : elements) {
    Value v = YamlToValue(e);
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
  return std::unique_ptr<Stage>(new Create(std::move(o)));
}

}  // namespace

void RegisterCreate(StageRegistry& r) {
  (void)r.Register({"Create", Make, {"elements", "reshuffle"}, {"elements"}, StageTraits{.is_source = true}, CheckByMaking(Make)});
}

}  // namespace dfw
