// WriteToJson: JSON Lines, one compact object per row.
#include "dfw/stages/config.h"
#include "sink_file.h"

namespace dfw {
namespace {

class WriteJson final : public stages_internal::FileSink {
 public:
  using FileSink::FileSink;

 protected:
  Status Format(const Row& row, std::string& buf, StageOutput&) override {
    row.AppendJson(buf);
    buf.push_back('\n');
    return Status::OK();
  }
};

Result<std::unique_ptr<Stage>> MakeWriteJson(const StageConfig& config) {
  RETURN_IF_ERROR(SinkNaming(config).status());
  return std::unique_ptr<Stage>(new WriteJson(config));
}

}  // namespace

void RegisterWriteJson(StageRegistry& r) {
  (void)r.Register({"WriteToJson", MakeWriteJson, {"path", "file_name_suffix"}, {"path"},
                    StageTraits{.is_sink = true, .serial = true}, CheckByMaking(MakeWriteJson)});
}

}  // namespace dfw
