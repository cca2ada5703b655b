// The stage Combine and Join register under their own type: both run as fused stages around a
// shuffle (pipeline/fused_stages.h), so a runner that was given the unfused pipeline reaches this
// and gets an internal error naming the transform, never a silent pass-through.
#pragma once

#include <string>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

class UnfusedShuffleStage final : public Stage {
 public:
  explicit UnfusedShuffleStage(std::string type) : type_(std::move(type)) {}
  Status Process(RowBatch&, StageOutput&) override {
    return Internal(type_ + " runs as fused stages (pipeline/fused_stages.h); this runner was given the unfused pipeline");
  }

 private:
  std::string type_;
};

}  // namespace dfw::stages_internal
