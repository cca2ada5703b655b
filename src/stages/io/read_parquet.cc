// ReadFromParquet: each row of Parquet files a row, read by pyarrow (parquet_python.h says why)
// one row group at a time. A file is one split.
#include <deque>
#include <mutex>

#include <fmt/format.h>

#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "file_match.h"
#include "io_stages.h"
#include "parquet_python.h"

namespace dfw {
namespace {

struct ReadParquetOptions {
  std::string path;  // glob of Parquet files
};

class ParquetSplitReader final : public SplitReader {
 public:
  ParquetSplitReader(SourceSplit split, std::shared_ptr<const stages_io::ParquetPython> py)
      : split_(std::move(split)), py_(std::move(py)) {}

  Result<bool> Next(StageOutput& out, std::size_t max_rows) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (groups_ < 0) {
      auto n = py_->RowGroups(split_.path);
      if (!n.ok()) return Stop(out, n.status().message());
      groups_ = *n;
    }
    while (pending_.empty() && next_group_ < groups_) {
      auto rows = py_->ReadRowGroup(split_.path, next_group_++);
      if (!rows.ok()) return Stop(out, rows.status().message());
      for (Row& r : *rows) pending_.push_back(std::move(r));
    }
    for (std::size_t n = 0; n < max_rows && !pending_.empty(); ++n) {
      out.Emit(std::move(pending_.front()));
      pending_.pop_front();
    }
    return !pending_.empty() || next_group_ < groups_;
  }

 private:
  Result<bool> Stop(StageOutput& out, const std::string& why) {
    groups_ = 0;
    next_group_ = 0;
    pending_.clear();
    RETURN_IF_ERROR(out.FailRaw(split_.path, why));
    return false;
  }

  SourceSplit split_;
  std::shared_ptr<const stages_io::ParquetPython> py_;
  std::mutex mu_;
  int64_t groups_ = -1;  // unknown until the first Next
  int64_t next_group_ = 0;
  std::deque<Row> pending_;
};

class ReadParquet final : public Stage {
 public:
  ReadParquet(StageConfig config, ReadParquetOptions options) : config_(std::move(config)), options_(std::move(options)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("ReadFromParquet has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t /*target_bytes*/) override {
    return stages_io::WholeFileSplits(config_, options_.path);
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    auto py = stages_io::ParquetPython::Get();
    if (!py.ok()) return py.status().WithContext(config_.Where());
    return std::unique_ptr<SplitReader>(new ParquetSplitReader(split, *py));
  }

 private:
  StageConfig config_;
  ReadParquetOptions options_;
};

Result<std::unique_ptr<Stage>> MakeReadParquet(const StageConfig& config) {
  ReadParquetOptions o;
  ASSIGN_OR_RETURN(o.path, ConfigString(config, "path"));
  RETURN_IF_ERROR(CheckLocalPath(config, "path", o.path));
  o.path = ResolveConfigPath(config, o.path);
  return std::unique_ptr<Stage>(new ReadParquet(config, std::move(o)));
}

}  // namespace

void RegisterReadParquet(StageRegistry& r) {
  (void)r.Register({"ReadFromParquet", MakeReadParquet, {"path"}, {"path"},
                    StageTraits{.is_source = true, .can_fail_per_record = true}, CheckByMaking(MakeReadParquet)});
}

}  // namespace dfw
