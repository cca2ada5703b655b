// ReadFromAvro: Avro object container files read through avro-c, each record a row (Beam's
// as_rows). Each file is one split: avro-c reads a container from its start and has no seek to a
// sync marker, so files are the unit of parallelism.
#include <avro.h>

#include <cerrno>
#include <cstdio>
#include <mutex>

#include <fmt/format.h>

#include "avro_memory.h"
#include "avro_rows.h"
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "file_match.h"
#include "io_stages.h"

namespace dfw {
namespace {

using stages_io::AvroMemoryBudget;

// What avro-c may hold at once for one reader: far above a real block (writers use 16-64 KiB, a
// few MiB at most), far below what a damaged length field can claim.
constexpr std::size_t kAvroReadBudget = 256u << 20;
// Records of a schema that encodes to zero bytes are bounded by nothing but the block's count.
constexpr int64_t kMaxZeroByteRecords = 1 << 20;

struct ReadAvroOptions {
  std::string path;  // glob of Avro container files
};

class AvroSplitReader final : public SplitReader {
 public:
  explicit AvroSplitReader(SourceSplit split) : split_(std::move(split)) {}
  ~AvroSplitReader() override { Close(); }

  Result<bool> Next(StageOutput& out, std::size_t max_rows) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return false;
    AvroMemoryBudget budget(kAvroReadBudget);
    stages_io::AvroAllocationScope scope(allocations_);
    if (reader_ == nullptr) {
      Status opened = Open();
      if (!opened.ok()) {
        done_ = true;
        RETURN_IF_ERROR(out.FailRaw(split_.path, opened.message()));
        return false;
      }
    }
    for (std::size_t n = 0; n < max_rows; ++n) {
      const int rc = avro_file_reader_read_value(reader_, &value_);
      if (rc == EOF) return Finish();
      if (rc != 0 || (zero_byte_schema_ && records_ >= kMaxZeroByteRecords)) {
        std::string why = rc != 0 ? avro_strerror()
                                  : fmt::format("more than {} records of a schema that takes no bytes", kMaxZeroByteRecords);
        Finish();
        RETURN_IF_ERROR(out.FailRaw(split_.path, fmt::format("'{}': Avro record {}: {}", split_.path, records_ + 1, why)));
        return false;
      }
      ++records_;
      Value v;
      Status converted = stages_io::AvroToValue(&value_, v);
      if (!converted.ok() || !v.is_row()) {
        RETURN_IF_ERROR(out.FailRaw(split_.path, fmt::format("'{}': Avro record {}: {}", split_.path, records_,
                                                             converted.ok() ? "not a record" : converted.message())));
        continue;
      }
      out.Emit(Row(v.as_row()));
    }
    return true;
  }

 private:
  Status Open() {
    if (avro_file_reader(split_.path.c_str(), &reader_) != 0) {
      reader_ = nullptr;
      allocations_.FreeAll();  // what the failed open left behind (see AvroAllocations)
      return DataLoss(fmt::format("'{}': cannot read it as an Avro container file: {}", split_.path, avro_strerror()));
    }
    avro_schema_t schema = avro_file_reader_get_writer_schema(reader_);
    RETURN_IF_ERROR(stages_io::CheckReadableSchema(schema).WithContext("'" + split_.path + "'"));
    zero_byte_schema_ = stages_io::CanEncodeToZeroBytes(schema);
    iface_ = avro_generic_class_from_schema(schema);
    if (iface_ == nullptr || avro_generic_value_new(iface_, &value_) != 0) {
      return DataLoss(fmt::format("'{}': cannot hold its Avro schema: {}", split_.path, avro_strerror()));
    }
    has_value_ = true;
    return Status::OK();
  }

  bool Finish() {
    done_ = true;
    Close();
    return false;
  }

  void Close() {
    stages_io::AvroAllocationScope scope(allocations_);
    if (has_value_) avro_value_decref(&value_);
    has_value_ = false;
    if (iface_ != nullptr) avro_value_iface_decref(iface_);
    iface_ = nullptr;
    if (reader_ != nullptr) avro_file_reader_close(reader_);
    reader_ = nullptr;
    allocations_.FreeAll();  // what avro-c did not give back (see AvroAllocations)
  }

  SourceSplit split_;
  std::mutex mu_;
  stages_io::AvroAllocations allocations_;  // every avro-c allocation of this reader
  avro_file_reader_t reader_ = nullptr;
  avro_value_iface_t* iface_ = nullptr;
  avro_value_t value_{};
  bool has_value_ = false;
  bool done_ = false;
  bool zero_byte_schema_ = false;
  int64_t records_ = 0;
};

class ReadAvro final : public Stage {
 public:
  ReadAvro(StageConfig config, ReadAvroOptions options) : config_(std::move(config)), options_(std::move(options)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("ReadFromAvro has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t /*target_bytes*/) override {
    return stages_io::WholeFileSplits(config_, options_.path);
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    return std::unique_ptr<SplitReader>(new AvroSplitReader(split));
  }

 private:
  StageConfig config_;
  ReadAvroOptions options_;
};

Result<std::unique_ptr<Stage>> MakeReadAvro(const StageConfig& config) {
  ReadAvroOptions o;
  ASSIGN_OR_RETURN(o.path, ConfigString(config, "path"));
  RETURN_IF_ERROR(CheckLocalPath(config, "path", o.path));
  o.path = ResolveConfigPath(config, o.path);
  return std::unique_ptr<Stage>(new ReadAvro(config, std::move(o)));
}

}  // namespace

void RegisterReadAvro(StageRegistry& r) {
  (void)r.Register({"ReadFromAvro", MakeReadAvro, {"path"}, {"path"},
                    StageTraits{.is_source = true, .can_fail_per_record = true}, CheckByMaking(MakeReadAvro)});
}

}  // namespace dfw
