#include "dfw/record/value_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace dfw {
namespace {

enum Tag : uint8_t {
  kNull = 0, kFalse = 1, kTrue = 2, kInt = 3, kFloat = 4, kString = 5, kList = 6, kRow = 7, kTimestamp = 8, kBytes = 9
};

void AppendBytes(std::string& out, std::string_view s) {
  AppendVarint(out, s.size());
  out.append(s);
}

Result<std::string_view> DecodeBytes(std::string_view& in) {
  ASSIGN_OR_RETURN(uint64_t n, DecodeVarint(in));
  if (n > in.size()) return DataLoss("encoded value: a string of " + std::to_string(n) + " bytes with " +
                                     std::to_string(in.size()) + " left");
  std::string_view s = in.substr(0, n);
  in.remove_prefix(n);
  return s;
}

Result<Value> Decode(std::string_view& in, int depth);

// A length-prefixed byte string whose length fits one varint byte (field names and short strings:
// nearly all of them), taken in place; false leaves `in` untouched for DecodeBytes, which handles
// longer lengths and names what is wrong with damaged ones.
inline bool TakeShortBytes(std::string_view& in, std::string_view& s) {
  if (in.empty()) return false;
  const auto n = static_cast<uint8_t>(in[0]);
  if (n >= 0x80 || n > in.size() - 1) return false;
  s = in.substr(1, n);
  in.remove_prefix(1 + std::size_t{n});
  return true;
}

// One load on a little-endian machine. (GCC 12 at -O2 does not merge the byte loop into a load:
// it stays eight loads, shifts and ors, as the store loop in PutFixed64Raw stayed eight stores.)
inline uint64_t LoadLittleEndian64(const char* p) {
  uint64_t x = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&x, p, 8);
  } else {
    for (int i = 0; i < 8; ++i) x |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return x;
}

// Decodes one value into `out` (a null value): scalars and short strings in place, without a
// Result<Value> and a move per field; lists, rows, long strings and anything damaged or too deep
// go through Decode, so every error reads as it always has.
Status DecodeInto(std::string_view& in, int depth, Value& out) {
  if (depth <= kMaxValueDepth && !in.empty()) {
    switch (static_cast<uint8_t>(in[0])) {
      case kNull: in.remove_prefix(1); return Status::OK();
      case kFalse:
      case kTrue:
        out.AssignBool(static_cast<uint8_t>(in[0]) == kTrue);
        in.remove_prefix(1);
        return Status::OK();
      case kInt:
        if (in.size() < 9) break;
        out.AssignInt(static_cast<int64_t>(LoadLittleEndian64(in.data() + 1)));
        in.remove_prefix(9);
        return Status::OK();
      case kFloat: {
        if (in.size() < 9) break;
        const uint64_t x = LoadLittleEndian64(in.data() + 1);
        double d;
        std::memcpy(&d, &x, sizeof d);
        out.AssignFloat(d);
        in.remove_prefix(9);
        return Status::OK();
      }
      case kString: {
        std::string_view rest = in.substr(1), bytes;
        if (!TakeShortBytes(rest, bytes)) break;
        out.AssignString(bytes);
        in = rest;
        return Status::OK();
      }
      default: break;
    }
  }
  ASSIGN_OR_RETURN(Value v, Decode(in, depth));
  out = std::move(v);
  return Status::OK();
}

// A row's fields after its kind byte: a varint count, then (name, value) pairs, appended to `row`.
// Each field is built in place in the row's vector.
Status DecodeRowFieldsInto(std::string_view& in, int depth, Row& row) {
  ASSIGN_OR_RETURN(uint64_t n, DecodeVarint(in));
  if (n > in.size()) return DataLoss("encoded value: a row of " + std::to_string(n) + " fields with " +
                                     std::to_string(in.size()) + " bytes left");
  std::vector<Field>& fields = row.mutable_fields();
  fields.reserve(fields.size() + n);
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view name;
    if (!TakeShortBytes(in, name)) {
      ASSIGN_OR_RETURN(name, DecodeBytes(in));
    }
    Field& field = fields.emplace_back();
    field.name.append(name.data(), name.size());
    RETURN_IF_ERROR(DecodeInto(in, depth + 1, field.value));
  }
  return Status::OK();
}

Result<Row> DecodeRowFields(std::string_view& in, int depth) {
  Row row;
  RETURN_IF_ERROR(DecodeRowFieldsInto(in, depth, row));
  return row;
}

Result<Value> Decode(std::string_view& in, int depth) {
  if (depth > kMaxValueDepth) return DataLoss("encoded value: nested deeper than " + std::to_string(kMaxValueDepth));
  if (in.empty()) return DataLoss("encoded value: truncated (kind byte expected)");
  const auto tag = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  switch (tag) {
    case kNull: return Value();
    case kFalse: return Value::Bool(false);
    case kTrue: return Value::Bool(true);
    case kInt: {
      ASSIGN_OR_RETURN(uint64_t x, DecodeFixed64(in));
      return Value::Int(static_cast<int64_t>(x));
    }
    case kFloat: {
      ASSIGN_OR_RETURN(uint64_t x, DecodeFixed64(in));
      double d;
      std::memcpy(&d, &x, sizeof d);
      return Value::Float(d);
    }
    case kString: {
      ASSIGN_OR_RETURN(std::string_view s, DecodeBytes(in));
      return Value::String(std::string(s));
    }
    case kBytes: {
      ASSIGN_OR_RETURN(std::string_view s, DecodeBytes(in));
      return Value::Bytes(std::string(s));
    }
    case kTimestamp: {
      ASSIGN_OR_RETURN(uint64_t x, DecodeFixed64(in));
      return Value::Timestamp(static_cast<int64_t>(x));
    }
    case kList: {
      ASSIGN_OR_RETURN(uint64_t n, DecodeVarint(in));
      if (n > in.size()) return DataLoss("encoded value: a list of " + std::to_string(n) + " items with " +
                                         std::to_string(in.size()) + " bytes left");
      List items;
      items.reserve(n);
      for (uint64_t i = 0; i < n; ++i) {
        ASSIGN_OR_RETURN(Value v, Decode(in, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::FromList(std::move(items));
    }
    case kRow: {
      ASSIGN_OR_RETURN(Row row, DecodeRowFields(in, depth));
      return Value::FromRow(std::move(row));
    }
    default: return DataLoss("encoded value: unknown kind byte " + std::to_string(tag));
  }
}

}  // namespace

void AppendFixed64(std::string& out, uint64_t x) {
  char b[8];
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(b, &x, 8);
  } else {
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((x >> (8 * i)) & 0xff);
  }
  out.append(b, 8);
}

Result<uint64_t> DecodeFixed64(std::string_view& in) {
  if (in.size() < 8) return DataLoss("encoded value: truncated (8 bytes expected)");
  const uint64_t x = LoadLittleEndian64(in.data());
  in.remove_prefix(8);
  return x;
}

void AppendVarint(std::string& out, uint64_t n) {
  if (n < 0x80) {  // nearly every length and count: one byte
    out.push_back(static_cast<char>(n));
    return;
  }
  char b[10];
  std::size_t k = 0;
  while (n >= 0x80) {
    b[k++] = static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  b[k++] = static_cast<char>(n);
  out.append(b, k);
}

Result<uint64_t> DecodeVarint(std::string_view& in) {
  uint64_t n = 0;
  for (int i = 0; i < 10; ++i) {
    if (static_cast<std::size_t>(i) >= in.size()) return DataLoss("encoded value: truncated varint");
    const auto b = static_cast<uint8_t>(in[i]);
    if (i == 9 && b > 1) return DataLoss("encoded value: varint over 64 bits");
    n |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      in.remove_prefix(i + 1);
      return n;
    }
  }
  return DataLoss("encoded value: varint longer than 10 bytes");
}

void AppendEncodedValue(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: out.push_back(static_cast<char>(kNull)); break;
    case Value::Kind::kBool: out.push_back(static_cast<char>(v.as_bool() ? kTrue : kFalse)); break;
    case Value::Kind::kInt:
      out.push_back(static_cast<char>(kInt));
      AppendFixed64(out, static_cast<uint64_t>(v.as_int()));
      break;
    case Value::Kind::kFloat: {
      out.push_back(static_cast<char>(kFloat));
      uint64_t x;
      const double d = v.as_float();
      std::memcpy(&x, &d, sizeof x);
      AppendFixed64(out, x);
      break;
    }
    case Value::Kind::kString:
      out.push_back(static_cast<char>(kString));
      AppendBytes(out, v.as_string());
      break;
    case Value::Kind::kBytes:
      out.push_back(static_cast<char>(kBytes));
      AppendBytes(out, v.as_bytes());
      break;
    case Value::Kind::kTimestamp:
      out.push_back(static_cast<char>(kTimestamp));
      AppendFixed64(out, static_cast<uint64_t>(v.as_timestamp_us()));
      break;
    case Value::Kind::kList:
      out.push_back(static_cast<char>(kList));
      AppendVarint(out, v.as_list().size());
      for (const Value& item : v.as_list()) AppendEncodedValue(out, item);
      break;
    case Value::Kind::kRow:
      AppendEncodedRow(out, v.as_row());
      break;
  }
}

void AppendEncodedListHeader(std::string& out, std::size_t n) {
  out.push_back(static_cast<char>(kList));
  AppendVarint(out, n);
}

std::string EncodeValue(const Value& v) {
  std::string out;
  AppendEncodedValue(out, v);
  return out;
}

Result<Value> DecodeValue(std::string_view& in) { return Decode(in, 0); }

namespace {

char* PutVarintRaw(char* p, uint64_t n) {
  while (n >= 0x80) {
    *p++ = static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  *p++ = static_cast<char>(n);
  return p;
}

char* PutFixed64Raw(char* p, uint64_t x) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &x, 8);  // one store (GCC 12 kept the byte loop as eight: 40% of the row writer)
  } else {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((x >> (8 * i)) & 0xff);
  }
  return p + 8;
}

// A row whose fields are all scalars or strings (rows read from files nearly always are) is written
// through one resize and a raw pointer, the same bytes AppendEncodedValue would append one by one.
// False (nothing written) for a row with a list or a nested row. Only the fields `keep(field)`
// accepts are written (the encoding of the row of those fields).
template <typename Keep>
bool AppendFlatRow(std::string& out, const Row& row, Keep keep) {
  constexpr std::size_t kVarintMax = 10;
  std::size_t bound = 1 + kVarintMax, kept = 0;
  for (const Field& f : row.fields()) {
    if (!keep(f)) continue;
    ++kept;
    bound += kVarintMax + f.name.size() + 1;
    switch (f.value.kind()) {
      case Value::Kind::kString: bound += kVarintMax + f.value.as_string().size(); break;
      case Value::Kind::kTimestamp:  // rare: the general writer
      case Value::Kind::kBytes:
      case Value::Kind::kList:
      case Value::Kind::kRow: return false;
      default: bound += 8;
    }
  }
  const std::size_t old = out.size();
  out.resize(old + bound);
  char* p = out.data() + old;
  *p++ = static_cast<char>(kRow);
  p = PutVarintRaw(p, kept);
  for (const Field& f : row.fields()) {
    if (!keep(f)) continue;
    p = PutVarintRaw(p, f.name.size());
    std::memcpy(p, f.name.data(), f.name.size());
    p += f.name.size();
    const Value& v = f.value;
    switch (v.kind()) {
      case Value::Kind::kNull: *p++ = static_cast<char>(kNull); break;
      case Value::Kind::kBool: *p++ = static_cast<char>(v.as_bool() ? kTrue : kFalse); break;
      case Value::Kind::kInt:
        *p++ = static_cast<char>(kInt);
        p = PutFixed64Raw(p, static_cast<uint64_t>(v.as_int()));
        break;
      case Value::Kind::kFloat: {
        *p++ = static_cast<char>(kFloat);
        uint64_t x;
        const double d = v.as_float();
        std::memcpy(&x, &d, sizeof x);
        p = PutFixed64Raw(p, x);
        break;
      }
      case Value::Kind::kString: {
        const std::string& str = v.as_string();
        *p++ = static_cast<char>(kString);
        p = PutVarintRaw(p, str.size());
        std::memcpy(p, str.data(), str.size());
        p += str.size();
        break;
      }
      default: break;  // excluded above
    }
  }
  out.resize(static_cast<std::size_t>(p - out.data()));
  return true;
}

// The encoding of the row of `row`'s fields that `keep` accepts: the flat writer where it can,
// else field by field.
template <typename Keep>
void AppendRowOf(std::string& out, const Row& row, Keep keep) {
  if (AppendFlatRow(out, row, keep)) return;
  out.push_back(static_cast<char>(kRow));
  AppendVarint(out, static_cast<uint64_t>(std::count_if(row.fields().begin(), row.fields().end(), keep)));
  for (const Field& f : row.fields()) {
    if (!keep(f)) continue;
    AppendBytes(out, f.name);
    AppendEncodedValue(out, f.value);
  }
}

}  // namespace

bool AppendEncodedFlatList(std::string& out, const Value* const* items, std::size_t n) {
  constexpr std::size_t kVarintMax = 10;
  std::size_t bound = 1 + kVarintMax;
  for (std::size_t i = 0; i < n; ++i) {
    if (items[i]->is_int()) {
      bound += 9;
    } else if (items[i]->is_string()) {
      bound += 1 + kVarintMax + items[i]->as_string().size();
    } else {
      return false;
    }
  }
  const std::size_t old = out.size();
  out.resize(old + bound);
  char* p = out.data() + old;
  *p++ = static_cast<char>(kList);
  p = PutVarintRaw(p, n);
  for (std::size_t i = 0; i < n; ++i) {
    const Value& v = *items[i];
    if (v.is_int()) {
      *p++ = static_cast<char>(kInt);
      p = PutFixed64Raw(p, static_cast<uint64_t>(v.as_int()));
    } else {
      const std::string& str = v.as_string();
      *p++ = static_cast<char>(kString);
      p = PutVarintRaw(p, str.size());
      std::memcpy(p, str.data(), str.size());
      p += str.size();
    }
  }
  out.resize(static_cast<std::size_t>(p - out.data()));
  return true;
}

void AppendEncodedRow(std::string& out, const Row& row) {
  AppendRowOf(out, row, [](const Field&) { return true; });
}

void AppendEncodedRowFields(std::string& out, const Row& row, const std::vector<uint8_t>& keep) {
  const Field* first = row.fields().data();
  AppendRowOf(out, row, [&](const Field& f) {
    const auto i = static_cast<std::size_t>(&f - first);
    return i < keep.size() && keep[i] != 0;
  });
}

Status DecodeWholeRowInto(std::string_view in, Row& row) {
  row.Clear();
  if (in.empty() || static_cast<uint8_t>(in[0]) != kRow) return DataLoss("encoded value: not a row");
  in.remove_prefix(1);
  RETURN_IF_ERROR(DecodeRowFieldsInto(in, 0, row));
  if (!in.empty()) return DataLoss("encoded value: " + std::to_string(in.size()) + " trailing bytes");
  return Status::OK();
}

Result<Row> DecodeWholeRow(std::string_view in) {
  Row row;
  RETURN_IF_ERROR(DecodeWholeRowInto(in, row));
  return row;
}

Result<Value> DecodeWholeValue(std::string_view in) {
  ASSIGN_OR_RETURN(Value v, Decode(in, 0));
  if (!in.empty()) return DataLoss("encoded value: " + std::to_string(in.size()) + " trailing bytes");
  return v;
}

}  // namespace dfw
