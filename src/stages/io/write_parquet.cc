// WriteToParquet: each bundle's rows as one Parquet file, written by pyarrow (parquet_python.h says
// why), its schema inferred from the bundle's rows as Beam's comes from the PCollection's. The
// bundle is buffered until FinishBundle (bounded by the planner's bundle size).
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "dfw/stages/config.h"
#include "dfw/stages/sink.h"
#include "io_stages.h"
#include "parquet_python.h"
#include "stages/file_source.h"
#include "stages/sink_file.h"

namespace dfw {
namespace {

class WriteParquet final : public Stage {
 public:
  explicit WriteParquet(StageConfig config) : config_(std::move(config)) {}

  Status StartBundle(const BundleContext& bundle) override {
    rows_.clear();
    scratch_ = StagingTmpPath(bundle.staging_dir, config_.name, bundle.bundle_id) + ".parquet";
    return file_.Open(bundle, config_.name).WithContext(config_.Where());
  }

  Status Process(RowBatch& in, StageOutput&) override {
    for (Row& row : in) rows_.push_back(std::move(row));
    return Status::OK();
  }

  Status FinishBundle(StageOutput&) override {
    // A bundle without rows has no schema: its file stays empty (readers skip empty files).
    if (!rows_.empty()) RETURN_IF_ERROR(WriteRows().WithContext(config_.Where()));
    rows_.clear();
    return file_.Commit().WithContext(config_.Where());
  }

 private:
  Status WriteRows() {
    ASSIGN_OR_RETURN(auto py, stages_io::ParquetPython::Get());
    // pyarrow writes a file of its own beside the bundle's; its bytes then go through the bundle
    // file, which commits them as every sink's are.
    Status st = py->Write(scratch_, rows_);
    if (st.ok()) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(scratch_, ec);
      if (ec) {
        st = IoError(fmt::format("'{}': {}", scratch_, ec.message()));
      } else {
        auto bytes = stages_internal::ReadRange(SourceSplit{scratch_, 0, static_cast<int64_t>(size), 1}, 0);
        st = bytes.ok() ? file_.Write(*bytes) : bytes.status();
      }
    }
    std::remove(scratch_.c_str());
    return st;
  }

  StageConfig config_;
  stages_internal::BundleFile file_;
  std::string scratch_;
  RowBatch rows_;
};

Result<std::unique_ptr<Stage>> MakeWriteParquet(const StageConfig& config) {
  RETURN_IF_ERROR(SinkNaming(config).status());
  // Checked, not used: dfworker writes one shard per bundle (docs/beam.md, "File formats").
  ASSIGN_OR_RETURN(int64_t num_shards, ConfigInt(config, "num_shards", 0));
  if (num_shards < 0) return ConfigKeyError(config, "num_shards", fmt::format("must be 0 or more, got {}", num_shards));
  return std::unique_ptr<Stage>(new WriteParquet(config));
}

}  // namespace

void RegisterWriteParquet(StageRegistry& r) {
  (void)r.Register({"WriteToParquet", MakeWriteParquet, {"path", "file_name_suffix", "num_shards"}, {"path"},
                    StageTraits{.is_sink = true, .serial = true}, CheckByMaking(MakeWriteParquet)});
}

}  // namespace dfw
