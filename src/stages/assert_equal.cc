// AssertEqual's sink half (dfw/stages/assert_equal.h): each bundle's rows, encoded, committed with
// the bundle. The comparison runs once over all bundles at finalize (src/pipeline/assertions.cc).
#include "dfw/stages/assert_equal.h"

#include "dfw/record/value_codec.h"
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "sink_file.h"

namespace dfw {
namespace {

class AssertEqualSink final : public Stage {
 public:
  explicit AssertEqualSink(StageConfig config) : config_(std::move(config)) {}

  Status StartBundle(const BundleContext& bundle) override { return file_.Open(bundle, config_.name).WithContext(config_.Where()); }
  Status Process(RowBatch& in, StageOutput&) override {
    buffer_.clear();
    for (Row& row : in) AppendEncodedValue(buffer_, Value::FromRow(std::move(row)));
    return file_.Write(buffer_).WithContext(config_.Where());
  }
  Status FinishBundle(StageOutput&) override { return file_.Commit().WithContext(config_.Where()); }

 private:
  StageConfig config_;
  stages_internal::BundleFile file_;
  std::string buffer_;
};

Result<std::unique_ptr<Stage>> MakeAssertEqual(const StageConfig& config) {
  const ConfigNode& elements = config.config["elements"];
  if (!elements.IsSequence()) {
    return ConfigKeyError(config, "elements", "must be a list of the rows expected, e.g. [{a: 1}, {a: 2}] (or [] for none)");
  }
  for (const ConfigNode& e : elements.items()) {
    // Beam builds beam.Row(**element) from each: a mapping.
    if (!e.IsMap()) return InvalidArgument(NodeLocation(config, e) + ": AssertEqual elements must be mappings (rows), e.g. {a: 1}");
  }
  return std::unique_ptr<Stage>(new AssertEqualSink(config));
}

}  // namespace

Status DecodeAssertedRows(std::string_view bytes, std::vector<Value>& rows) {
  while (!bytes.empty()) {
    Result<Value> v = DecodeValue(bytes);
    if (!v.ok()) return DataLoss("AssertEqual rows: " + v.status().message());
    rows.push_back(std::move(*v));
  }
  return Status::OK();
}

Value DropNullFields(Value v) {
  if (!v.is_row()) return v;
  Row kept;
  for (const Field& f : v.as_row().fields()) {
    if (!f.value.is_null()) kept.Set(f.name, f.value);
  }
  return Value::FromRow(std::move(kept));
}

void RegisterAssertEqual(StageRegistry& r) {
  (void)r.Register({kAssertEqualType, MakeAssertEqual, {"elements"}, {"elements"}, StageTraits{.is_sink = true, .serial = true},
                    CheckByMaking(MakeAssertEqual)});
}

}  // namespace dfw
