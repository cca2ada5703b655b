// A JSON document of a file the user names (a bench result, a GPU-efficiency file), parsed with
// the parse error as `path:line:col: not JSON: reason`, and the checks every walk of such a
// document needs: a nesting bound (nlohmann parses without recursion, but copying, comparing,
// dumping and our own recursive readers recurse once per level) and integers taken without
// narrowing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "dfw/common/status.h"

namespace dfw {

// Deeper than this is refused (a real tokenizer.json or config.json nests under 15 levels).
inline constexpr int kMaxJsonDepth = 100;

// Parses `text` (read from `path`) and checks its depth (CheckJsonDepth): kInvalidArgument otherwise.
Result<nlohmann::json> ParseJsonText(const std::string& path, const std::string& text);

// kInvalidArgument "'ORIGIN' nests arrays/objects more than N levels deep" when `j` does; walked
// with an explicit stack, so any depth is measured without recursion. Call it right after a parse,
// before the value is copied, compared, dumped or walked.
Status CheckJsonDepth(const nlohmann::json& j, const std::string& origin, int max_depth = kMaxJsonDepth);

// The integer `v` if it lies in [lo, hi], else kInvalidArgument "WHAT must be an integer in
// [lo, hi], got V" with V as written. Unlike get<int32_t>(), a value past the type's range (2^40,
// or one above INT64_MAX) is refused, never truncated.
Result<int64_t> JsonIntIn(const nlohmann::json& v, int64_t lo, int64_t hi, const std::string& what);

}  // namespace dfw
