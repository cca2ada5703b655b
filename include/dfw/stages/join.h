// Beam YAML's Join (`type`, `equalities`, `fields`; apache_beam/yaml/yaml_join.py) run natively on
// the shuffle, as a CoGroupByKey between fused stages (dfw/pipeline/fused_stages.h).
//
// Beam turns a Join into one SQL query, `SELECT <fields> FROM t0 <T1> JOIN t1 ON ... <T2> JOIN t2
// ON ...` (left-deep, in `input:` order), and runs it on Beam SQL (Calcite, Java). dfworker runs
// the same query's semantics without SQL. In the stage that feeds it, each input is a partial sink,
// `Join/partial`, writing its rows partitioned by a hash of the join key to a shuffle file committed
// with the bundle (exactly once, like any sink's output), plus the input's field names. When that
// stage has finished, the next one leases the partitions as its bundles: a `Join/merge` source
// reads partition p of every input, groups the rows by key and evaluates the joins of each group.
//
// One shuffle serves every input, so every input must be keyed the same way: the equalities'
// columns form key components (columns made equal, transitively) and each component must name
// exactly one column of every input (`equalities: id`, or each `{a: x, b: y}` of a two-input
// join, always do). A Join whose equalities chain different keys across three inputs is refused
// with a message saying to write it as two Joins.
#pragma once

#include <string>
#include <string_view>

#include "dfw/common/status.h"
#include "dfw/stages/stage.h"

namespace dfw {

class StageRegistry;

inline constexpr const char* kJoinType = "Join";
inline constexpr const char* kJoinPartialType = "Join/partial";  // internal (fused stages only)
inline constexpr const char* kJoinMergeType = "Join/merge";      // internal (fused stages only)
// The fused stages tell a partial sink which input it writes (0-based, in `input:` order) and the
// merge each input's committed shuffle folder in StageConfig::shuffle (dfw/stages/stage.h).

// A partial sink's shuffle folder under the committed dir: <join name>/<input tag>.
std::string JoinShuffleName(std::string_view join_name, std::string_view tag);
// The same for a Join/partial transform's config (its name, input_names and join_input);
// kInvalidArgument when they do not name an input.
Result<std::string> JoinPartialShuffleName(const StageConfig& partial);

// Registers Join and its two internal types (RegisterBuiltinStages calls it).
void RegisterJoin(StageRegistry& r);

}  // namespace dfw
