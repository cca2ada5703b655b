// Flatten: the union of its inputs. The graph already merges a list `input:` into one stream, so
// the stage passes rows through.
#include "dfw/stages/stage.h"

namespace dfw {
namespace {

class Flatten final : public Stage {
 public:
  Status Process(RowBatch& in, StageOutput& out) override {
    for (Row& row : in) out.Emit(std::move(row));
    return Status::OK();
  }
};

Result<std::unique_ptr<Stage>> MakeFlatten(const StageConfig&) { return std::unique_ptr<Stage>(new Flatten()); }

}  // namespace

void RegisterFlatten(StageRegistry& r) { (void)r.Register({"Flatten", MakeFlatten, {}, {}, StageTraits{}, CheckByMaking(MakeFlatten)}); }

}  // namespace dfw
