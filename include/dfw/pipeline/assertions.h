// The global half of AssertEqual (dfw/stages/assert_equal.h): once every bundle of a stage has
// committed, each AssertEqual of the stage compares all the rows it received with its `elements`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/pipeline/spec.h"
#include "dfw/record/value.h"

namespace dfw {

// One AssertEqual's verdict: rows compared as multisets with Python's == after dropping null
// fields on both sides (Beam's AssertEqual).
struct AssertionResult {
  std::vector<Value> missing;     // expected, not received (with multiplicity, in `elements` order)
  std::vector<Value> unexpected;  // received, not expected (in the order read)
  bool passed() const { return missing.empty() && unexpected.empty(); }
};

// Compares `actual` (rows as row Values) with `expected` (the config's `elements`).
AssertionResult CompareAsserted(const ConfigNode& expected, std::vector<Value> actual);

// Every AssertEqual of `stage`: reads <committed_dir>/<name>/bundle-<id>.done for each bundle id and
// compares. kAborted (the run fails, exit 1) for the first that fails, naming it with its place and
// listing the missing and unexpected rows (at most 20 of each).
Status CheckAssertions(const PipelineSpec& stage, const std::string& committed_dir, const std::vector<int64_t>& bundle_ids);

}  // namespace dfw
