#include "dfw/record/value.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <openssl/evp.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dfw {

Value Value::FromList(List items) {
  Value v;
  new (&v.l_) std::shared_ptr<const List>(std::make_shared<const List>(std::move(items)));
  v.kind_ = Kind::kList;
  return v;
}

Value Value::FromRow(Row row) {
  Value v;
  new (&v.r_) std::shared_ptr<const Row>(std::make_shared<const Row>(std::move(row)));
  v.kind_ = Kind::kRow;
  return v;
}

std::string_view Value::TypeName() const {
  switch (kind()) {
    case Kind::kNull: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kTimestamp: return "Timestamp";
    case Kind::kString: return "str";
    case Kind::kBytes: return "bytes";
    case Kind::kList: return "list";
    case Kind::kRow: return "row";
  }
  return "?";
}

bool Value::operator==(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (is_int() && o.is_int()) return as_int() == o.as_int();
    return *AsNumber() == *o.AsNumber();
  }
  // Beam's Timestamp.__eq__: a number is read as seconds, to the microsecond.
  if (is_timestamp() && o.is_number()) return o == *this;
  if (is_number() && o.is_timestamp()) {
    const double micros = *AsNumber() * 1e6;
    return micros >= -9.2e18 && micros <= 9.2e18 && static_cast<int64_t>(micros) == o.as_timestamp_us();
  }
  if (kind() != o.kind()) return false;
  switch (kind()) {
    case Kind::kNull: return true;
    case Kind::kBool: return as_bool() == o.as_bool();
    case Kind::kTimestamp: return as_timestamp_us() == o.as_timestamp_us();
    case Kind::kString:
    case Kind::kBytes: return s_ == o.s_;
    case Kind::kList: {
      const List& a = as_list();
      const List& b = o.as_list();
      if (&a == &b) return true;
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) return false;
      return true;
    }
    case Kind::kRow: return &as_row() == &o.as_row() || as_row() == o.as_row();
    default: return false;
  }
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
std::size_t Utf8SeqLen(std::string_view s, std::size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

// JSON is written in two passes over a value: an upper bound of its size (6 bytes per string byte
// for \u00XX escapes, 32 per number), then the bytes through a raw pointer into room made once
// per call. That is one bounds check and one zero-fill per row instead of a checked append per byte.

// 1 for bytes that cannot be copied into a JSON string as they are: controls, '"', '\\', non-ASCII.
constexpr auto kNeedsCare = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) t[static_cast<std::size_t>(c)] = (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) ? 1 : 0;
  return t;
}();

constexpr std::size_t kScalarBound = 32;  // int64 (20), shortest double (24) + ".0", null/true/false

std::size_t StringBound(std::string_view s) { return 2 + 6 * s.size(); }
// Quotes, 4 characters per 3 bytes and EVP_EncodeBlock's terminating NUL.
std::size_t Base64Bound(std::size_t n) { return 3 + 4 * ((n + 2) / 3); }

std::size_t Bound(const Row& row);
std::size_t Bound(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString: return StringBound(v.as_string());
    case Value::Kind::kBytes: return Base64Bound(v.as_bytes().size());
    case Value::Kind::kList: {
      std::size_t n = 2;
      for (const Value& item : v.as_list()) n += 1 + Bound(item);
      return n;
    }
    case Value::Kind::kRow: return Bound(v.as_row());
    default: return kScalarBound;
  }
}
std::size_t Bound(const Row& row) {
  std::size_t n = 2;
  for (const Field& f : row.fields()) {
    // Strings and scalars inline: only lists and rows take the call.
    const Value& v = f.value;
    n += 2 + StringBound(f.name) +
         (v.is_string() ? StringBound(v.as_string()) : (v.is_list() || v.is_row() || v.is_bytes()) ? Bound(v) : kScalarBound);
  }
  return n;
}

char* Put(char* p, std::string_view s) {
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// True when any of the 8 bytes in `w` needs care (kNeedsCare): a byte below 0x20, '"', '\\' or a
// byte with the high bit set. The borrow tricks may also flag a byte above a flagged one, never a
// word with no such byte, so a false answer means the 8 bytes are copied as they are.
inline bool WordNeedsCare(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  const uint64_t quote = w ^ (kOnes * '"');
  const uint64_t backslash = w ^ (kOnes * '\\');
  const uint64_t control = (w - kOnes * 0x20) & ~w;
  return (((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | control | w) & kHigh;
}

// Copies a run of plain bytes shorter than 8 with at most two fixed-size moves (overlapping when
// the run is not a power of two long) instead of a call to memcpy per run.
inline char* PutShortRun(char* p, const char* src, std::size_t n) {
  if (n >= 8) return Put(p, std::string_view(src, n));
  if (n >= 4) {
    uint32_t head, tail;
    std::memcpy(&head, src, 4);
    std::memcpy(&tail, src + n - 4, 4);
    std::memcpy(p, &head, 4);
    std::memcpy(p + n - 4, &tail, 4);
  } else if (n > 0) {
    p[0] = src[0];
    p[n / 2] = src[n / 2];
    p[n - 1] = src[n - 1];
  }
  return p + n;
}

char* PutString(char* p, std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  *p++ = '"';
  const char* src = s.data();
  const std::size_t size = s.size();
  std::size_t i = 0;
  while (true) {
    // Plain bytes go 8 at a time (the bound leaves 6 output bytes per input byte); the run that is
    // left before the next byte needing care (or the end) is then shorter than 8.
    while (size - i >= 8) {
      uint64_t w;
      std::memcpy(&w, src + i, 8);
      if (WordNeedsCare(w)) break;
      std::memcpy(p, &w, 8);
      p += 8;
      i += 8;
    }
    std::size_t j = i;
    while (j < size && !kNeedsCare[static_cast<unsigned char>(src[j])]) ++j;
    p = PutShortRun(p, src + i, j - i);
    i = j;
    if (i >= size) break;
    auto c = static_cast<unsigned char>(src[i]);
    if (c >= 0x80) {
      std::size_t n = Utf8SeqLen(s, i);
      if (n == 0) {  // an invalid byte becomes U+FFFD
        p = Put(p, "\xEF\xBF\xBD");
        ++i;
      } else {
        p = Put(p, s.substr(i, n));
        i += n;
      }
      continue;
    }
    *p++ = '\\';
    switch (c) {
      case '"': *p++ = '"'; break;
      case '\\': *p++ = '\\'; break;
      case '\n': *p++ = 'n'; break;
      case '\r': *p++ = 'r'; break;
      case '\t': *p++ = 't'; break;
      case '\b': *p++ = 'b'; break;
      case '\f': *p++ = 'f'; break;
      default:
        p = Put(p, "u00");
        *p++ = kHex[c >> 4];
        *p++ = kHex[c & 0xF];
    }
    ++i;
  }
  *p++ = '"';
  return p;
}

// Keys and most values are short and plain: one look at at most 16 bytes decides, and the bytes
// go out with fixed-size moves, without PutString's call and loop set-up (a third of its cost for
// a 4-byte key). Anything else takes PutString.
//
// With SSE2 the look is one 16-byte load and three compares, and the copy one 16-byte store. The
// load may read past the text: a std::string's buffer always has 16 bytes (libstdc++ keeps up to
// 15 characters and the NUL in the object's 16-byte local buffer; a longer capacity is allocated
// with room for the NUL), and the bytes past n are masked out. The store may write up to 16 bytes
// past the text's end: AppendBounded leaves kPutSlack bytes after the bound, and whatever follows
// overwrites them or is trimmed.
inline char* PutStringShort(char* p, const std::string& s) {
  const std::size_t n = s.size();
  if (n > 16) return PutString(p, s);
#if defined(__SSE2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data()));
  // Signed bytes: below 0x20 is a control character or (negative) a byte >= 0x80.
  const __m128i care = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                    _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
  const unsigned in_text = n == 16 ? 0xFFFFu : (1u << n) - 1;
  if ((static_cast<unsigned>(_mm_movemask_epi8(care)) & in_text) != 0) return PutString(p, s);
  *p = '"';
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 1), v);
  p[n + 1] = '"';
  return p + n + 2;
#else
  unsigned care = 0;
  for (std::size_t i = 0; i < n; ++i) care |= kNeedsCare[static_cast<unsigned char>(s[i])];
  if (care != 0) return PutString(p, s);
  *p++ = '"';
  if (n >= 8) {
    uint64_t head, tail;
    std::memcpy(&head, s.data(), 8);
    std::memcpy(&tail, s.data() + n - 8, 8);
    std::memcpy(p, &head, 8);
    std::memcpy(p + n - 8, &tail, 8);
    p += n;
  } else {
    p = PutShortRun(p, s.data(), n);
  }
  *p++ = '"';
  return p;
#endif
}

// Python's repr, as Beam's JSON writer prints floats: shortest round-trip digits (fmt's
// Dragonbox, faster than std::to_chars here), fixed notation for exponents in [-4, 16), and
// floats stay recognisable ("1.0", not "1"). Non-finite values become null.
// Fixed notation (nearly every float in practice) is written here from Dragonbox's digits and
// exponent, which skips fmt's general writer (its format-spec handling and digit grouping); the
// exponent form goes through fmt::format_to, the same text as before.
//
// Before that, the short decimals most data holds (prices, rates, measurements: 45.67, 0.5, 3.0)
// skip Dragonbox. m = the nearest integer to |d|·1000; when m / 1000 == |d| (both sides correctly
// rounded from the same real number) the text "m with 3 decimals" reads back as d, and so does m
// without its trailing zeros, the fewest digits that do: any text of at most 3 decimals that reads
// back as d is m's value (|d| < 1e12 puts the 3-decimal grid points of different doubles apart), so
// it is the digit string Dragonbox finds. One multiply, round and divide when it does not apply.
// Limited to 1e-3 <= |d| < 1e12: fixed notation in Python's repr, and m stays below 2^53.
char* PutShortDecimal(char* p, double d) {
  const double a = std::fabs(d);
  if (!(a >= 1e-3 && a < 1e12)) return nullptr;
  const double m = std::round(a * 1000);
  if (m / 1000 != a) return nullptr;
  auto digits = static_cast<uint64_t>(m);
  int k = 3;
  while (k > 0 && digits % 10 == 0) {
    digits /= 10;
    --k;
  }
  static constexpr uint64_t kPow10[] = {1, 10, 100, 1000};
  if (std::signbit(d)) *p++ = '-';
  p = std::to_chars(p, p + 20, digits / kPow10[k]).ptr;
  *p++ = '.';
  if (k == 0) {
    *p++ = '0';
    return p;
  }
  uint64_t frac = digits % kPow10[k];
  for (int i = k - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  return p + k;
}

char* PutDouble(char* p, double d) {
  if (!std::isfinite(d)) return Put(p, "null");
  if (d == 0) return Put(p, std::signbit(d) ? std::string_view("-0.0") : std::string_view("0.0"));
  if (char* end = PutShortDecimal(p, d)) return end;
  const auto dec = fmt::detail::dragonbox::to_decimal(std::fabs(d));
  if (std::signbit(d)) *p++ = '-';
  // The digits go straight to p (at most 17, and the bound leaves 32) and are moved into place.
  char* digits_end = std::to_chars(p, p + kScalarBound - 1, dec.significand).ptr;
  const int n = static_cast<int>(digits_end - p);
  const int point = n + dec.exponent;  // digits before the decimal point (<= 0: leading zeros after "0.")
  if (point - 1 >= -4 && point - 1 < 16) {
    if (dec.exponent >= 0) {  // an integer: the digits, the exponent's zeros, ".0"
      for (int k = 0; k < dec.exponent; ++k) *digits_end++ = '0';
      return Put(digits_end, ".0");
    }
    if (point > 0) {  // "ddd.ddd": the fraction's digits move one place right
      for (int k = n - 1; k >= point; --k) p[k + 1] = p[k];
      p[point] = '.';
      return p + n + 1;
    }
    const int shift = 2 - point;  // "0." and -point zeros go before the digits
    for (int k = n - 1; k >= 0; --k) p[k + shift] = p[k];
    p[0] = '0';
    p[1] = '.';
    for (int k = 2; k < shift; ++k) p[k] = '0';
    return p + n + shift;
  }
  if (std::signbit(d)) --p;  // fmt writes the sign itself
  char* end = fmt::format_to(p, FMT_COMPILE("{}"), d);
  if (std::string_view(p, static_cast<std::size_t>(end - p)).find_first_of(".eEn") == std::string_view::npos) {
    end = Put(end, ".0");
  }
  return end;
}

// Lists already written in this call, so a list shared by two fields (RunInference's
// PredictionResult.example is the input field's list) is formatted once and copied the second time.
// Only long lists are remembered: short ones format faster than they are looked up.
class ListMemo {
 public:
  static constexpr std::size_t kMinItems = 8;
  const char* Find(const List* list, std::size_t* len) const {
    for (int i = 0; i < n_; ++i) {
      if (entries_[i].list == list) {
        *len = entries_[i].len;
        return entries_[i].begin;
      }
    }
    return nullptr;
  }
  void Add(const List* list, const char* begin, std::size_t len) {
    if (n_ < kSlots) entries_[n_++] = {list, begin, len};
  }

 private:
  static constexpr int kSlots = 4;
  struct Entry {
    const List* list;
    const char* begin;
    std::size_t len;
  };
  Entry entries_[kSlots];
  int n_ = 0;
};

char* PutRow(char* p, const Row& row, ListMemo& memo);
char* PutValue(char* p, const Value& v, ListMemo& memo) {
  switch (v.kind()) {
    case Value::Kind::kNull: return Put(p, "null");
    case Value::Kind::kBool: return Put(p, v.as_bool() ? std::string_view("true") : std::string_view("false"));
    case Value::Kind::kInt: return std::to_chars(p, p + kScalarBound, v.as_int()).ptr;
    case Value::Kind::kFloat: return PutDouble(p, v.as_float());
    case Value::Kind::kTimestamp: return PutDouble(p, static_cast<double>(v.as_timestamp_us()) / 1e6);
    case Value::Kind::kString: return PutStringShort(p, v.as_string());
    case Value::Kind::kBytes: {
      const std::string& b = v.as_bytes();
      *p++ = '"';
      // OpenSSL takes an int length: whole 3-byte groups at a time, so the pieces join up.
      constexpr std::size_t kPiece = std::size_t{3} << 20;
      for (std::size_t at = 0; at < b.size(); at += kPiece) {
        const std::size_t n = std::min(kPiece, b.size() - at);
        p += EVP_EncodeBlock(reinterpret_cast<unsigned char*>(p), reinterpret_cast<const unsigned char*>(b.data() + at),
                             static_cast<int>(n));
      }
      *p++ = '"';
      return p;
    }
    case Value::Kind::kList: {
      const List& list = v.as_list();
      const bool remember = list.size() >= ListMemo::kMinItems;
      if (remember) {
        std::size_t len = 0;
        // The earlier copy lies in the same output buffer, before p: the regions never overlap.
        if (const char* earlier = memo.Find(&list, &len)) return Put(p, std::string_view(earlier, len));
      }
      char* begin = p;
      *p++ = '[';
      bool first = true;
      for (const Value& item : list) {
        if (!first) *p++ = ',';
        first = false;
        p = PutValue(p, item, memo);
      }
      *p++ = ']';
      if (remember) memo.Add(&list, begin, static_cast<std::size_t>(p - begin));
      return p;
    }
    case Value::Kind::kRow: return PutRow(p, v.as_row(), memo);
  }
  return p;
}

char* PutRow(char* p, const Row& row, ListMemo& memo) {
  *p++ = '{';
  bool first = true;
  for (const Field& f : row.fields()) {
    if (!first) *p++ = ',';
    first = false;
    p = PutStringShort(p, f.name);
    *p++ = ':';
    p = PutValue(p, f.value, memo);
  }
  *p++ = '}';
  return p;
}

// Makes room for `bound` bytes at the end of `out` and kPutSlack more (PutStringShort's 16-byte
// store), lets `put` write them, trims to what it wrote.
constexpr std::size_t kPutSlack = 16;
template <typename PutFn>
void AppendBounded(std::string& out, std::size_t bound, PutFn put) {
  std::size_t old = out.size();
  out.resize(old + bound + kPutSlack);
  char* end = put(out.data() + old);
  out.resize(static_cast<std::size_t>(end - out.data()));
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  AppendBounded(out, StringBound(s), [&](char* p) { return PutString(p, s); });
}

void Value::AppendJson(std::string& out) const {
  ListMemo memo;
  AppendBounded(out, Bound(*this), [&](char* p) { return PutValue(p, *this, memo); });
}

std::string Value::ToJson() const {
  std::string s;
  AppendJson(s);
  return s;
}

void Row::Set(std::string_view name, Value v) {
  if (Value* existing = FindMutable(name)) {
    *existing = std::move(v);
    return;
  }
  fields_.push_back(Field{std::string(name), std::move(v)});
}

bool Row::Erase(std::string_view name) {
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    if (it->name == name) {
      fields_.erase(it);
      return true;
    }
  }
  return false;
}

bool Row::operator==(const Row& o) const {
  if (fields_.size() != o.fields_.size()) return false;
  for (const Field& f : fields_) {
    const Value* v = o.Find(f.name);
    if (!v || *v != f.value) return false;
  }
  return true;
}

void Row::AppendJson(std::string& out) const {
  ListMemo memo;
  AppendBounded(out, Bound(*this), [&](char* p) { return PutRow(p, *this, memo); });
}

std::string Row::ToJson() const {
  std::string s;
  AppendJson(s);
  return s;
}

}  // namespace dfw
