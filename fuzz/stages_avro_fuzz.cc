// Reads arbitrary bytes as an Avro container file through ReadFromAvro (avro-c under the reader's
// memory budget): a damaged file must become an error row, never a read past its end or an
// allocation a length field asked for.
#include "file_reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = dfw::fuzzing::FuzzFile("avro", "in.avro");
  return dfw::fuzzing::ReadThroughStage(path, data, size, "ReadFromAvro", "{path: '" + path + "'}", false);
}
