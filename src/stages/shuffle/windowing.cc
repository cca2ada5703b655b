// AssignTimestamps and WindowInto, and the window functions they and Combine share.
#include "windowing.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "dfw/stages/config.h"
#include "stages/expression_config.h"

namespace dfw {
namespace stages_internal {
namespace {

// "10s", "250ms", "5m", "1h", "1d", or a number of seconds; microseconds, > 0.
Result<int64_t> ParseDuration(const StageConfig& c, const ConfigNode& n, const std::string& what) {
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

Result<WindowFn> ParseWindowing(const StageConfig& c, const ConfigNode& w, bool sessions_allowed, bool sliding_allowed) {
  const std::string where = NodeLocation(c, w);
  if (!w.IsDefined() || w.IsNull()) return InvalidArgument(c.Where() + ": needs 'windowing:' ({type: fixed, size: 10s})");
  if (!w.IsMap()) return InvalidArgument(where + ": windowing must be a mapping such as {type: fixed, size: 10s}");
  const ConfigNode& type = w["type"];
  if (!type.IsDefined() || !type.IsScalar()) return InvalidArgument(where + ": windowing needs 'type' (fixed or global)");
  const std::string t = type.Scalar();
  auto only = [&](std::initializer_list<const char*> keys) -> Status {
    for (const ConfigEntry& kv : w.entries()) {
      const std::string k = kv.key.Scalar();
      if (std::find_if(keys.begin(), keys.end(), [&](const char* a) { return k == a; }) == keys.end()) {
        return InvalidArgument(NodeLocation(c, kv.key) + ": windowing type '" + t + "' takes no '" + k + "'");
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
  if (t == "sessions") {
    if (!sessions_allowed) {
      return Status(StatusCode::kUnimplemented,
                    NodeLocation(c, type) + ": sessions windows are merged by the grouping that uses them: put "
                                            "'windowing: {type: sessions, gap: ...}' on the Combine itself");
    }
    RETURN_IF_ERROR(only({"type", "gap"}));
    fn.kind = WindowFn::Kind::kSessions;
    ASSIGN_OR_RETURN(fn.gap_us, ParseDuration(c, w["gap"], "gap"));
    return fn;
  }
  if (t == "sliding") {
    if (!sliding_allowed) {
      return Status(StatusCode::kUnimplemented,
                    NodeLocation(c, type) + ": windowing type 'sliding' puts an element in several windows: give it to "
                                            "a WindowInto (or as the transform's own windowing:, which becomes one)");
    }
    RETURN_IF_ERROR(only({"type", "size", "period", "offset"}));
    fn.kind = WindowFn::Kind::kSliding;
    ASSIGN_OR_RETURN(fn.size_us, ParseDuration(c, w["size"], "size"));
    ASSIGN_OR_RETURN(fn.period_us, ParseDuration(c, w["period"], "period"));
    if (w["offset"].IsDefined()) {
      ASSIGN_OR_RETURN(fn.offset_us, ParseDuration(c, w["offset"], "offset"));
      fn.offset_us %= fn.period_us;
    }
    return fn;
  }
  return InvalidArgument(NodeLocation(c, type) + ": unknown windowing type '" + t + "'; allowed: fixed, sliding, sessions, global");
}

Status AssignWindow(const WindowFn& fn, Row& row) {
  if (fn.kind == WindowFn::Kind::kSliding) return InvalidArgument("sliding windows are assigned by a WindowInto");
  if (fn.kind == WindowFn::Kind::kGlobal) {
    row.set_window(INT64_MIN, INT64_MAX);
    return Status::OK();
  }
  const int64_t ts = row.timestamp_us();
  if (ts == Row::kNoTimestamp) {
    return InvalidArgument("the row has no event timestamp for its window: add an AssignTimestamps before");
  }
  if (fn.kind == WindowFn::Kind::kSessions) {
    if (ts > INT64_MAX - fn.gap_us) return InvalidArgument("the row's timestamp is past the end of time for its session");
    row.set_window(ts, ts + fn.gap_us);
    return Status::OK();
  }
  // Window start: the largest offset + k * size <= ts (floor, also for negative timestamps).
  int64_t rel, start, end;
  if (__builtin_sub_overflow(ts, fn.offset_us, &rel)) return InvalidArgument("the row's timestamp is out of range for its window");
  int64_t k = rel / fn.size_us;
  if (rel % fn.size_us < 0) --k;
  if (__builtin_mul_overflow(k, fn.size_us, &start) || __builtin_add_overflow(start, fn.offset_us, &start) ||
      __builtin_add_overflow(start, fn.size_us, &end)) {
    return InvalidArgument("the row's timestamp is out of range for its window");
  }
  row.set_window(start, end);
  return Status::OK();
}

std::vector<int64_t> SlidingWindowStarts(const WindowFn& fn, int64_t ts) {
  std::vector<int64_t> starts;
  // The latest start at or before ts: ts - ((ts - offset) mod period), the modulo taken as Python's
  // (never negative). Durations are at most 1e18 us and timestamps within Beam's range, so the
  // arithmetic stays inside int64 apart from the extremes, which are refused.
  int64_t rel;
  if (__builtin_sub_overflow(ts, fn.offset_us, &rel)) return starts;
  int64_t m = rel % fn.period_us;
  if (m < 0) m += fn.period_us;
  int64_t lowest;
  if (__builtin_sub_overflow(ts, fn.size_us, &lowest)) return starts;
  for (int64_t s = ts - m; s > lowest; s -= fn.period_us) {
    starts.push_back(s);
    if (s < INT64_MIN + fn.period_us) break;
  }
  return starts;
}

double Seconds(int64_t us) { return static_cast<double>(us) / 1e6; }

std::string WindowString(const Row& row) {
  if (row.in_global_window()) return "GlobalWindow";
  return "[" + Value::Float(Seconds(row.window_start_us())).ToJson() + ", " +
         Value::Float(Seconds(row.window_end_us())).ToJson() + ")";
}

}  // namespace stages_internal

namespace {

using stages_internal::WindowFn;

// AssignTimestamps: the event timestamp from `timestamp` (a field or, with language: python, an
// expression), in seconds since the epoch, or a Timestamp.
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
      if (v->is_timestamp()) {  // Beam's Timestamp.of takes a Timestamp as it is
        row.set_timestamp_us(v->as_timestamp_us());
        out.Emit(std::move(row));
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
      if (fn_.kind == WindowFn::Kind::kSliding) {
        RETURN_IF_ERROR(Slide(std::move(row), out));
        continue;
      }
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
  // One copy of the row per window holding its timestamp; none when the windows leave gaps there.
  Status Slide(Row row, StageOutput& out) {
    const int64_t ts = row.timestamp_us();
    if (ts == Row::kNoTimestamp) return out.Fail(row, "the row has no event timestamp for its window: add an AssignTimestamps before");
    const std::vector<int64_t> starts = stages_internal::SlidingWindowStarts(fn_, ts);
    if (starts.empty()) {
      out.CountFiltered();
      return Status::OK();
    }
    for (std::size_t k = 0; k < starts.size(); ++k) {
      Row copy = k + 1 < starts.size() ? row : std::move(row);
      copy.set_window(starts[k], starts[k] > INT64_MAX - fn_.size_us ? INT64_MAX : starts[k] + fn_.size_us);
      out.Emit(std::move(copy));
    }
    if (starts.size() > 1) out.CountFannedOut(static_cast<int64_t>(starts.size()) - 1);
    return Status::OK();
  }

  WindowFn fn_;
};

Result<std::unique_ptr<Stage>> MakeWindowInto(const StageConfig& c) {
  // Sessions: each row gets its own [ts, ts + gap); the Combine that reads a WindowInto with
  // sessions merges them (the loader gives it the same windowing), as a GroupByKey does on Beam.
  ASSIGN_OR_RETURN(WindowFn fn, stages_internal::ParseWindowing(c, c.windowing, /*sessions_allowed=*/true,
                                                                /*sliding_allowed=*/true));
  return std::unique_ptr<Stage>(new WindowInto(fn));
}

// ExtractWindowingInfo: the element's timestamp and window as fields (Beam's names and forms:
// times as Timestamp values; window_object and pane_info as Python's str of Beam's objects).
enum class Info { kTimestamp, kWindowStart, kWindowEnd, kWindowString, kWindowType, kWindowObject, kPaneInfo };

// Beam's MIN_TIMESTAMP and MAX_TIMESTAMP (apache_beam/utils/timestamp.py: Java's millisecond range
// in microseconds), the timestamp of an element that was never given one; the global window ends a
// day before the maximum (GlobalWindow.max_timestamp).
constexpr int64_t kBeamMinTimestampUs = -9223372036854775000;
constexpr int64_t kBeamMaxTimestampUs = 9223372036854775000;
constexpr int64_t kGlobalWindowEndUs = kBeamMaxTimestampUs - int64_t{86400} * 1000000;
// str() of the pane of an element in batch, as Beam's ExtractWindowingInfo gives it: dfworker has one
// pane per window and no triggers, so every element is its window's first and last pane.
constexpr const char* kBatchPaneInfo =
    "PaneInfoTuple(is_first=True, is_last=True, timing='UNKNOWN', index=0, nonspeculative_index=0)";

class ExtractWindowingInfo final : public Stage {
 public:
  explicit ExtractWindowingInfo(std::vector<std::pair<std::string, Info>> fields) : fields_(std::move(fields)) {}
  Status Process(RowBatch& in, StageOutput& out) override {
    for (Row& row : in) {
      const bool global = row.in_global_window();
      for (const auto& [name, info] : fields_) {
        Value v;
        switch (info) {
          case Info::kTimestamp:
            v = Value::Timestamp(row.timestamp_us() != Row::kNoTimestamp ? row.timestamp_us() : kBeamMinTimestampUs);
            break;
          case Info::kWindowStart:
            v = Value::Timestamp(global ? kBeamMinTimestampUs : row.window_start_us());
            break;
          case Info::kWindowEnd:
            v = Value::Timestamp(global ? kGlobalWindowEndUs : row.window_end_us());
            break;
          case Info::kWindowString:
          case Info::kWindowObject:  // the window as Python's str writes it: "GlobalWindow" or "[7.0, 30.0)"
            v = Value::String(stages_internal::WindowString(row));
            break;
          case Info::kWindowType: v = Value::String(global ? "GlobalWindow" : "IntervalWindow"); break;
          case Info::kPaneInfo: v = Value::String(kBatchPaneInfo); break;
        }
        row.Set(name, std::move(v));
      }
      out.Emit(std::move(row));
    }
    return Status::OK();
  }

 private:
  std::vector<std::pair<std::string, Info>> fields_;
};

Result<std::unique_ptr<Stage>> MakeExtractWindowingInfo(const StageConfig& c) {
  static const std::pair<const char*, Info> kInfos[] = {{"timestamp", Info::kTimestamp},
                                                        {"window_start", Info::kWindowStart},
                                                        {"window_end", Info::kWindowEnd},
                                                        {"window_string", Info::kWindowString},
                                                        {"window_type", Info::kWindowType},
                                                        {"window_object", Info::kWindowObject},
                                                        {"pane_info", Info::kPaneInfo}};
  auto kind = [&](const std::string& what, const ConfigNode& at) -> Result<Info> {
    for (const auto& [name, info] : kInfos) {
      if (what == name) return info;
    }
    return InvalidArgument(NodeLocation(c, at) + ": fields: '" + what + "' is not windowing info; allowed: timestamp, "
                           "window_start, window_end, window_string, window_type, window_object, pane_info");
  };
  std::vector<std::pair<std::string, Info>> fields;
  const ConfigNode& f = c.config["fields"];
  if (!f.IsDefined() || f.IsNull()) {
    fields = {{"timestamp", Info::kTimestamp}, {"window_start", Info::kWindowStart}, {"window_end", Info::kWindowEnd}};
  } else if (f.IsSequence()) {
    for (const ConfigNode& item : f.items()) {
      if (!item.IsScalar()) return ConfigKeyError(c, "fields", "must list names such as window_start");
      ASSIGN_OR_RETURN(Info info, kind(item.Scalar(), item));
      fields.emplace_back(item.Scalar(), info);
    }
  } else if (f.IsMap()) {
    for (const ConfigEntry& kv : f.entries()) {
      if (!kv.value.IsScalar()) return ConfigKeyError(c, "fields", "maps an output field to a kind such as window_start");
      ASSIGN_OR_RETURN(Info info, kind(kv.value.Scalar(), kv.value));
      fields.emplace_back(kv.key.Scalar(), info);
    }
  } else {
    return ConfigKeyError(c, "fields", "must be a list of kinds or a mapping of field name to kind");
  }
  return std::unique_ptr<Stage>(new ExtractWindowingInfo(std::move(fields)));
}

}  // namespace

void RegisterWindowing(StageRegistry& r) {
  StageTraits per_record;
  per_record.can_fail_per_record = true;
  (void)r.Register({"AssignTimestamps", MakeAssignTimestamps, {"timestamp", "language"}, {"timestamp"}, per_record,
                    CheckByMaking(MakeAssignTimestamps)});
  (void)r.Register({"WindowInto", MakeWindowInto, {}, {}, per_record, CheckByMaking(MakeWindowInto)});
  (void)r.Register({"ExtractWindowingInfo", MakeExtractWindowingInfo, {"fields"}, {}, StageTraits{},
                    CheckByMaking(MakeExtractWindowingInfo)});
}

}  // namespace dfw
