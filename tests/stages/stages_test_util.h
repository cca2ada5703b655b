// Helpers for stage tests: build a stage from a YAML config, run rows through it, read a source.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "dfw/stages/stage.h"
#include "dfw/stages/config_yaml.h"
#include "test_util.h"

namespace dfw::testing {

inline StageConfig MakeConfig(const std::string& type, const std::string& config_yaml, const std::string& error_output = "") {
  StageConfig c;
  c.name = type;
  c.type = type;
  c.config = ConfigNodeFromYaml(YAML::Load(config_yaml));
  c.file = "t.yaml";
  c.line = 3;
  c.column = 5;
  c.error_output = error_output;
  return c;
}

inline Result<std::unique_ptr<Stage>> MakeStage(const StageConfig& c) {
  StageRegistry r;
  RegisterBuiltinStages(r);
  const StageTypeInfo* info = r.Find(c.type);
  if (info == nullptr) return NotFound("no stage " + c.type);
  return info->factory(c);
}

struct Outputs {
  RowBatch main, errors;
  int64_t filtered = 0;
};

// Runs `rows` through a non-source stage in one batch, then FinishBundle.
inline Result<Outputs> RunStage(Stage& stage, const StageConfig& c, RowBatch rows) {
  StageOutput out(&c);
  RETURN_IF_ERROR(stage.Process(rows, out));
  RETURN_IF_ERROR(stage.FinishBundle(out));
  return Outputs{std::move(out.main()), std::move(out.errors()), out.filtered()};
}

// Reads every split of a source stage.
inline Result<Outputs> ReadAll(Stage& stage, const StageConfig& c, int64_t split_bytes = 1 << 20) {
  ASSIGN_OR_RETURN(auto splits, stage.Split(split_bytes));
  StageOutput out(&c);
  for (const SourceSplit& s : splits) {
    ASSIGN_OR_RETURN(auto reader, stage.OpenSplit(s));
    while (true) {
      ASSIGN_OR_RETURN(bool more, reader->Next(out, 7));
      if (!more) break;
    }
  }
  return Outputs{std::move(out.main()), std::move(out.errors()), out.filtered()};
}

inline Row JsonRow(const std::vector<std::pair<std::string, Value>>& fields) {
  Row r;
  for (const auto& [k, v] : fields) r.Append(k, v);
  return r;
}

}  // namespace dfw::testing
