// WriteToCsv: a header row (the first row's field names) then one RFC 4180 record per row.
// Every row of a file must have the same field names in the same order.
#include "dfw/stages/config.h"
#include "dfw/common/strings.h"
#include "sink_file.h"

namespace dfw {
namespace {

struct WriteCsvOptions {
  char delimiter = ',';  // field separator
};

class WriteCsv final : public stages_internal::FileSink {
 public:
  WriteCsv(StageConfig config, WriteCsvOptions options) : FileSink(std::move(config)), options_(options) {}

 protected:
  void StartFile() override { header_.clear(); }

  Status Format(const Row& row, std::string& buf, StageOutput& out) override {
    if (header_.empty()) {
      for (const Field& f : row.fields()) header_.push_back(f.name);
      for (std::size_t i = 0; i < header_.size(); ++i) AppendField(header_[i], i, buf);
      buf.push_back('\n');
    }
    bool same = row.size() == header_.size();
    for (std::size_t i = 0; same && i < header_.size(); ++i) same = row.fields()[i].name == header_[i];
    if (!same) return out.Fail(row, "WriteToCsv: fields differ from the file's header (" + Join(header_) + ")");
    std::string text;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const Value& v = row.fields()[i].value;
      text.clear();
      if (v.is_string()) {
        text = v.as_string();
      } else if (!v.is_null()) {
        v.AppendJson(text);
      }
      AppendField(text, i, buf);
    }
    buf.push_back('\n');
    return Status::OK();
  }

 private:
  void AppendField(const std::string& text, std::size_t index, std::string& buf) const {
    if (index > 0) buf.push_back(options_.delimiter);
    bool quote = text.find_first_of(std::string("\"\r\n") + options_.delimiter) != std::string::npos;
    if (!quote) {
      buf += text;
      return;
    }
    buf.push_back('"');
    for (char c : text) {
      if (c == '"') buf.push_back('"');
      buf.push_back(c);
    }
    buf.push_back('"');
  }

  WriteCsvOptions options_;
  std::vector<std::string> header_;
};

Result<std::unique_ptr<Stage>> MakeWriteCsv(const StageConfig& config) {
  RETURN_IF_ERROR(SinkNaming(config).status());
  WriteCsvOptions o;
  ASSIGN_OR_RETURN(std::string d, ConfigString(config, "delimiter", std::string(",")));
  if (d.size() != 1 || d[0] == '"' || d[0] == '\n' || d[0] == '\r') {
    return ConfigKeyError(config, "delimiter", "must be a single character other than '\"' or a newline, got '" + d + "'");
  }
  o.delimiter = d[0];
  return std::unique_ptr<Stage>(new WriteCsv(config, o));
}

}  // namespace

void RegisterWriteCsv(StageRegistry& r) {
  (void)r.Register({"WriteToCsv", MakeWriteCsv, {"path", "delimiter", "file_name_suffix"}, {"path"},
                    StageTraits{.is_sink = true, .serial = true}, CheckByMaking(MakeWriteCsv)});
}

}  // namespace dfw
