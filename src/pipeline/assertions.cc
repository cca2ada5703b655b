// AssertEqual's global check (dfw/pipeline/assertions.h).
#include "dfw/pipeline/assertions.h"

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "dfw/common/file.h"
#include "dfw/pipeline/pipeline_tests.h"
#include "dfw/stages/assert_equal.h"
#include "dfw/stages/config.h"
#include "dfw/stages/sink.h"

namespace dfw {
namespace {

constexpr std::size_t kShownRows = 20;
constexpr std::size_t kMaxAssertedBytes = std::size_t{1} << 30;  // one bundle's rows; an assertion is for test-sized data

std::string ListRows(const std::vector<Value>& rows) {
  std::string out;
  for (std::size_t i = 0; i < rows.size() && i < kShownRows; ++i) out += "\n    " + rows[i].ToJson();
  if (rows.size() > kShownRows) out += fmt::format("\n    ... and {} more", rows.size() - kShownRows);
  return out;
}

}  // namespace

AssertionResult CompareAsserted(const ConfigNode& expected, std::vector<Value> actual) {
  AssertionResult r;
  std::vector<Value> want;
  for (const ConfigNode& e : expected.items()) want.push_back(DropNullFields(ConfigToValue(e)));
  std::map<std::string, std::size_t> left;  // key -> expected rows not yet matched
  for (const Value& v : want) ++left[PyEqualityKey(v)];
  for (Value& v : actual) {
    Value row = DropNullFields(std::move(v));
    auto it = left.find(PyEqualityKey(row));
    if (it != left.end() && it->second > 0) {
      --it->second;
    } else {
      r.unexpected.push_back(std::move(row));
    }
  }
  for (Value& v : want) {  // what is left, in the order written
    std::size_t& n = left[PyEqualityKey(v)];
    if (n > 0) {
      --n;
      r.missing.push_back(std::move(v));
    }
  }
  return r;
}

Status CheckAssertions(const PipelineSpec& stage, const std::string& committed_dir, const std::vector<int64_t>& bundle_ids) {
  for (const TransformSpec& t : stage.transforms) {
    if (t.config.type != kAssertEqualType) continue;
    std::vector<Value> rows;
    for (int64_t id : bundle_ids) {
      const std::string path = StagingDonePath(committed_dir, t.config.name, id);
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) continue;  // a bundle that never reached this transform
      ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path, kMaxAssertedBytes));
      RETURN_IF_ERROR(DecodeAssertedRows(bytes, rows).WithContext(t.config.Where()));
    }
    const std::size_t received = rows.size();
    AssertionResult r = CompareAsserted(t.config.config["elements"], std::move(rows));
    if (r.passed()) continue;
    std::string msg = fmt::format("{}: assertion failed: {} row{} received, {} expected; {} missing, {} unexpected",
                                  t.config.Where(), received, received == 1 ? "" : "s", t.config.config["elements"].size(),
                                  r.missing.size(), r.unexpected.size());
    if (!r.missing.empty()) msg += "\n  missing:" + ListRows(r.missing);
    if (!r.unexpected.empty()) msg += "\n  unexpected:" + ListRows(r.unexpected);
    return Aborted(msg);
  }
  return Status::OK();
}

}  // namespace dfw
