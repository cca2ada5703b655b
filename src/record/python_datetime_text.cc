// datetime's text forms for def callables: strftime and strptime with the C-locale directives,
// fromisoformat (https://docs.python.org/3/library/datetime.html#strftime-and-strptime-behavior).
#include <cstdio>
#include <string>

#include "record/python_datetime.h"

namespace dfw::expr::dt {

Result<std::string> Strftime(const Special& d, const std::string& fmt) {
  Civil c = DtSplit(d.start);
  int64_t days = DtFloorDiv(d.start, kUsPerDay);
  int wd = static_cast<int>(((days % 7) + 7 + 3) % 7);  // 1970-01-01 was a Thursday (3, Monday = 0)
  int64_t yday = days - DaysFromCivil(c.year, 1, 1) + 1;
  std::string out;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%' || i + 1 >= fmt.size()) {
      out += fmt[i];
      continue;
    }
    char f = fmt[++i];
    char b[64];
    switch (f) {
      case 'Y': std::snprintf(b, sizeof b, "%04lld", static_cast<long long>(c.year)); out += b; break;
      case 'y': out += DtTwo(c.year % 100); break;
      case 'm': out += DtTwo(c.month); break;
      case 'd': out += DtTwo(c.day); break;
      case 'H': out += DtTwo(c.hour); break;
      case 'I': out += DtTwo(c.hour % 12 == 0 ? 12 : c.hour % 12); break;
      case 'M': out += DtTwo(c.minute); break;
      case 'S': out += DtTwo(c.second); break;
      case 'f': std::snprintf(b, sizeof b, "%06lld", static_cast<long long>(c.micro)); out += b; break;
      case 'p': out += c.hour < 12 ? "AM" : "PM"; break;
      case 'j': std::snprintf(b, sizeof b, "%03lld", static_cast<long long>(yday)); out += b; break;
      case 'a': out += std::string(kDays[wd]).substr(0, 3); break;
      case 'A': out += kDays[wd]; break;
      case 'w': out += std::to_string((wd + 1) % 7); break;
      case 'u': out += std::to_string(wd + 1); break;
      case 'b': case 'h': out += std::string(kMonths[c.month - 1]).substr(0, 3); break;
      case 'B': out += kMonths[c.month - 1]; break;
      case 'z': if (d.aware) out += OffsetText(d.stop, false); break;
      case 'Z': if (d.aware) out += d.stop == 0 ? "UTC" : "UTC" + OffsetText(d.stop, true); break;
      case 'c': {
        std::snprintf(b, sizeof b, "%s %s %2lld %02lld:%02lld:%02lld %04lld", std::string(kDays[wd]).substr(0, 3).c_str(),
                      std::string(kMonths[c.month - 1]).substr(0, 3).c_str(), static_cast<long long>(c.day),
                      static_cast<long long>(c.hour), static_cast<long long>(c.minute), static_cast<long long>(c.second),
                      static_cast<long long>(c.year));
        out += b;
        break;
      }
      case 'x': out += DtTwo(c.month) + "/" + DtTwo(c.day) + "/" + DtTwo(c.year % 100); break;
      case 'X': out += DtTwo(c.hour) + ":" + DtTwo(c.minute) + ":" + DtTwo(c.second); break;
      case 'F': out += IsoFormat(d, 'T').substr(0, 10); break;
      case 'T': out += DtTwo(c.hour) + ":" + DtTwo(c.minute) + ":" + DtTwo(c.second); break;
      case '%': out += '%'; break;
      default: out += '%'; out += f; break;
    }
  }
  return out;
}

// datetime.strptime with the directives above; fields not in the format keep 1900-01-01 00:00.
Result<Obj> Strptime(const std::string& s, const std::string& fmt) {
  Civil c;
  c.year = 1900;
  bool pm = false, has_p = false, aware = false;
  int64_t offset = 0, yday = -1;
  std::size_t i = 0;
  auto fail = [&] {
    return EvalError("ValueError: time data " + PyRepr(Value::String(s)) + " does not match format " + PyRepr(Value::String(fmt)));
  };
  auto num = [&](int max_digits, int64_t* out) {
    std::size_t b = i;
    int64_t v = 0;
    while (i < s.size() && i - b < static_cast<std::size_t>(max_digits) && std::isdigit(static_cast<unsigned char>(s[i])))
      v = v * 10 + (s[i++] - '0');
    *out = v;
    return i > b;
  };
  auto name = [&](const char* const* names, int n, int64_t* out) {
    for (int k = 0; k < n; ++k) {
      std::string full = names[k];
      for (const std::string& cand : {full, full.substr(0, 3)}) {
        if (s.size() - i >= cand.size() && strncasecmp(s.c_str() + i, cand.c_str(), cand.size()) == 0) {
          i += cand.size();
          *out = k;
          return true;
        }
      }
    }
    return false;
  };
  for (std::size_t f = 0; f < fmt.size(); ++f) {
    char ch = fmt[f];
    if (std::isspace(static_cast<unsigned char>(ch))) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      continue;
    }
    if (ch != '%' || f + 1 >= fmt.size()) {
      if (i >= s.size() || s[i] != ch) return fail();
      ++i;
      continue;
    }
    char d = fmt[++f];
    int64_t v = 0;
    bool ok = true;
    switch (d) {
      case 'Y': ok = num(4, &c.year); break;
      case 'y': ok = num(2, &v); c.year = v < 69 ? 2000 + v : 1900 + v; break;
      case 'm': ok = num(2, &c.month); break;
      case 'd': ok = num(2, &c.day); break;
      case 'H': ok = num(2, &c.hour); break;
      case 'I': ok = num(2, &c.hour); break;
      case 'M': ok = num(2, &c.minute); break;
      case 'S': ok = num(2, &c.second); break;
      case 'j': ok = num(3, &yday); break;
      case 'f': {
        std::size_t b = i;
        ok = num(6, &v);
        for (std::size_t k = i - b; k < 6; ++k) v *= 10;
        c.micro = v;
        break;
      }
      case 'p': {
        has_p = true;
        if (s.size() - i >= 2 && strncasecmp(s.c_str() + i, "PM", 2) == 0) pm = true, i += 2;
        else if (s.size() - i >= 2 && strncasecmp(s.c_str() + i, "AM", 2) == 0) i += 2;
        else ok = false;
        break;
      }
      case 'b': case 'B': case 'h': ok = name(kMonths, 12, &v); c.month = v + 1; break;
      case 'a': case 'A': ok = name(kDays, 7, &v); break;
      case 'z': {
        if (i < s.size() && s[i] == 'Z') {
          ++i;
          aware = true;
          break;
        }
        if (i >= s.size() || (s[i] != '+' && s[i] != '-')) { ok = false; break; }
        int sign = s[i++] == '-' ? -1 : 1;
        int64_t hh = 0, mm = 0, ss = 0;
        ok = num(2, &hh);
        if (i < s.size() && s[i] == ':') ++i;
        ok = ok && num(2, &mm);
        if (i < s.size() && s[i] == ':') {
          ++i;
          ok = ok && num(2, &ss);
        }
        offset = sign * (hh * 3600 + mm * 60 + ss);
        aware = true;
        break;
      }
      case '%': ok = i < s.size() && s[i++] == '%'; break;
      default: return EvalError(std::string("ValueError: '") + d + "' is a bad directive in format " + PyRepr(Value::String(fmt)));
    }
    if (!ok) return fail();
  }
  if (i != s.size()) return EvalError("ValueError: unconverted data remains: " + s.substr(i));
  if (has_p) {
    if (c.hour < 1 || c.hour > 12) return fail();
    c.hour = c.hour % 12 + (pm ? 12 : 0);
  }
  if (yday > 0) {
    int64_t z = DaysFromCivil(c.year, 1, 1) + yday - 1;
    int64_t y;
    CivilFromDays(z, &y, &c.month, &c.day);
  }
  // A field outside its directive's range does not match, as in Python; a day past the month's end is a range error.
  if (c.month < 1 || c.month > 12 || c.day < 1 || c.day > 31 || c.hour > 23 || c.minute > 59 || c.second > 59) return fail();
  RETURN_IF_ERROR(DtRangeCheck(c));
  return MakeDt(Special::kDateTimeValue, DtJoin(c), aware, offset);
}

// date/datetime.fromisoformat (Python 3.11's forms: YYYY-MM-DD[*HH[:MM[:SS[.fff[fff]]]][Z|±HH:MM]]).
Result<Obj> FromIso(const std::string& s, bool date_only) {
  Civil c;
  auto bad = [&] { return EvalError("ValueError: Invalid isoformat string: " + PyRepr(Value::String(s))); };
  auto digits = [&](std::size_t at, std::size_t n, int64_t* out) {
    if (at + n > s.size()) return false;
    int64_t v = 0;
    for (std::size_t k = at; k < at + n; ++k) {
      if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
      v = v * 10 + (s[k] - '0');
    }
    *out = v;
    return true;
  };
  std::size_t i = 0;
  if (!digits(0, 4, &c.year) || s.size() < 10 || s[4] != '-' || !digits(5, 2, &c.month) || s[7] != '-' || !digits(8, 2, &c.day))
    return bad();
  i = 10;
  bool aware = false;
  int64_t offset = 0;
  if (i < s.size()) {
    if (date_only) return bad();
    ++i;  // any separator
    if (!digits(i, 2, &c.hour)) return bad();
    i += 2;
    if (i < s.size() && s[i] == ':') {
      if (!digits(i + 1, 2, &c.minute)) return bad();
      i += 3;
      if (i < s.size() && s[i] == ':') {
        if (!digits(i + 1, 2, &c.second)) return bad();
        i += 3;
        if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
          std::size_t b = ++i;
          int64_t v = 0;
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - b < 6) v = v * 10 + (s[i++] - '0');
          if (i == b) return bad();
          for (std::size_t k = i - b; k < 6; ++k) v *= 10;
          c.micro = v;
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
        }
      }
    }
    if (i < s.size()) {
      if (s[i] == 'Z' && i + 1 == s.size()) {
        aware = true;
        ++i;
      } else if (s[i] == '+' || s[i] == '-') {
        int sign = s[i] == '-' ? -1 : 1;
        int64_t hh, mm = 0;
        if (!digits(i + 1, 2, &hh)) return bad();
        i += 3;
        if (i < s.size() && s[i] == ':') ++i;
        if (i < s.size() && !digits(i, 2, &mm)) return bad();
        if (i < s.size()) i += 2;
        offset = sign * (hh * 3600 + mm * 60);
        aware = true;
      }
      if (i != s.size()) return bad();
    }
  }
  RETURN_IF_ERROR(DtRangeCheck(c));
  return MakeDt(date_only ? Special::kDateValue : Special::kDateTimeValue, DtJoin(c), aware, offset);
}

}  // namespace dfw::expr::dt
