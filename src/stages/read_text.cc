// ReadFromText: one row {line: str} per line of the files matching `path` (beam-yaml.md §5).
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "file_source.h"

namespace dfw {
namespace {

using stages_internal::LineSplitReader;

struct ReadTextOptions {
  std::string path;  // glob of input files (*, ?, [..])
};

class ReadText final : public Stage {
 public:
  ReadText(StageConfig config, ReadTextOptions options) : config_(std::move(config)), options_(std::move(options)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("ReadFromText has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t target_bytes) override {
    ASSIGN_OR_RETURN(auto files, stages_internal::ExpandGlob(config_, options_.path));
    return stages_internal::SplitFiles(files, target_bytes, /*csv_quotes=*/false);
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    return LineSplitReader::Open(split, 0, [](std::string_view line, int64_t, StageOutput& out) {
      Row row;
      row.Append("line", Value::String(std::string(line)));
      out.Emit(std::move(row));
      return Status::OK();
    });
  }

 private:
  StageConfig config_;
  ReadTextOptions options_;
};

Result<std::unique_ptr<Stage>> MakeReadText(const StageConfig& config) {
  ReadTextOptions o;
  ASSIGN_OR_RETURN(o.path, ConfigString(config, "path"));
  RETURN_IF_ERROR(CheckLocalPath(config, "path", o.path));
  o.path = ResolveConfigPath(config, o.path);
  return std::unique_ptr<Stage>(new ReadText(config, std::move(o)));
}

}  // namespace

void RegisterReadText(StageRegistry& r) {
  (void)r.Register({"ReadFromText", MakeReadText, {"path"}, {"path"}, StageTraits{.is_source = true, .can_fail_per_record = true}, CheckByMaking(MakeReadText)});
}

}  // namespace dfw
