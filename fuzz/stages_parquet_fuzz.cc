// Reads arbitrary bytes as a Parquet file through ReadFromParquet (pyarrow in the embedded
// CPython). Where the worker's Python has no pyarrow every input returns at once (the reader's
// error is the setup's, not the file's); a damaged file must become an error row.
#include "file_reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = dfw::fuzzing::FuzzFile("parquet", "in.parquet");
  return dfw::fuzzing::ReadThroughStage(path, data, size, "ReadFromParquet", "{path: '" + path + "'}", true);
}
