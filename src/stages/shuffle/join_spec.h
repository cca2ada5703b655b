// A Join's configuration, checked and resolved (dfw/stages/join.h): what Beam's yaml_join.py
// validates, and the shape of the query it writes, as data the partial sinks and the merge use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

// How input j joins the inputs before it (Beam's generate_join_type).
enum class JoinKind { kInner, kLeft, kRight, kFull };

struct JoinSpec {
  std::vector<std::string> inputs;  // the tags, in `input:` order (the query's table order)
  std::vector<JoinKind> kinds;      // [j], j >= 1 (kinds[0] unused)
  // key[i][c]: input i's column in key component c. Every input has one column per component, so
  // rows of every input are partitioned and grouped by the same key.
  std::vector<std::vector<std::string>> key;
  // refs[j]: the earlier inputs that step j's ON clause compares with input j. Within one key
  // group a combination matches input j's rows exactly when none of these is null-extended.
  std::vector<std::vector<int>> refs;
  struct Field {
    int input;
    std::string column;  // the input's field
    std::string alias;   // the output's name
  };
  std::vector<Field> fields;  // `fields`, in the order written (they come first in the output)
  std::vector<bool> star;     // [i]: every field of input i follows (`i.*`: inputs not in `fields`)
  int64_t partitions = 1;     // shuffle partitions (the fused stages' key)
};

Result<JoinSpec> ParseJoinSpec(const StageConfig& c);

// Appends row's key for input `input` (an encoded list of its key columns' values, then the window
// for a row outside the global window). A key with a missing or null column never equals another
// (SQL's NULL): it is encoded as a null Value (then the window), which the merge keeps alone.
// Floats with an integral value are keyed as ints (SQL compares 1 = 1.0 as equal).
void AppendJoinKey(const JoinSpec& spec, int input, const Row& row, std::string& out);
bool IsNullJoinKey(std::string_view key);

// The output columns over the inputs' field names (`schemas[i]`: every field input i's rows had,
// in first-seen order): `fields` first, then each starred input's fields, names made unique as
// Calcite does for `SELECT *` (name, name0, name1, ...). kInvalidArgument when a key column or a
// listed field is not among the fields of an input that had rows.
Result<std::vector<JoinSpec::Field>> JoinOutputColumns(const StageConfig& c, const JoinSpec& spec,
                                                       const std::vector<std::vector<std::string>>& schemas);

// The joined rows of one key group: rows[i] are input i's rows with that key. Left-deep, in
// `input:` order, with each step's kind; a null-extended input contributes nulls. The combinations
// go to `out` (cleared first) flat, n = inputs entries each: combination c is out[c*n .. c*n + n)
// (one vector for the group, not one per combination). `scratch` is working room, kept by the
// caller across groups so its capacity is reused.
void JoinGroup(const JoinSpec& spec, const std::vector<std::vector<const Row*>>& rows, std::vector<const Row*>& out,
               std::vector<const Row*>& scratch);

}  // namespace dfw::stages_internal
