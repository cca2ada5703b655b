// AssignTimestamps and WindowInto, and the window functions they and Combine share.
#include "windowing.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "dfw/stages/config.h"
#include "expression_config.h"

namespace dfw {
namespace stages_internal {
namespace {

// "10s", "250ms", "5m", "1h", "1d", or a number of seconds; microseconds, > 0.
Result<int64_t> ParseDuration(const StageConfig& c, const YAML::Node& n, const std::string& what) {
  auto bad = [&] {
    return InvalidArgument(NodeLocation(c, n) + ": windowing." + what +
                           " must be a duration: a number of seconds or <n>ms, <n>s, <n>m, <n>h, <n>d (e.g. 10s)");
  };
  if (!n.IsDefined() || !n.IsScalar()) return bad();
  std::string text = n.Scalar();
  double unit = 1e6;
  const std::pair<const char*, double> kUnits[] = {{"ms", 1e3}, {"s", 1e6}, {"m", 60e6}, {"h", 3600e6}, {"d", 86400e6}};
  for (const auto& [suffix, us] : kUnits) {
    const std::size_t len = std::char_traits<char>::length(suffix);
    if (text.size() > len && text.compare(text.size() - len, len, suffix) == 0) {  // ("ms" is tried before "s")
      text.resize(text.size() - len);
      unit = us;
      break;
    }
  }
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || errno != 0 || !std::isfinite(x)) return bad();
  const double us = x * unit;
  if (us < 1 || us > 1e18) return bad();
  return static_cast<int64_t>(std::llround(us));
}

}  // namespace

Result<WindowFn> ParseWindowing(const StageConfig& c, const YAML::Node& w) {
  const std::string where = NodeLocation(c, w);
  if (!w.IsDefined() || w.IsNull()) return InvalidArgument(c.Where() + ": needs 'windowing:' ({type: fixed, size: 10s})");
  if (!w.IsMap()) return InvalidArgument(where + ": windowing must be a mapping such as {type: fixed, size: 10s}");
  const YAML::Node type = w["type"];
  if (!type.IsDefined() || !type.IsScalar()) return InvalidArgument(where + ": windowing needs 'type' (fixed or global)");
  const std::string t = type.Scalar();
  auto only = [&](std::initializer_list<const char*> keys) -> Status {
    for (const auto& kv : w) {
      const std::string k = kv.first.Scalar();
      if (std::find_if(keys.begin(), keys.end(), [&](const char* a) { return k == a; }) == keys.end()) {
        return InvalidArgument(NodeLocation(c, kv.first) + ": windowing type '" + t + "' takes no '" + k + "'");
      }
    }
    return Status::OK();
  };
  WindowFn fn;
  if (t == "global") {
    RETURN_IF_ERROR(only({"type"}));
    return fn;
  }
  if (t == "fixed") {
    RETURN_IF_ERROR(only({"type", "size", "offset"}));
    fn.kind = WindowFn::Kind::kFixed;
    ASSIGN_OR_RETURN(fn.size_us, ParseDuration(c, w["size"], "size"));
    if (w["offset"].IsDefined()) {
      ASSIGN_OR_RETURN(fn.offset_us, ParseDuration(c, w["offset"], "offset"));
      fn.offset_us %= fn.size_us;
    }
    return fn;
  }
  if (t == "sliding" || t == "sessions") {
    return Status(StatusCode::kUnimplemented,
                  NodeLocation(c, type) + ": windowing type '" + t +
                      "' is valid Beam but dfworker does not run it (an element in several windows, or windows "
                      "merged by gaps); supported in batch: fixed, global");
  }
  return InvalidArgument(NodeLocation(c, type) + ": unknown windowing type '" + t + "'; allowed: fixed, global");
}

Status AssignWindow(const WindowFn& fn, Row& row) {
  if (fn.kind == WindowFn::Kind::kGlobal) {
    row.set_window(INT64_MIN, INT64_MAX);
    return Status::OK();
  }
  const int64_t ts = row.timestamp_us();
  if (ts == Row::kNoTimestamp) {
    return InvalidArgument("the row has no event timestamp for its fixed window: add an AssignTimestamps before");
  }
  // Window start: the largest offset + k * size <= ts (floor, also for negative timestamps).
  int64_t rel = ts - fn.offset_us;
  int64_t k = rel / fn.size_us;
  if (rel % fn.size_us < 0) --k;
  const int64_t start = fn.offset_us + k * fn.size_us;
  row.set_window(start, start + fn.size_us);
  return Status::OK();
}

}  // namespace stages_internal

namespace {

using stages_internal::WindowFn;

// AssignTimestamps: the event timestamp from `timestamp` (a field or, with language: python, an
// expression), in seconds since the epoch.
class AssignTimestamps final : public Stage {
 public:
  explicit AssignTimestamps(std::unique_ptr<CompiledExpression> expr) : expr_(std::move(expr)) {}

  Status Process(RowBatch& in, StageOutput& out) override {
    for (Row& row : in) {
      Result<Value> v = expr_->Evaluate(row);
      if (!v.ok()) {
        RETURN_IF_ERROR(out.Fail(row, "timestamp '" + expr_->source() + "': " + v.status().message()));
        continue;
      }
      std::optional<double> seconds = v->AsNumber();
      const double us = seconds ? *seconds * 1e6 : 0;
      if (!seconds || !std::isfinite(us) || std::fabs(us) > 9e18) {
        RETURN_IF_ERROR(out.Fail(row, fmt::format("timestamp '{}' is {} ({}): it must be seconds since the epoch, a number",
                                                  expr_->source(), v->TypeName(), v->ToJson())));
        continue;
      }
      row.set_timestamp_us(static_cast<int64_t>(std::llround(us)));
      out.Emit(std::move(row));
    }
    return Status::OK();
  }

 private:
  std::unique_ptr<CompiledExpression> expr_;
};

Result<std::unique_ptr<Stage>> MakeAssignTimestamps(const StageConfig& c) {
  ASSIGN_OR_RETURN(ExprLanguage language, stages_internal::ConfigLanguage(c));
  if (!ConfigHas(c, "timestamp")) return ConfigKeyError(c, "timestamp", "is required: the field (or expression) holding the event time");
  ASSIGN_OR_RETURN(stages_internal::ConfiguredExpression e,
                   stages_internal::CompileConfigExpression(c, c.config["timestamp"], "timestamp", language));
  return std::unique_ptr<Stage>(new AssignTimestamps(std::move(e.expr)));
}

// WindowInto: each row's window from its timestamp.
class WindowInto final : public Stage {
 public:
  explicit WindowInto(WindowFn fn) : fn_(fn) {}
  Status Process(RowBatch& in, StageOutput& out) override {
    for (Row& row : in) {
      Status s = stages_internal::AssignWindow(fn_, row);
      if (!s.ok()) {
        RETURN_IF_ERROR(out.Fail(row, s.message()));
        continue;
      }
      out.Emit(std::move(row));
    }
    return Status::OK();
  }

 private:
  WindowFn fn_;
};

Result<std::unique_ptr<Stage>> MakeWindowInto(const StageConfig& c) {
  ASSIGN_OR_RETURN(WindowFn fn, stages_internal::ParseWindowing(c, c.windowing));
  return std::unique_ptr<Stage>(new WindowInto(fn));
}

}  // namespace

void RegisterWindowing(StageRegistry& r) {
  StageTraits per_record;
  per_record.can_fail_per_record = true;
  (void)r.Register({"AssignTimestamps", MakeAssignTimestamps, {"timestamp", "language"}, {"timestamp"}, per_record,
                    CheckByMaking(MakeAssignTimestamps)});
  (void)r.Register({"WindowInto", MakeWindowInto, {}, {}, per_record, CheckByMaking(MakeWindowInto)});
}

}  // namespace dfw
