// Reshuffle (Beam YAML's `Reshuffle`, optional `num_buckets`): in Beam a fusion break that
// redistributes elements among workers without changing them. dfworker's bundles are already
// pulled by whichever SDK process is idle (dynamic work rebalancing), so the rows pass through.
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"

namespace dfw {
namespace {

class Reshuffle final : public Stage {
 public:
  Status Process(RowBatch& in, StageOutput& out) override {
    for (Row& row : in) out.Emit(std::move(row));
    return Status::OK();
  }
};

Result<std::unique_ptr<Stage>> MakeReshuffle(const StageConfig& config) {
  if (ConfigHas(config, "num_buckets")) {
    ASSIGN_OR_RETURN(int64_t buckets, ConfigInt(config, "num_buckets"));
    if (buckets < 1) return ConfigKeyError(config, "num_buckets", "must be a positive number of buckets");
  }
  return std::unique_ptr<Stage>(new Reshuffle());
}

}  // namespace

void RegisterReshuffle(StageRegistry& r) {
  (void)r.Register({"Reshuffle", MakeReshuffle, {"num_buckets"}, {}, StageTraits{}, CheckByMaking(MakeReshuffle)});
}

}  // namespace dfw
