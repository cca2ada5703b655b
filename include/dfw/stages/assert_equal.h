// Beam YAML's AssertEqual (apache_beam/yaml/yaml_testing-era `AssertEqual` in yaml_provider.py):
// the rows reaching it must equal `elements` as a multiset, each row compared as a dict with its
// null fields dropped (on both sides). dfworker runs N SDK processes over bundles, so the check is
// global: the stage is a sink that commits the rows of each bundle it sees
// (<staging>/<name>/bundle-<id>.done, as any sink), and the stage's finalize reads every committed
// bundle and compares once (dfw/pipeline/assertions.h). A failed assertion fails the run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw {

class StageRegistry;

inline constexpr const char* kAssertEqualType = "AssertEqual";

// Registers AssertEqual (RegisterBuiltinStages calls it).
void RegisterAssertEqual(StageRegistry& r);
// The other transforms Beam's YAML tests check with it: Reshuffle (rows pass through,
// src/stages/reshuffle.cc) and ValidateWithSchema (a JSON Schema, src/stages/validate_with_schema.cc).
void RegisterReshuffle(StageRegistry& r);
void RegisterValidateWithSchema(StageRegistry& r);

// Appends the rows of one committed AssertEqual bundle file to `rows` (kDataLoss on a corrupt file).
Status DecodeAssertedRows(std::string_view file_bytes, std::vector<Value>& rows);

// A row as AssertEqual compares it: a row Value without its null fields; other values as they are.
Value DropNullFields(Value v);

}  // namespace dfw
