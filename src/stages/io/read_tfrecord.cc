// ReadFromTFRecord: each record of TFRecord files as a row {record: <bytes>} (Beam's YAML
// ReadFromTFRecord; a bytes value, as Beam's is). Beam's TFRecord
// source does not split files; neither does this one.
#include <mutex>

#include <fmt/format.h>

#include "compressed_stream.h"
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "file_match.h"
#include "io_stages.h"
#include "tfrecord_format.h"

namespace dfw {
namespace {

using stages_io::Compression;

struct ReadTfRecordOptions {
  std::string file_pattern;                // glob of TFRecord files
  std::optional<Compression> compression;  // nullopt = AUTO: by each file's extension
  bool validate = true;                    // a pattern matching no file is an error (else: no rows)
};

class TfRecordSplitReader final : public SplitReader {
 public:
  TfRecordSplitReader(SourceSplit split, std::optional<Compression> compression)
      : split_(std::move(split)), compression_(compression) {}

  Result<bool> Next(StageOutput& out, std::size_t max_rows) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return false;
    if (reader_ == nullptr) {
      const Compression c = compression_.value_or(stages_io::CompressionFromPath(split_.path));
      auto in = stages_io::CompressedReader::Open(split_.path, c);
      if (!in.ok()) return Stop(out, in.status().message());
      reader_ = std::make_unique<stages_io::TfRecordReader>(std::move(*in), split_.path,
                                                             c == Compression::kUncompressed ? split_.end : -1);
    }
    std::string bytes, data_error;
    for (std::size_t n = 0; n < max_rows; ++n) {
      auto more = reader_->Next(bytes, &data_error);
      if (!more.ok()) return Stop(out, more.status().message());
      if (!*more) {
        done_ = true;
        reader_.reset();
        return false;
      }
      if (!data_error.empty()) {
        RETURN_IF_ERROR(out.FailRaw(bytes, data_error));
        continue;
      }
      Row row;
      row.AppendNull("record") = Value::Bytes(bytes);
      out.Emit(std::move(row));
    }
    return true;
  }

 private:
  // A file that cannot be read on: its error row (or the run's error), and nothing more from it.
  Result<bool> Stop(StageOutput& out, const std::string& why) {
    done_ = true;
    reader_.reset();
    RETURN_IF_ERROR(out.FailRaw(split_.path, why));
    return false;
  }

  SourceSplit split_;
  std::optional<Compression> compression_;
  std::mutex mu_;
  std::unique_ptr<stages_io::TfRecordReader> reader_;
  bool done_ = false;
};

class ReadTfRecord final : public Stage {
 public:
  ReadTfRecord(StageConfig config, ReadTfRecordOptions options) : config_(std::move(config)), options_(std::move(options)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("ReadFromTFRecord has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t /*target_bytes*/) override {
    auto splits = stages_io::WholeFileSplits(config_, options_.file_pattern);
    if (!splits.ok() && splits.status().code() == StatusCode::kNotFound && !options_.validate) {
      return std::vector<SourceSplit>{};
    }
    return splits;
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    return std::unique_ptr<SplitReader>(new TfRecordSplitReader(split, options_.compression));
  }

 private:
  StageConfig config_;
  ReadTfRecordOptions options_;
};

Result<std::unique_ptr<Stage>> MakeReadTfRecord(const StageConfig& config) {
  ReadTfRecordOptions o;
  ASSIGN_OR_RETURN(o.file_pattern, ConfigString(config, "file_pattern"));
  RETURN_IF_ERROR(CheckLocalPath(config, "file_pattern", o.file_pattern));
  o.file_pattern = ResolveConfigPath(config, o.file_pattern);
  ASSIGN_OR_RETURN(std::string compression, ConfigString(config, "compression_type", std::string("AUTO")));
  if (compression != "AUTO") {
    auto c = stages_io::ParseCompression(compression);
    if (!c.ok()) return ConfigKeyError(config, "compression_type", c.status().message());
    o.compression = *c;
  }
  ASSIGN_OR_RETURN(o.validate, ConfigBool(config, "validate", true));
  return std::unique_ptr<Stage>(new ReadTfRecord(config, std::move(o)));
}

}  // namespace

void RegisterReadTfRecord(StageRegistry& r) {
  (void)r.Register({"ReadFromTFRecord", MakeReadTfRecord, {"file_pattern", "compression_type", "validate"},
                    {"file_pattern"}, StageTraits{.is_source = true, .can_fail_per_record = true},
                    CheckByMaking(MakeReadTfRecord)});
}

}  // namespace dfw
