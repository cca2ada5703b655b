// ReadFromJson: JSON Lines (one object per line) parsed with simdjson into rows (json_lines.h).

#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "file_source.h"
#include "json_lines.h"

namespace dfw {
namespace {

using stages_internal::LineSplitReader;

struct ReadJsonOptions {
  std::string path;  // glob of JSON Lines files
};

class ReadJson final : public Stage {
 public:
  ReadJson(StageConfig config, ReadJsonOptions options) : config_(std::move(config)), options_(std::move(options)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("ReadFromJson has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t target_bytes) override {
    ASSIGN_OR_RETURN(auto files, stages_internal::ExpandGlob(config_, options_.path));
    return stages_internal::SplitFiles(files, target_bytes, /*csv_quotes=*/false);
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    // One parser per reader (simdjson parsers are not thread-safe, readers are never shared); the
    // range buffer carries the padding simdjson reads past a line's end, so no line is copied.
    auto parser = std::make_shared<stages_internal::JsonLinesParser>(split.path);
    return LineSplitReader::OpenChunked(split, stages_internal::JsonLinesParser::Padding(),
                                        [parser](const std::vector<stages_internal::NumberedLine>& lines, StageOutput& out) {
                                          return parser->ParseLines(lines, out);
                                        });
  }

 private:
  StageConfig config_;
  ReadJsonOptions options_;
};

Result<std::unique_ptr<Stage>> MakeReadJson(const StageConfig& config) {
  ReadJsonOptions o;
  ASSIGN_OR_RETURN(o.path, ConfigString(config, "path"));
  RETURN_IF_ERROR(CheckLocalPath(config, "path", o.path));
  o.path = ResolveConfigPath(config, o.path);
  return std::unique_ptr<Stage>(new ReadJson(config, std::move(o)));
}

}  // namespace

void RegisterReadJson(StageRegistry& r) {
  (void)r.Register({"ReadFromJson", MakeReadJson, {"path"}, {"path"}, StageTraits{.is_source = true, .can_fail_per_record = true}, CheckByMaking(MakeReadJson)});
}

}  // namespace dfw
