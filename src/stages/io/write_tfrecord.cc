// WriteToTFRecord: the sole field of each row (bytes, or a str written as its UTF-8) as one TFRecord
// record, each bundle one file (Beam's YAML WriteToTFRecord, which takes rows of exactly one field).
#include <fmt/format.h>

#include "compressed_stream.h"
#include "dfw/stages/config.h"
#include "dfw/stages/sink.h"
#include "io_stages.h"
#include "stages/sink_file.h"
#include "tfrecord_format.h"

namespace dfw {
namespace {

using stages_io::Compression;

struct WriteTfRecordOptions {
  Compression compression = Compression::kUncompressed;  // AUTO resolved from the shard name's suffix
};

class WriteTfRecord final : public Stage {
 public:
  WriteTfRecord(StageConfig config, WriteTfRecordOptions options)
      : config_(std::move(config)), compressor_(options.compression) {}

  Status StartBundle(const BundleContext& bundle) override {
    compressor_.Reset();
    return file_.Open(bundle, config_.name).WithContext(config_.Where());
  }

  Status Process(RowBatch& in, StageOutput& out) override {
    frames_.clear();
    for (const Row& row : in) {
      if (row.size() != 1) {
        std::string names;
        for (const Field& f : row.fields()) names += (names.empty() ? "'" : ", '") + f.name + "'";
        RETURN_IF_ERROR(out.Fail(row, fmt::format("WriteToTFRecord takes rows of exactly one field, got {} ({})",
                                                  row.size(), names.empty() ? "none" : names)));
        continue;
      }
      const Value& v = row.fields()[0].value;
      if (!v.is_string() && !v.is_bytes()) {
        RETURN_IF_ERROR(out.Fail(row, fmt::format("WriteToTFRecord writes bytes; field '{}' is a {}",
                                                  row.fields()[0].name, v.TypeName())));
        continue;
      }
      stages_io::AppendTfRecordFrame(frames_, v.is_bytes() ? v.as_bytes() : v.as_string());
    }
    encoded_.clear();
    RETURN_IF_ERROR(compressor_.Append(frames_, encoded_));
    return file_.Write(encoded_).WithContext(config_.Where());
  }

  Status FinishBundle(StageOutput&) override {
    encoded_.clear();
    RETURN_IF_ERROR(compressor_.Finish(encoded_));
    RETURN_IF_ERROR(file_.Write(encoded_).WithContext(config_.Where()));
    return file_.Commit().WithContext(config_.Where());
  }

 private:
  StageConfig config_;
  stages_internal::BundleFile file_;
  stages_io::Compressor compressor_;
  std::string frames_, encoded_;
};

Result<std::unique_ptr<Stage>> MakeWriteTfRecord(const StageConfig& config) {
  ASSIGN_OR_RETURN(ShardNaming naming, SinkNaming(config));
  WriteTfRecordOptions o;
  ASSIGN_OR_RETURN(std::string compression, ConfigString(config, "compression_type", std::string("AUTO")));
  if (compression == "AUTO") {
    o.compression = stages_io::CompressionFromPath(naming.ShardName(0, 1));
  } else {
    auto c = stages_io::ParseCompression(compression);
    if (!c.ok()) return ConfigKeyError(config, "compression_type", c.status().message());
    o.compression = *c;
  }
  // Beam's default 0 lets the runner choose; dfworker writes one shard per bundle whatever the
  // number (see docs/beam.md), so the value is checked, not used.
  ASSIGN_OR_RETURN(int64_t num_shards, ConfigInt(config, "num_shards", 0));
  if (num_shards < 0) return ConfigKeyError(config, "num_shards", fmt::format("must be 0 or more, got {}", num_shards));
  return std::unique_ptr<Stage>(new WriteTfRecord(config, o));
}

}  // namespace

void RegisterWriteTfRecord(StageRegistry& r) {
  (void)r.Register({"WriteToTFRecord", MakeWriteTfRecord,
                    {"file_path_prefix", "file_name_suffix", "num_shards", "compression_type"}, {"file_path_prefix"},
                    StageTraits{.is_sink = true, .serial = true}, CheckByMaking(MakeWriteTfRecord)});
}

}  // namespace dfw
