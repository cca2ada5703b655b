// Parquet through Apache Arrow's own implementation, pyarrow, in the worker's embedded CPython
// (dfw/python/python.h). Debian 12 packages no Apache Arrow C++ library, so the real Parquet
// reader and writer dfworker can use is the one in the Python environment, as Beam's own
// ReadFromParquet/WriteToParquet use pyarrow. pyarrow must be installed there (pip install pyarrow).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw::stages_io {

// The Python functions both stages call, compiled once per process on first use. Thread-safe.
class ParquetPython {
 public:
  // kUnavailable naming pyarrow (and how to install it) when the interpreter or pyarrow is missing.
  static Result<std::shared_ptr<const ParquetPython>> Get();

  // The number of row groups of a Parquet file (kDataLoss for a file pyarrow cannot open).
  Result<int64_t> RowGroups(const std::string& path) const;
  // The rows of one row group, as pyarrow's to_pylist() gives them.
  Result<std::vector<Row>> ReadRowGroup(const std::string& path, int64_t group) const;
  // Writes `rows` as one Parquet file at `path` (pyarrow infers the schema from the values, with
  // the union of the rows' fields; a field a row lacks is null there).
  Status Write(const std::string& path, const std::vector<Row>& rows) const;

  struct Functions;
  explicit ParquetPython(std::unique_ptr<Functions> fns);
  ~ParquetPython();

 private:
  std::unique_ptr<Functions> fns_;
};

}  // namespace dfw::stages_io
