#include "dfw/pipeline/fused_stages.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "dfw/stages/combine.h"
#include "dfw/stages/join.h"

namespace dfw {
namespace {

bool IsCombine(const TransformSpec& t) { return t.config.type == kCombineType; }
bool IsJoin(const TransformSpec& t) { return t.config.type == kJoinType; }
// A transform whose output is on the far side of a shuffle.
bool IsShuffle(const TransformSpec& t) { return IsCombine(t) || IsJoin(t); }
std::string InputTag(const TransformSpec& t, std::size_t j) {
  return j < t.config.input_names.size() ? t.config.input_names[j] : std::to_string(j);
}

// What the fused stages tell a Combine's or Join's half (StageConfig::shuffle).
ShuffleContext Shuffle(int64_t partitions, const std::string& dir) {
  ShuffleContext s;
  s.partitions = partitions;
  s.dir = dir;
  return s;
}

}  // namespace

bool HasShuffle(const PipelineSpec& spec) { return std::any_of(spec.transforms.begin(), spec.transforms.end(), IsShuffle); }

int64_t DefaultShufflePartitions(int processes) { return std::max<int64_t>(256, 8 * static_cast<int64_t>(processes)); }

Result<std::vector<FusedStage>> FuseStages(const PipelineSpec& spec, const FuseOptions& options) {
  if (options.partitions < 1) return InvalidArgument("shuffle partitions must be >= 1");
  const std::size_t n = spec.transforms.size();
  // level[i]: the stage transform i runs in. A Combine's partial sink runs at its own level, its
  // merge source (its output) at level + 1. A Join's partial sinks (one per input) each run where
  // their input's rows are, so its inputs may come from different stages; its level is the latest
  // of them and its merge runs at level + 1.
  std::vector<int> level(n, 0);
  auto output_level = [&](std::size_t i) { return level[i] + (IsShuffle(spec.transforms[i]) ? 1 : 0); };
  int stages = 1;
  for (std::size_t i = 0; i < n; ++i) {
    const TransformSpec& t = spec.transforms[i];
    for (const InputRef& in : t.inputs) level[i] = std::max(level[i], output_level(static_cast<std::size_t>(in.from)));
    for (const InputRef& in : t.inputs) {
      if (!IsJoin(t) && output_level(static_cast<std::size_t>(in.from)) != level[i]) {
        return InvalidArgument(fmt::format(
            "{}: reads from both sides of a Combine or Join ('{}' runs before its shuffle, another input after it); dfworker "
            "runs a pipeline as fused stages and cannot feed one transform from two of them",
            t.config.Where(), spec.transforms[in.from].config.name));
      }
    }
    stages = std::max(stages, output_level(i) + 1);
  }
  if (stages == 1) {
    FusedStage only{spec, {}};
    for (const TransformSpec& t : spec.transforms) only.transforms.push_back(t.config.name);
    return std::vector<FusedStage>{std::move(only)};
  }
  if (!options.committed_dir) return InvalidArgument("fused stages need the committed dir of each stage");
  std::vector<FusedStage> out(static_cast<std::size_t>(stages));
  for (int k = 0; k < stages; ++k) {
    FusedStage& stage = out[static_cast<std::size_t>(k)];
    stage.spec.file = spec.file;
    std::map<int, int> position;  // original transform index -> index in this stage's spec (its output here)
    // First the merge sources of the Combines and Joins that ended the previous stage (sources
    // come first).
    for (std::size_t i = 0; i < n; ++i) {
      const TransformSpec& t = spec.transforms[i];
      if (!IsShuffle(t) || level[i] + 1 != k) continue;
      TransformSpec merge;
      merge.config = t.config;
      merge.config.type = IsJoin(t) ? kJoinMergeType : kCombineMergeType;
      merge.config.shuffle = Shuffle(options.partitions, IsJoin(t) ? "" : options.committed_dir(k - 1) + "/" + t.config.name);
      if (IsJoin(t)) {  // each input's shuffle, committed by the stage its partial sink ran in
        for (std::size_t j = 0; j < t.inputs.size(); ++j) {
          const int at = output_level(static_cast<std::size_t>(t.inputs[j].from));
          merge.config.shuffle.join_dirs.push_back(options.committed_dir(at) + "/" + JoinShuffleName(t.config.name, InputTag(t, j)));
        }
      }
      merge.traits.is_source = true;
      position[static_cast<int>(i)] = static_cast<int>(stage.spec.transforms.size());
      stage.spec.transforms.push_back(std::move(merge));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const TransformSpec& t = spec.transforms[i];
      if (IsJoin(t)) {  // one partial sink per input, in its input's stage, each writing a shuffle of its own
        bool here = false;
        for (std::size_t j = 0; j < t.inputs.size(); ++j) {
          if (output_level(static_cast<std::size_t>(t.inputs[j].from)) != k) continue;
          here = true;
          TransformSpec partial;
          partial.config = t.config;  // the Join's name: its rows count as the Join's (accounting)
          partial.config.type = kJoinPartialType;
          partial.config.shuffle = Shuffle(options.partitions, "");
          partial.config.shuffle.join_input = static_cast<int>(j);
          partial.traits.is_sink = true;
          partial.traits.serial = true;  // a bundle's rows buffered by partition, in order
          InputRef in = t.inputs[j];
          in.from = position.at(in.from);
          partial.inputs = {in};
          stage.spec.transforms.push_back(std::move(partial));
        }
        if (here) stage.transforms.push_back(t.config.name);
        continue;
      }
      if (level[i] != k) continue;
      TransformSpec copy = t;
      for (InputRef& in : copy.inputs) in.from = position.at(in.from);
      if (IsCombine(t)) {
        copy.config.type = kCombinePartialType;
        copy.config.shuffle = Shuffle(options.partitions, "");
        copy.traits = StageTraits{};
        copy.traits.is_sink = true;  // concurrent Process calls (each folds into a table of its own)
      } else {
        position[static_cast<int>(i)] = static_cast<int>(stage.spec.transforms.size());
      }
      stage.transforms.push_back(t.config.name);
      stage.spec.transforms.push_back(std::move(copy));
    }
  }
  return out;
}

}  // namespace dfw
