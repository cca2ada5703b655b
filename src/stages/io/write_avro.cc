// WriteToAvro: each bundle's rows as one Avro object container file (deflate blocks, Beam's default
// codec), written through avro-c. As Beam derives the file's schema from the PCollection's schema,
// the schema here is derived from the bundle's rows (see avro_rows.h), so a bundle is buffered
// until FinishBundle: a bundle is bounded by the planner's bundle size.
#include <avro.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "avro_rows.h"
#include "dfw/stages/config.h"
#include "dfw/stages/sink.h"
#include "io_stages.h"
#include "stages/sink_file.h"

namespace dfw {
namespace {

// Beam's record name is a generated schema id; any valid Avro name reads back the same.
constexpr const char* kAvroRecordName = "BeamRow";

class WriteAvro final : public Stage {
 public:
  explicit WriteAvro(StageConfig config) : config_(std::move(config)) {}

  Status StartBundle(const BundleContext& bundle) override {
    rows_.clear();
    schema_ = stages_io::AvroSchemaBuilder();
    rebuild_schema_ = false;
    return file_.Open(bundle, config_.name).WithContext(config_.Where());
  }

  Status Process(RowBatch& in, StageOutput& out) override {
    for (Row& row : in) {
      Status added = schema_.Add(row);
      if (!added.ok()) {
        rebuild_schema_ = true;  // the failed row may have left fields behind in the schema
        RETURN_IF_ERROR(out.Fail(row, added.message()));
        continue;
      }
      rows_.push_back(std::move(row));
    }
    return Status::OK();
  }

  Status FinishBundle(StageOutput&) override {
    // A bundle without rows has no schema to write; its file stays empty (readers skip empty
    // files, as Beam's file sources do).
    if (!rows_.empty()) RETURN_IF_ERROR(WriteContainer().WithContext(config_.Where()));
    rows_.clear();
    return file_.Commit().WithContext(config_.Where());
  }

 private:
  Status WriteContainer() {
    if (rebuild_schema_) {
      schema_ = stages_io::AvroSchemaBuilder();
      for (const Row& row : rows_) RETURN_IF_ERROR(schema_.Add(row));
    }
    const std::string json = schema_.ToJson(kAvroRecordName);
    avro_schema_t schema = nullptr;
    if (avro_schema_from_json_length(json.data(), json.size(), &schema) != 0) {
      return InvalidArgument(fmt::format("the rows' fields make no valid Avro schema ({}); Avro names must match "
                                         "[A-Za-z_][A-Za-z0-9_]*. Schema: {}", avro_strerror(), json));
    }
    avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
    char* buf = nullptr;
    size_t size = 0;
    FILE* mem = open_memstream(&buf, &size);
    avro_file_writer_t writer = nullptr;
    avro_value_t value{};
    bool has_value = false;
    Status st;
    if (iface == nullptr || mem == nullptr) {
      st = Internal(fmt::format("cannot set up the Avro writer: {}", avro_strerror()));
    } else if (avro_file_writer_create_with_codec_fp(mem, "WriteToAvro", /*should_close=*/1, schema, &writer, "deflate",
                                                     0) != 0) {
      writer = nullptr;
      st = Internal(fmt::format("cannot start the Avro container: {}", avro_strerror()));
    } else if (avro_generic_value_new(iface, &value) != 0) {
      st = Internal(fmt::format("cannot make an Avro value: {}", avro_strerror()));
    } else {
      has_value = true;
      for (const Row& row : rows_) {
        st = stages_io::RowToAvro(schema_.root(), row, &value);
        if (st.ok() && avro_file_writer_append_value(writer, &value) != 0) {
          st = Internal(fmt::format("cannot append an Avro record: {}", avro_strerror()));
        }
        if (!st.ok()) break;
      }
    }
    if (has_value) avro_value_decref(&value);
    if (writer != nullptr) {
      // Closing flushes the last block and closes the memory stream (should_close).
      if (avro_file_writer_close(writer) != 0 && st.ok()) st = Internal(fmt::format("cannot finish the Avro container: {}", avro_strerror()));
      mem = nullptr;
    }
    if (mem != nullptr) std::fclose(mem);
    if (st.ok()) st = file_.Write(std::string_view(buf, size));
    std::free(buf);
    if (iface != nullptr) avro_value_iface_decref(iface);
    avro_schema_decref(schema);
    return st;
  }

  StageConfig config_;
  stages_internal::BundleFile file_;
  stages_io::AvroSchemaBuilder schema_;
  bool rebuild_schema_ = false;
  RowBatch rows_;
};

Result<std::unique_ptr<Stage>> MakeWriteAvro(const StageConfig& config) {
  RETURN_IF_ERROR(SinkNaming(config).status());
  // Checked, not used: dfworker writes one shard per bundle (docs/beam.md, "File formats").
  ASSIGN_OR_RETURN(int64_t num_shards, ConfigInt(config, "num_shards", 0));
  if (num_shards < 0) return ConfigKeyError(config, "num_shards", fmt::format("must be 0 or more, got {}", num_shards));
  return std::unique_ptr<Stage>(new WriteAvro(config));
}

}  // namespace

void RegisterWriteAvro(StageRegistry& r) {
  (void)r.Register({"WriteToAvro", MakeWriteAvro, {"path", "file_name_suffix", "num_shards"}, {"path"},
                    StageTraits{.is_sink = true, .serial = true}, CheckByMaking(MakeWriteAvro)});
}

}  // namespace dfw
