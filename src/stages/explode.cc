// Explode: one output row per element of list field(s). With several fields, `cross_product`
// must be given: true = every combination, false = zip (shorter lists padded with null).
// A row whose lists are all empty yields no rows and is counted as filtered; a row that yields n > 1
// rows counts n - 1 as fanned out (elements_fanned_out), which keeps the run's accounting exact.
#include <fmt/format.h>

#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"

namespace dfw {
namespace {

struct ExplodeOptions {
  std::vector<std::string> fields;  // list-valued fields to explode
  bool cross_product = true;        // combination (true) or zip (false); required when fields > 1
};

class Explode final : public Stage {
 public:
  explicit Explode(ExplodeOptions options) : options_(std::move(options)) {}

  // Stateless: safe to call concurrently.
  Status Process(RowBatch& in, StageOutput& out) override {
    std::vector<const List*> lists(options_.fields.size());
    for (Row& row : in) {
      std::string error;
      for (std::size_t i = 0; i < options_.fields.size() && error.empty(); ++i) {
        const Value* v = row.Find(options_.fields[i]);
        if (v == nullptr) {
          error = fmt::format("Explode: field '{}' is missing", options_.fields[i]);
        } else if (!v->is_list()) {
          error = fmt::format("Explode: field '{}' is {}, not a list", options_.fields[i], v->TypeName());
        } else {
          lists[i] = &v->as_list();
        }
      }
      if (!error.empty()) {
        RETURN_IF_ERROR(out.Fail(row, error));
        continue;
      }
      std::size_t before = out.main().size();
      if (options_.cross_product) {
        std::vector<Value> pick(lists.size());
        Cross(row, lists, 0, pick, out);
      } else {
        std::size_t n = 0;
        for (const List* l : lists) n = std::max(n, l->size());
        for (std::size_t k = 0; k < n; ++k) {
          Row r = row;
          for (std::size_t i = 0; i < lists.size(); ++i) {
            r.Set(options_.fields[i], k < lists[i]->size() ? (*lists[i])[k] : Value());
          }
          out.Emit(std::move(r));
        }
      }
      std::size_t made = out.main().size() - before;
      if (made == 0) out.CountFiltered();
      if (made > 1) out.CountFannedOut(static_cast<int64_t>(made - 1));
    }
    return Status::OK();
  }

 private:
  void Cross(const Row& row, const std::vector<const List*>& lists, std::size_t i, std::vector<Value>& pick,
             StageOutput& out) const {
    if (i == lists.size()) {
      Row r = row;
      for (std::size_t j = 0; j < lists.size(); ++j) r.Set(options_.fields[j], pick[j]);
      out.Emit(std::move(r));
      return;
    }
    for (const Value& v : *lists[i]) {
      pick[i] = v;
      Cross(row, lists, i + 1, pick, out);
    }
  }

  ExplodeOptions options_;
};

Result<std::unique_ptr<Stage>> MakeExplode(const StageConfig& config) {
  ExplodeOptions o;
  ASSIGN_OR_RETURN(o.fields, ConfigStringList(config, "fields"));
  if (o.fields.empty()) return config.ConfigError("config 'fields' is required (a field name or a list of them)");
  if (o.fields.size() > 1 && !ConfigHas(config, "cross_product")) {
    return config.ConfigError("cross_product must be specified true or false when exploding multiple fields");
  }
  ASSIGN_OR_RETURN(o.cross_product, ConfigBool(config, "cross_product", true));
  return std::unique_ptr<Stage>(new Explode(std::move(o)));
}

}  // namespace

void RegisterExplode(StageRegistry& r) {
  (void)r.Register({"Explode", MakeExplode, {"fields", "cross_product"}, {"fields"}, StageTraits{.can_fail_per_record = true}, CheckByMaking(MakeExplode)});
}

}  // namespace dfw
