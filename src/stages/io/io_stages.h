// Registrations of the file-format transforms in src/stages/io/ (called by RegisterBuiltinStages).
#pragma once

#include "dfw/stages/stage.h"

namespace dfw {

// Avro object container files through avro-c (read_avro.cc, write_avro.cc).
void RegisterReadAvro(StageRegistry& r);
void RegisterWriteAvro(StageRegistry& r);
// TFRecord files, CRC32C from ISA-L, gzip through zlib (read_tfrecord.cc, write_tfrecord.cc).
void RegisterReadTfRecord(StageRegistry& r);
void RegisterWriteTfRecord(StageRegistry& r);
// Parquet through pyarrow in the worker's Python (read_parquet.cc, write_parquet.cc).
void RegisterReadParquet(StageRegistry& r);
void RegisterWriteParquet(StageRegistry& r);
// Beam's MatchAll: file patterns from rows -> {path, size_in_bytes, last_updated_in_seconds} (match_all.cc).
void RegisterMatchAll(StageRegistry& r);

}  // namespace dfw
