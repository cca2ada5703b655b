// The `datetime` module of def callables, as far as pipelines use it
// (https://docs.python.org/3/library/datetime.html): datetime, date and timedelta values,
// strptime/strftime with the C-locale directives, isoformat/fromisoformat, timestamps, UTC and
// fixed-offset time zones, and their arithmetic and comparisons. A datetime is microseconds since
// 1970-01-01 of its wall clock (plus an offset when aware); the proleptic Gregorian calendar
// conversions are the days-from-civil algorithms.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "record/python_datetime.h"
#include "record/python_def_interp.h"

namespace dfw::expr {
namespace dt {

int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, int64_t* m, int64_t* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp + (mp < 10 ? 3 : -9);
  *y = yoe + era * 400 + (*m <= 2);
}

int64_t DtFloorDiv(int64_t a, int64_t b) {
  if (b == -1) return a == INT64_MIN ? INT64_MAX : -a;  // saturates the one overflowing case
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

bool DtIsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
int DtDaysIn(int64_t y, int64_t m) {
  static const int kLen[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && DtIsLeap(y) ? 29 : kLen[m - 1];
}


Civil DtSplit(int64_t us) {
  Civil c;
  int64_t days = DtFloorDiv(us, kUsPerDay);
  int64_t rest = us - days * kUsPerDay;
  CivilFromDays(days, &c.year, &c.month, &c.day);
  c.hour = rest / (3600 * kUsPerSec);
  c.minute = rest / (60 * kUsPerSec) % 60;
  c.second = rest / kUsPerSec % 60;
  c.micro = rest % kUsPerSec;
  return c;
}

Status DtRangeCheck(const Civil& c) {
  if (c.year < 1 || c.year > 9999) return EvalError("ValueError: year " + std::to_string(c.year) + " is out of range");
  if (c.month < 1 || c.month > 12) return EvalError("ValueError: month must be in 1..12");
  if (c.day < 1 || c.day > DtDaysIn(c.year, c.month)) return EvalError("ValueError: day is out of range for month");
  if (c.hour < 0 || c.hour > 23) return EvalError("ValueError: hour must be in 0..23");
  if (c.minute < 0 || c.minute > 59) return EvalError("ValueError: minute must be in 0..59");
  if (c.second < 0 || c.second > 59) return EvalError("ValueError: second must be in 0..59");
  if (c.micro < 0 || c.micro > 999999) return EvalError("ValueError: microsecond must be in 0..999999");
  return Status::OK();
}

int64_t DtJoin(const Civil& c) {
  return DaysFromCivil(c.year, c.month, c.day) * kUsPerDay + ((c.hour * 60 + c.minute) * 60 + c.second) * kUsPerSec + c.micro;
}

Obj MakeDt(Special::DtKind kind, int64_t us, bool aware, int64_t offset_s) {
  auto s = std::make_shared<Special>(Special::kDateTime);
  s->dt = kind;
  s->start = us;
  s->aware = aware;
  s->stop = offset_s;
  return Obj(std::move(s));
}

const Special* AsDt(const Obj* o, Special::DtKind kind) {
  return o != nullptr && o->sp && o->sp->kind == Special::kDateTime && o->sp->dt == kind ? o->sp.get() : nullptr;
}

Result<int64_t> DtIntArg(const Obj* o, const char* what) {
  if (o == nullptr) return int64_t{0};
  if (o->sp || !IsIntLike(o->v)) return EvalError(std::string("TypeError: ") + what + " must be an integer");
  return IntOf(o->v);
}

std::string DtTwo(int64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%02lld", static_cast<long long>(v));
  return b;
}

std::string OffsetText(int64_t off, bool colon) {
  std::string s = off < 0 ? "-" : "+";
  int64_t a = off < 0 ? -off : off;
  s += DtTwo(a / 3600) + (colon ? ":" : "") + DtTwo(a / 60 % 60);
  if (a % 60) s += (colon ? ":" : "") + DtTwo(a % 60);
  return s;
}

std::string IsoFormat(const Special& d, char sep) {
  Civil c = DtSplit(d.start);
  char b[64];
  std::snprintf(b, sizeof b, "%04lld-%02lld-%02lld", static_cast<long long>(c.year), static_cast<long long>(c.month),
                static_cast<long long>(c.day));
  std::string s = b;
  if (d.dt == Special::kDateValue) return s;
  std::snprintf(b, sizeof b, "%c%02lld:%02lld:%02lld", sep, static_cast<long long>(c.hour), static_cast<long long>(c.minute),
                static_cast<long long>(c.second));
  s += b;
  if (c.micro) {
    std::snprintf(b, sizeof b, ".%06lld", static_cast<long long>(c.micro));
    s += b;
  }
  if (d.aware) s += OffsetText(d.stop, true);
  return s;
}

std::string TimedeltaStr(int64_t us) {
  int64_t days = DtFloorDiv(us, kUsPerDay);
  int64_t rest = us - days * kUsPerDay;
  std::string s;
  if (days) s = std::to_string(days) + (days == 1 || days == -1 ? " day, " : " days, ");
  char b[64];
  std::snprintf(b, sizeof b, "%lld:%02lld:%02lld", static_cast<long long>(rest / (3600 * kUsPerSec)),
                static_cast<long long>(rest / (60 * kUsPerSec) % 60), static_cast<long long>(rest / kUsPerSec % 60));
  s += b;
  if (rest % kUsPerSec) {
    std::snprintf(b, sizeof b, ".%06lld", static_cast<long long>(rest % kUsPerSec));
    s += b;
  }
  return s;
}

}  // namespace dt

using namespace dt;  // (this file and python_datetime_text.cc are the module; the names are theirs)

namespace {

Result<Obj> FromTimestamp(const Obj* ts, const Obj* tz) {
  if (ts == nullptr || ts->sp || !IsNum(ts->v)) return EvalError("TypeError: fromtimestamp() needs a number");
  double t = FloatOf(ts->v);
  if (!std::isfinite(t) || std::fabs(t) > 2.5e11) return EvalError("ValueError: year is out of range");
  int64_t us = static_cast<int64_t>(std::llround(t * 1e6));
  const Special* zone = AsDt(tz, Special::kTimezone);
  if (zone != nullptr) return MakeDt(Special::kDateTimeValue, us + zone->stop * kUsPerSec, true, zone->stop);
  return MakeDt(Special::kDateTimeValue, us);  // the worker's local time is UTC
}

Result<Obj> DtNow(const Obj* tz) {
  int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const Special* zone = AsDt(tz, Special::kTimezone);
  if (zone != nullptr) return MakeDt(Special::kDateTimeValue, us + zone->stop * kUsPerSec, true, zone->stop);
  return MakeDt(Special::kDateTimeValue, us);
}

Result<Obj> DtConstruct(Special::DtKind type, const Args& args) {
  std::vector<const Obj*> a;
  if (type == Special::kTimedelta) {
    RETURN_IF_ERROR(BindArgs("timedelta", args, {"days", "seconds", "microseconds", "milliseconds", "minutes", "hours", "weeks"}, 0, a));
    static const double kScale[] = {86400e6, 1e6, 1, 1e3, 60e6, 3600e6, 7 * 86400e6};
    double total = 0;
    int64_t exact = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (a[k] == nullptr) continue;
      if (a[k]->sp || !IsNum(a[k]->v)) return EvalError("TypeError: unsupported type for timedelta component");
      int64_t part = 0;
      if (IsIntLike(a[k]->v) && (__builtin_mul_overflow(IntOf(a[k]->v), static_cast<int64_t>(kScale[k]), &part) ||
                                 __builtin_add_overflow(exact, part, &exact)))
        return EvalError("OverflowError: timedelta too large");
      if (!IsIntLike(a[k]->v)) total += a[k]->v.as_float() * kScale[k];
    }
    int64_t sum = 0;
    if (!(std::fabs(total) < 9e18) || __builtin_add_overflow(exact, static_cast<int64_t>(std::llround(total)), &sum))
      return EvalError("OverflowError: timedelta too large");
    return MakeDt(Special::kTimedelta, sum);
  }
  if (type == Special::kTimezone) {
    RETURN_IF_ERROR(BindArgs("timezone", args, {"offset"}, 1, a));
    const Special* td = AsDt(a[0], Special::kTimedelta);
    if (td == nullptr) return EvalError("TypeError: timezone() argument 1 must be datetime.timedelta");
    return MakeDt(Special::kTimezone, 0, true, td->start / kUsPerSec);
  }
  bool date = type == Special::kDateValue;
  std::vector<std::string_view> names = {"year", "month", "day"};
  if (!date) names.insert(names.end(), {"hour", "minute", "second", "microsecond", "tzinfo"});
  RETURN_IF_ERROR(BindArgs(date ? "date" : "datetime", args, names, 3, a));
  Civil c;
  int64_t* fields[] = {&c.year, &c.month, &c.day, &c.hour, &c.minute, &c.second, &c.micro};
  for (std::size_t k = 0; k < std::min<std::size_t>(a.size(), 7); ++k) {
    ASSIGN_OR_RETURN(*fields[k], DtIntArg(a[k], names[k].data()));
  }
  RETURN_IF_ERROR(DtRangeCheck(c));
  const Special* zone = date ? nullptr : AsDt(a[7], Special::kTimezone);
  if (!date && a[7] != nullptr && zone == nullptr && !(a[7]->v.is_null() && !a[7]->sp))
    return EvalError("TypeError: tzinfo argument must be None or a timezone");
  return MakeDt(type, DtJoin(c), zone != nullptr, zone ? zone->stop : 0);
}

}  // namespace

Result<std::string> DateTimeFormat(const Special& d, const std::string& spec) {
  if (d.dt != Special::kDateTimeValue && d.dt != Special::kDateValue) return FormatValue(Value::String(DateTimeStr(d)), spec);
  return Strftime(d, spec);
}

std::string DateTimeRepr(const Special& d) {
  Civil c = DtSplit(d.start);
  auto n = [](int64_t v) { return std::to_string(v); };
  switch (d.dt) {
    case Special::kDateValue: return "datetime.date(" + n(c.year) + ", " + n(c.month) + ", " + n(c.day) + ")";
    case Special::kDateTimeValue: {
      std::string s = "datetime.datetime(" + n(c.year) + ", " + n(c.month) + ", " + n(c.day) + ", " + n(c.hour) + ", " + n(c.minute);
      if (c.second || c.micro) s += ", " + n(c.second);
      if (c.micro) s += ", " + n(c.micro);
      if (d.aware) s += d.stop == 0 ? ", tzinfo=datetime.timezone.utc" : ", tzinfo=datetime.timezone(datetime.timedelta(seconds=" + n(d.stop) + "))";
      return s + ")";
    }
    case Special::kTimedelta: {
      int64_t days = DtFloorDiv(d.start, kUsPerDay), rest = d.start - days * kUsPerDay;
      std::vector<std::string> parts;
      if (days) parts.push_back("days=" + n(days));
      if (rest / kUsPerSec) parts.push_back("seconds=" + n(rest / kUsPerSec));
      if (rest % kUsPerSec) parts.push_back("microseconds=" + n(rest % kUsPerSec));
      std::string s = "datetime.timedelta(";
      for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
      return s + ")";
    }
    case Special::kTimezone: return d.stop == 0 ? "datetime.timezone.utc" : "datetime.timezone(datetime.timedelta(seconds=" + n(d.stop) + "))";
    default: return DateTimeStr(d);
  }
}

std::string DateTimeStr(const Special& d) {
  switch (d.dt) {
    case Special::kDateTimeValue:
    case Special::kDateValue: return IsoFormat(d, ' ');
    case Special::kTimedelta: return TimedeltaStr(d.start);
    case Special::kTimezone: return d.stop == 0 ? "UTC" : "UTC" + OffsetText(d.stop, true);
    default: return d.dt == Special::kDateType ? "<class 'datetime.date'>" : d.dt == Special::kTimedeltaType ? "<class 'datetime.timedelta'>"
                    : d.dt == Special::kTimezoneType ? "<class 'datetime.timezone'>" : "<class 'datetime.datetime'>";
  }
}

Result<Obj> DatetimeModuleAttr(const std::string& name) {
  if (name == "datetime") return MakeDt(Special::kDateTimeType, 0);
  if (name == "date") return MakeDt(Special::kDateType, 0);
  if (name == "timedelta") return MakeDt(Special::kTimedeltaType, 0);
  if (name == "timezone") return MakeDt(Special::kTimezoneType, 0);
  if (name == "MINYEAR") return Obj(Value::Int(1));
  if (name == "MAXYEAR") return Obj(Value::Int(9999));
  return EvalError("AttributeError: module 'datetime' has no attribute '" + name + "' here (datetime, date, timedelta, timezone)");
}

Result<Obj> CallDatetimeModule(const std::string& name, const Args& args) {
  ASSIGN_OR_RETURN(Obj type, DatetimeModuleAttr(name));
  if (!type.sp) return EvalError("TypeError: 'int' object is not callable");
  return CallDateTime(*type.sp, "", args);
}

Result<Obj> CallDateTime(const Special& self, const std::string& method, const Args& args) {
  std::vector<const Obj*> a;
  auto arg_str = [&](const Obj* o, const char* what) -> Result<std::string> {
    if (o == nullptr || o->sp || !o->v.is_string()) return EvalError(std::string("TypeError: ") + what + " must be str");
    return o->v.as_string();
  };
  switch (self.dt) {
    case Special::kDateTimeType:
    case Special::kDateType:
    case Special::kTimedeltaType:
    case Special::kTimezoneType: {
      Special::DtKind value = self.dt == Special::kDateTimeType ? Special::kDateTimeValue
                              : self.dt == Special::kDateType  ? Special::kDateValue
                              : self.dt == Special::kTimedeltaType ? Special::kTimedelta : Special::kTimezone;
      if (method.empty()) return DtConstruct(value, args);
      bool date = value == Special::kDateValue;
      if (method == "strptime" && value == Special::kDateTimeValue) {
        RETURN_IF_ERROR(BindArgs("strptime", args, {"date_string", "format"}, 2, a));
        ASSIGN_OR_RETURN(std::string s, arg_str(a[0], "strptime() argument 1"));
        ASSIGN_OR_RETURN(std::string f, arg_str(a[1], "strptime() argument 2"));
        return Strptime(s, f);
      }
      if (method == "fromisoformat" && (date || value == Special::kDateTimeValue)) {
        RETURN_IF_ERROR(BindArgs("fromisoformat", args, {"date_string"}, 1, a));
        ASSIGN_OR_RETURN(std::string s, arg_str(a[0], "fromisoformat: argument"));
        return FromIso(s, date);
      }
      if ((method == "fromtimestamp" || method == "utcfromtimestamp") && (date || value == Special::kDateTimeValue)) {
        RETURN_IF_ERROR(BindArgs(method, args, {"timestamp", "tz"}, 1, a));
        ASSIGN_OR_RETURN(Obj r, FromTimestamp(a[0], method == "fromtimestamp" ? a[1] : nullptr));
        if (date) r.sp->dt = Special::kDateValue, r.sp->start = DtFloorDiv(r.sp->start, kUsPerDay) * kUsPerDay, r.sp->aware = false;
        return r;
      }
      if ((method == "now" || method == "utcnow" || method == "today") && (date || value == Special::kDateTimeValue)) {
        RETURN_IF_ERROR(BindArgs(method, args, {"tz"}, 0, a));
        ASSIGN_OR_RETURN(Obj r, DtNow(method == "now" ? a[0] : nullptr));
        if (date) r.sp->dt = Special::kDateValue, r.sp->start = DtFloorDiv(r.sp->start, kUsPerDay) * kUsPerDay, r.sp->aware = false;
        return r;
      }
      return EvalError("AttributeError: type object '" + DateTimeStr(self).substr(8) + " has no attribute '" + method + "' here");
    }
    default: break;
  }
  if (self.dt == Special::kTimedelta) {
    if (method == "total_seconds") {
      RETURN_IF_ERROR(BindArgs(method, args, {}, 0, a));
      return Obj(Value::Float(static_cast<double>(self.start) / 1e6));
    }
    return EvalError("AttributeError: 'datetime.timedelta' object has no attribute '" + method + "'");
  }
  if (self.dt == Special::kTimezone) return EvalError("AttributeError: 'datetime.timezone' object has no attribute '" + method + "'");
  bool date = self.dt == Special::kDateValue;
  if (method == "isoformat") {
    RETURN_IF_ERROR(BindArgs(method, args, {"sep"}, 0, a));
    char sep = 'T';
    if (a[0] != nullptr) {
      ASSIGN_OR_RETURN(std::string s, arg_str(a[0], "isoformat() sep"));
      if (s.size() != 1) return EvalError("TypeError: isoformat() argument 1 must be a unicode character");
      sep = s[0];
    }
    return Obj(Value::String(IsoFormat(self, sep)));
  }
  if (method == "strftime") {
    RETURN_IF_ERROR(BindArgs(method, args, {"format"}, 1, a));
    ASSIGN_OR_RETURN(std::string f, arg_str(a[0], "strftime() argument 1"));
    ASSIGN_OR_RETURN(std::string s, Strftime(self, f));
    return Obj(Value::String(std::move(s)));
  }
  if (method == "weekday" || method == "isoweekday") {
    RETURN_IF_ERROR(BindArgs(method, args, {}, 0, a));
    int64_t wd = ((DtFloorDiv(self.start, kUsPerDay) % 7) + 7 + 3) % 7;
    return Obj(Value::Int(method == "weekday" ? wd : wd + 1));
  }
  if (method == "timestamp" && !date) {
    RETURN_IF_ERROR(BindArgs(method, args, {}, 0, a));
    return Obj(Value::Float(static_cast<double>(self.start - (self.aware ? self.stop * kUsPerSec : 0)) / 1e6));
  }
  if (method == "date" && !date) {
    RETURN_IF_ERROR(BindArgs(method, args, {}, 0, a));
    return MakeDt(Special::kDateValue, DtFloorDiv(self.start, kUsPerDay) * kUsPerDay);
  }
  if (method == "utcoffset" && !date) {
    RETURN_IF_ERROR(BindArgs(method, args, {}, 0, a));
    return self.aware ? MakeDt(Special::kTimedelta, self.stop * kUsPerSec) : Obj();
  }
  if (method == "replace") {
    std::vector<std::string_view> names = {"year", "month", "day"};
    if (!date) names.insert(names.end(), {"hour", "minute", "second", "microsecond", "tzinfo"});
    RETURN_IF_ERROR(BindArgs("replace", args, names, 0, a));
    Civil c = DtSplit(self.start);
    int64_t* fields[] = {&c.year, &c.month, &c.day, &c.hour, &c.minute, &c.second, &c.micro};
    for (std::size_t k = 0; k < std::min<std::size_t>(a.size(), 7); ++k)
      if (a[k] != nullptr) {
        ASSIGN_OR_RETURN(*fields[k], DtIntArg(a[k], names[k].data()));
      }
    RETURN_IF_ERROR(DtRangeCheck(c));
    bool aware = self.aware;
    int64_t off = self.stop;
    if (!date && a[7] != nullptr) {
      const Special* zone = AsDt(a[7], Special::kTimezone);
      aware = zone != nullptr;
      off = zone ? zone->stop : 0;
    }
    return MakeDt(self.dt, DtJoin(c), aware, off);
  }
  if (method == "astimezone" && !date) {
    RETURN_IF_ERROR(BindArgs(method, args, {"tz"}, 1, a));
    const Special* zone = AsDt(a[0], Special::kTimezone);
    if (zone == nullptr) return EvalError("TypeError: astimezone() argument 1 must be a timezone");
    int64_t utc = self.start - (self.aware ? self.stop * kUsPerSec : 0);
    return MakeDt(Special::kDateTimeValue, utc + zone->stop * kUsPerSec, true, zone->stop);
  }
  return EvalError("AttributeError: '" + std::string(date ? "datetime.date" : "datetime.datetime") + "' object has no attribute '" +
                   method + "'");
}

Result<Obj> DateTimeAttr(const Special& self, const std::string& name) {
  if (self.dt == Special::kTimezoneType && name == "utc") return MakeDt(Special::kTimezone, 0, true, 0);
  if (self.dt == Special::kTimedelta) {
    int64_t days = DtFloorDiv(self.start, kUsPerDay), rest = self.start - days * kUsPerDay;
    if (name == "days") return Obj(Value::Int(days));
    if (name == "seconds") return Obj(Value::Int(rest / kUsPerSec));
    if (name == "microseconds") return Obj(Value::Int(rest % kUsPerSec));
  }
  if (self.dt == Special::kDateTimeValue || self.dt == Special::kDateValue) {
    Civil c = DtSplit(self.start);
    if (name == "year") return Obj(Value::Int(c.year));
    if (name == "month") return Obj(Value::Int(c.month));
    if (name == "day") return Obj(Value::Int(c.day));
    if (self.dt == Special::kDateTimeValue) {
      if (name == "hour") return Obj(Value::Int(c.hour));
      if (name == "minute") return Obj(Value::Int(c.minute));
      if (name == "second") return Obj(Value::Int(c.second));
      if (name == "microsecond") return Obj(Value::Int(c.micro));
      if (name == "tzinfo") return self.aware ? MakeDt(Special::kTimezone, 0, true, self.stop) : Obj();
    }
  }
  return EvalError("AttributeError: '" + std::string(self.dt == Special::kTimedelta ? "datetime.timedelta" : "datetime") +
                   "' object has no attribute '" + name + "'");
}

// Arithmetic: datetime ± timedelta, datetime - datetime, timedelta ± * / ; nullopt-like kNoOp
// status when the operands are not datetime values this handles.
Result<Obj> DateTimeBinary(Op op, const Obj& x, const Obj& y) {
  const Special* a = x.sp && x.sp->kind == Special::kDateTime ? x.sp.get() : nullptr;
  const Special* b = y.sp && y.sp->kind == Special::kDateTime ? y.sp.get() : nullptr;
  auto unsupported = [&] {
    return EvalError("TypeError: unsupported operand type(s) for " + std::string(OpText(op)) + ": '" + ObjTypeName(x) + "' and '" +
                     ObjTypeName(y) + "'");
  };
  bool a_point = a && (a->dt == Special::kDateTimeValue || a->dt == Special::kDateValue);
  bool b_point = b && (b->dt == Special::kDateTimeValue || b->dt == Special::kDateValue);
  bool a_td = a && a->dt == Special::kTimedelta, b_td = b && b->dt == Special::kTimedelta;
  if (a_point && b_td && (op == Op::kAdd || op == Op::kSub)) {
    int64_t delta = op == Op::kAdd ? b->start : -b->start;
    if (a->dt == Special::kDateValue) delta = DtFloorDiv(delta, kUsPerDay) * kUsPerDay;
    int64_t at = 0;
    if (__builtin_add_overflow(a->start, delta, &at)) return EvalError("OverflowError: date value out of range");
    Civil c = DtSplit(at);
    if (!DtRangeCheck(c).ok()) return EvalError("OverflowError: date value out of range");
    return MakeDt(a->dt, at, a->aware, a->stop);
  }
  if (a_td && b_point && op == Op::kAdd) return DateTimeBinary(op, y, x);
  if (a_point && b_point && op == Op::kSub && a->dt == b->dt) {
    if (a->aware != b->aware) return EvalError("TypeError: can't subtract offset-naive and offset-aware datetimes");
    int64_t ua = a->start - (a->aware ? a->stop * kUsPerSec : 0), ub = b->start - (b->aware ? b->stop * kUsPerSec : 0);
    return MakeDt(Special::kTimedelta, ua - ub);
  }
  if (a_td && b_td) {
    int64_t r = 0;
    if ((op == Op::kAdd && __builtin_add_overflow(a->start, b->start, &r)) || (op == Op::kSub && __builtin_sub_overflow(a->start, b->start, &r)))
      return EvalError("OverflowError: timedelta too large");
    if (op == Op::kAdd || op == Op::kSub) return MakeDt(Special::kTimedelta, r);
    if (op == Op::kDiv) {
      if (b->start == 0) return EvalError("ZeroDivisionError: division by zero");
      return Obj(Value::Float(static_cast<double>(a->start) / static_cast<double>(b->start)));
    }
    if (op == Op::kFloorDiv) {
      if (b->start == 0) return EvalError("ZeroDivisionError: integer division or modulo by zero");
      return Obj(Value::Int(DtFloorDiv(a->start, b->start)));
    }
  }
  const Special* td = a_td ? a : b_td ? b : nullptr;
  const Obj& other = a_td ? y : x;
  if (td != nullptr && !other.sp && IsNum(other.v) && (op == Op::kMul || (op == Op::kDiv && a_td) || (op == Op::kFloorDiv && a_td))) {
    double f = FloatOf(other.v);
    if (op != Op::kMul && f == 0) return EvalError("ZeroDivisionError: division by zero");
    double r = op == Op::kMul ? static_cast<double>(td->start) * f : static_cast<double>(td->start) / f;
    if (op == Op::kFloorDiv && IsIntLike(other.v)) return MakeDt(Special::kTimedelta, DtFloorDiv(td->start, IntOf(other.v)));
    if (!std::isfinite(r) || std::fabs(r) > 9e18) return EvalError("OverflowError: timedelta too large");
    return MakeDt(Special::kTimedelta, static_cast<int64_t>(std::nearbyint(r)));
  }
  return unsupported();
}

// <, == and friends between two datetimes, two dates or two timedeltas.
Result<bool> DateTimeCompare(Op op, const Special& a, const Special& b) {
  if (a.dt != b.dt) {
    if (op == Op::kEq) return false;
    if (op == Op::kNe) return true;
    return EvalError("TypeError: '" + std::string(OpText(op)) + "' not supported between these datetime values");
  }
  if (a.aware != b.aware && op != Op::kEq && op != Op::kNe)
    return EvalError("TypeError: can't compare offset-naive and offset-aware datetimes");
  int64_t x = a.start - (a.aware ? a.stop * kUsPerSec : 0), y = b.start - (b.aware ? b.stop * kUsPerSec : 0);
  if (a.aware != b.aware) return op == Op::kNe;
  switch (op) {
    case Op::kEq: return x == y;
    case Op::kNe: return x != y;
    case Op::kLt: return x < y;
    case Op::kLe: return x <= y;
    case Op::kGt: return x > y;
    case Op::kGe: return x >= y;
    default: return EvalError("TypeError: unsupported comparison of datetime values");
  }
}

}  // namespace dfw::expr
