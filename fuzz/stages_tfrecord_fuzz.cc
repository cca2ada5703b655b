// Reads arbitrary bytes as a TFRecord file through ReadFromTFRecord; the first byte picks the
// compression (UNCOMPRESSED, GZIP, DEFLATE through zlib). A damaged frame must become an error row
// with its reason.
#include "file_reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kModes[] = {"UNCOMPRESSED", "GZIP", "DEFLATE"};
  const std::string path = dfw::fuzzing::FuzzFile("tfrecord", "in.tfrecord");
  return dfw::fuzzing::ReadThroughStage(path, data + 1, size - 1, "ReadFromTFRecord",
                                        "{file_pattern: '" + path + "', compression_type: " + kModes[data[0] % 3] + "}",
                                        false);
}
