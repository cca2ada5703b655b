// The datetime module's shared pieces (python_datetime.cc: values, calendar and module calls;
// python_datetime_text.cc: strftime, strptime, fromisoformat), inside the record module only.
#pragma once

#include <cstdint>
#include <string>

#include "record/python_def_interp.h"

namespace dfw::expr::dt {

inline constexpr int64_t kUsPerSec = 1'000'000;
inline constexpr int64_t kUsPerDay = 86'400 * kUsPerSec;
inline const char* const kDays[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
inline const char* const kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                      "July",    "August",   "September", "October", "November", "December"};

struct Civil {
  int64_t year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0, micro = 0;
};

int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d);
void CivilFromDays(int64_t z, int64_t* y, int64_t* m, int64_t* d);
int64_t DtFloorDiv(int64_t a, int64_t b);
bool DtIsLeap(int64_t y);
int DtDaysIn(int64_t y, int64_t m);
Civil DtSplit(int64_t us);
Status DtRangeCheck(const Civil& c);
int64_t DtJoin(const Civil& c);
Obj MakeDt(Special::DtKind kind, int64_t us, bool aware = false, int64_t offset_s = 0);
const Special* AsDt(const Obj* o, Special::DtKind kind);
Result<int64_t> DtIntArg(const Obj* o, const char* what);
std::string DtTwo(int64_t v);
std::string OffsetText(int64_t off, bool colon);
std::string IsoFormat(const Special& d, char sep);
std::string TimedeltaStr(int64_t us);

// Text to and from values (python_datetime_text.cc).
Result<std::string> Strftime(const Special& d, const std::string& fmt);
Result<Obj> Strptime(const std::string& s, const std::string& fmt);
Result<Obj> FromIso(const std::string& s, bool date_only);

}  // namespace dfw::expr::dt
