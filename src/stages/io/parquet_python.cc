#include "parquet_python.h"

#include <mutex>

#include <fmt/format.h>

#include "dfw/python/python.h"

namespace dfw::stages_io {

namespace {

// Rows come in as named tuples; pyarrow wants dicts (nested too), one schema for all rows. A
// Timestamp (any class of that name with `micros`, as dfworker's rows hand them over) is written as
// a UTC timestamp[us] column and a timestamp column is read back as Timestamps; bytes are binary.
constexpr const char* kParquetModule = R"(
import datetime
import pyarrow as pa
import pyarrow.parquet as pq

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MICRO = datetime.timedelta(microseconds=1)

class Timestamp(object):
    __slots__ = ('micros',)
    def __init__(self, micros):
        self.micros = micros

def _micros(dt):
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return (dt - _EPOCH) // _MICRO

def row_groups(path):
    return pq.ParquetFile(path).metadata.num_row_groups

def read_row_group(path, group):
    table = pq.ParquetFile(path).read_row_group(group)
    rows = table.to_pylist()
    times = [f.name for f in table.schema if pa.types.is_timestamp(f.type)]
    for r in rows if times else ():
        for n in times:
            if r[n] is not None:
                r[n] = Timestamp(_micros(r[n]))
    return rows

def _plain(v):
    if hasattr(v, '_asdict'):
        return {k: _plain(x) for k, x in v._asdict().items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if type(v).__name__ == 'Timestamp':
        return _EPOCH + datetime.timedelta(microseconds=v.micros)
    return v

def write(path, rows):
    dicts = [_plain(r) for r in rows]
    names = list(dict.fromkeys(k for d in dicts for k in d))
    table = pa.table({n: [d.get(n) for d in dicts] for n in names})
    pq.write_table(table, path)
    return table.num_rows
)";

}  // namespace

struct ParquetPython::Functions {
  std::unique_ptr<python::Function> row_groups, read_row_group, write;
};

ParquetPython::ParquetPython(std::unique_ptr<Functions> fns) : fns_(std::move(fns)) {}
ParquetPython::~ParquetPython() = default;

Result<std::shared_ptr<const ParquetPython>> ParquetPython::Get() {
  static std::mutex mu;
  static std::shared_ptr<const ParquetPython> made;
  static Status failed;
  std::lock_guard<std::mutex> lock(mu);
  if (made) return made;
  if (!failed.ok()) return failed;
  auto fns = std::make_unique<Functions>();
  Status st = python::EnsureStarted();
  auto make = [&](std::unique_ptr<python::Function>& into, const char* name) {
    if (!st.ok()) return;
    auto f = python::Function::FromModule(kParquetModule, name);
    if (f.ok()) into = std::move(*f);
    else st = f.status();
  };
  make(fns->row_groups, "row_groups");
  make(fns->read_row_group, "read_row_group");
  make(fns->write, "write");
  if (!st.ok()) {
    failed = Status(StatusCode::kUnavailable,
                    "Parquet is read and written through pyarrow (Apache Arrow's Parquet; Debian packages no Arrow "
                    "C++), which the worker's Python could not load: " + st.message() +
                    ". Install it in that environment (pip install pyarrow)");
    return failed;
  }
  made = std::make_shared<const ParquetPython>(std::move(fns));
  return made;
}

Result<int64_t> ParquetPython::RowGroups(const std::string& path) const {
  auto v = fns_->row_groups->Call({Value::String(path)});
  if (!v.ok()) return DataLoss(fmt::format("'{}': pyarrow cannot read it as Parquet: {}", path, v.status().message()));
  if (!v->is_int()) return Internal("pyarrow's num_row_groups is not an int");
  return v->as_int();
}

Result<std::vector<Row>> ParquetPython::ReadRowGroup(const std::string& path, int64_t group) const {
  auto rows = fns_->read_row_group->CallForRows({Value::String(path), Value::Int(group)});
  if (!rows.ok()) {
    return DataLoss(fmt::format("'{}': row group {}: {}", path, group, rows.status().message()));
  }
  return rows;
}

Status ParquetPython::Write(const std::string& path, const std::vector<Row>& rows) const {
  List items;
  items.reserve(rows.size());
  for (const Row& r : rows) items.push_back(Value::FromRow(r));
  auto n = fns_->write->Call({Value::String(path), Value::FromList(std::move(items))});
  if (!n.ok()) return InvalidArgument(fmt::format("pyarrow cannot write the rows as Parquet: {}", n.status().message()));
  return Status::OK();
}

}  // namespace dfw::stages_io
