// Helpers for the file-format tests (io_*_test.cc): a sink's bundle written and moved to a shard
// name, as finalize does, and rows read back through a source.
#pragma once

#include <filesystem>
#include <string>

#include "dfw/stages/sink.h"
#include "stages_test_util.h"

namespace dfw::testing {

// Runs `rows` through sink `type` (config `config_yaml`) as one bundle and renames the committed
// bundle file to `shard` (what FinalizeOutputs does). The outputs carry the rows the sink failed.
inline Result<Outputs> WriteShard(const std::string& type, const std::string& config_yaml, RowBatch rows,
                                  const TempDir& dir, const std::string& shard, const std::string& error_output = "") {
  StageConfig c = MakeConfig(type, config_yaml, error_output);
  ASSIGN_OR_RETURN(auto stage, MakeStage(c));
  BundleContext ctx{3, dir / "staging"};
  RETURN_IF_ERROR(stage->StartBundle(ctx));
  ASSIGN_OR_RETURN(Outputs out, RunStage(*stage, c, std::move(rows)));
  std::error_code ec;
  std::filesystem::rename(StagingDonePath(dir / "staging", type, 3), shard, ec);
  if (ec) return IoError("rename to '" + shard + "': " + ec.message());
  return out;
}

// Reads every split of source `type` with config `config_yaml` (errors go to an error output).
inline Result<Outputs> ReadSource(const std::string& type, const std::string& config_yaml) {
  StageConfig c = MakeConfig(type, config_yaml, "errors");
  ASSIGN_OR_RETURN(auto stage, MakeStage(c));
  return ReadAll(*stage, c);
}

inline std::vector<std::string> AsJson(const RowBatch& rows) {
  std::vector<std::string> out;
  for (const Row& r : rows) out.push_back(r.ToJson());
  return out;
}

inline std::vector<std::string> ErrorMessages(const RowBatch& errors) {
  std::vector<std::string> out;
  for (const Row& r : errors) out.push_back(r.Find("msg") != nullptr ? r.Find("msg")->as_string() : r.ToJson());
  return out;
}

}  // namespace dfw::testing
