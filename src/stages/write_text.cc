// WriteToText: one line per row; the row must have exactly one field (Beam's rule). Strings are
// written as they are, other values as JSON.
#include "dfw/stages/config.h"
#include "sink_file.h"

namespace dfw {
namespace {

class WriteText final : public stages_internal::FileSink {
 public:
  using FileSink::FileSink;

 protected:
  Status Format(const Row& row, std::string& buf, StageOutput& out) override {
    if (row.size() != 1) {
      return out.Fail(row, "WriteToText needs rows with exactly one field, got " + std::to_string(row.size()) +
                               " (use MapToFields to select one)");
    }
    const Value& v = row.fields()[0].value;
    if (v.is_string()) {
      buf += v.as_string();
    } else {
      v.AppendJson(buf);
    }
    buf.push_back('\n');
    return Status::OK();
  }
};

Result<std::unique_ptr<Stage>> MakeWriteText(const StageConfig& config) {
  RETURN_IF_ERROR(SinkNaming(config).status());
  return std::unique_ptr<Stage>(new WriteText(config));
}

}  // namespace

void RegisterWriteText(StageRegistry& r) {
  (void)r.Register({"WriteToText", MakeWriteText, {"path", "file_name_suffix"}, {"path"},
                    StageTraits{.is_sink = true, .serial = true}, CheckByMaking(MakeWriteText)});
}

}  // namespace dfw
