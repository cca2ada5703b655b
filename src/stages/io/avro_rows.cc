#include "avro_rows.h"

#include <cerrno>
#include <cstring>
#include <set>

#include <fmt/format.h>

namespace dfw::stages_io {
namespace {

using Kind = AvroFieldType::Kind;

constexpr int kMaxAvroDepth = 64;

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kNull: return "null";
    case Kind::kBoolean: return "boolean";
    case Kind::kLong: return "long";
    case Kind::kDouble: return "double";
    case Kind::kString: return "string";
    case Kind::kBytes: return "bytes";
    case Kind::kTimestamp: return "timestamp";
    case Kind::kArray: return "array";
    case Kind::kRecord: return "record";
  }
  return "?";
}

Kind KindOf(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return Kind::kNull;
    case Value::Kind::kBool: return Kind::kBoolean;
    case Value::Kind::kInt: return Kind::kLong;
    case Value::Kind::kFloat: return Kind::kDouble;
    case Value::Kind::kString: return Kind::kString;
    case Value::Kind::kBytes: return Kind::kBytes;
    case Value::Kind::kTimestamp: return Kind::kTimestamp;
    case Value::Kind::kList: return Kind::kArray;
    case Value::Kind::kRow: return Kind::kRecord;
  }
  return Kind::kNull;
}

Status MergeValue(AvroFieldType& t, const Value& v, const std::string& where, int depth);

// A record type over one more row: fields it lacks become nullable, new fields are nullable
// when earlier rows lacked them.
Status MergeRow(AvroFieldType& t, const Row& row, bool first, const std::string& where, int depth) {
  if (depth > kMaxAvroDepth) return InvalidArgument(fmt::format("'{}' nests deeper than {} levels", where, kMaxAvroDepth));
  for (auto& [name, ft] : t.fields) {
    if (!row.Has(name)) ft.nullable = true;
  }
  for (const Field& f : row.fields()) {
    AvroFieldType* ft = nullptr;
    for (auto& [name, existing] : t.fields) {
      if (name == f.name) ft = &existing;
    }
    if (ft == nullptr) {
      t.fields.push_back(AvroField{f.name, AvroFieldType{}});
      ft = &t.fields.back().type;
      ft->nullable = !first;
    }
    RETURN_IF_ERROR(MergeValue(*ft, f.value, where.empty() ? f.name : where + "." + f.name, depth + 1));
  }
  return Status::OK();
}

Status MergeValue(AvroFieldType& t, const Value& v, const std::string& where, int depth) {
  const Kind k = KindOf(v);
  if (k == Kind::kNull) {
    t.nullable = true;
    return Status::OK();
  }
  const bool first = t.kind == Kind::kNull;
  if (first) {
    t.kind = k;
    if (k == Kind::kArray) t.items = std::make_unique<AvroFieldType>();
  } else if (t.kind != k) {
    if ((t.kind == Kind::kLong && k == Kind::kDouble) || (t.kind == Kind::kDouble && k == Kind::kLong)) {
      t.kind = Kind::kDouble;
      return Status::OK();
    }
    return InvalidArgument(fmt::format("field '{}' is a {} in this row but a {} in earlier rows; an Avro file has one schema",
                                       where, KindName(k), KindName(t.kind)));
  }
  if (k == Kind::kArray) {
    for (const Value& item : v.as_list()) RETURN_IF_ERROR(MergeValue(*t.items, item, where + "[]", depth + 1));
  } else if (k == Kind::kRecord) {
    RETURN_IF_ERROR(MergeRow(t, v.as_row(), first, where, depth + 1));
  }
  return Status::OK();
}

void AppendName(std::string& out, std::string_view s) { AppendJsonString(out, s); }

void AppendType(std::string& out, const AvroFieldType& t, const std::string& record_name) {
  std::string body;
  switch (t.kind) {
    case Kind::kNull: out += "\"null\""; return;
    case Kind::kBoolean: body = "\"boolean\""; break;
    case Kind::kLong: body = "\"long\""; break;
    case Kind::kDouble: body = "\"double\""; break;
    case Kind::kString: body = "\"string\""; break;
    case Kind::kBytes: body = "\"bytes\""; break;
    // Microseconds since the epoch as a long: avro-c writes schemas without logical types (it drops
    // a timestamp-micros annotation), so the file says long and reads back as an int.
    case Kind::kTimestamp: body = "\"long\""; break;
    case Kind::kArray:
      body = "{\"type\":\"array\",\"items\":";
      AppendType(body, *t.items, record_name + "_item");
      body += "}";
      break;
    case Kind::kRecord: {
      body = "{\"type\":\"record\",\"name\":";
      AppendName(body, record_name);
      body += ",\"fields\":[";
      bool comma = false;
      for (const auto& [name, ft] : t.fields) {
        if (comma) body += ",";
        comma = true;
        body += "{\"name\":";
        AppendName(body, name);
        body += ",\"type\":";
        AppendType(body, ft, record_name + "_" + name);
        body += "}";
      }
      body += "]}";
      break;
    }
  }
  if (t.nullable) {
    out += "[\"null\",";
    out += body;
    out += "]";
  } else {
    out += body;
  }
}

Status AvroError(const char* what) { return InvalidArgument(fmt::format("{}: {}", what, avro_strerror())); }

Status FillValue(const AvroFieldType& t, const Value& v, avro_value_t* dst, const std::string& where);

Status FillRecord(const AvroFieldType& t, const Row& row, avro_value_t* dst, const std::string& where) {
  for (std::size_t i = 0; i < t.fields.size(); ++i) {
    const auto& [name, ft] = t.fields[i];
    avro_value_t child;
    if (avro_value_get_by_index(dst, i, &child, nullptr) != 0) return AvroError("avro record field");
    const Value* v = row.Find(name);
    static const Value kNullValue;
    RETURN_IF_ERROR(FillValue(ft, v != nullptr ? *v : kNullValue, &child, where.empty() ? name : where + "." + name));
  }
  return Status::OK();
}

Status FillNonNull(const AvroFieldType& t, const Value& v, avro_value_t* dst, const std::string& where) {
  const Kind k = KindOf(v);
  const bool fits = k == t.kind || (t.kind == Kind::kDouble && k == Kind::kLong);
  if (!fits) {
    return InvalidArgument(fmt::format("field '{}' is {} where the schema has {}", where,
                                       k == Kind::kNull ? "null" : KindName(k), KindName(t.kind)));
  }
  int rc = 0;
  switch (t.kind) {
    case Kind::kNull: rc = avro_value_set_null(dst); break;
    case Kind::kBoolean: rc = avro_value_set_boolean(dst, v.as_bool() ? 1 : 0); break;
    case Kind::kLong: rc = avro_value_set_long(dst, v.as_int()); break;
    case Kind::kDouble: rc = avro_value_set_double(dst, v.AsNumber().value_or(0)); break;
    case Kind::kString: {
      const std::string& s = v.as_string();
      // The size counts the NUL terminator that c_str() guarantees.
      rc = avro_value_set_string_len(dst, s.c_str(), s.size() + 1);
      break;
    }
    case Kind::kBytes: {
      const std::string& b = v.as_bytes();
      rc = avro_value_set_bytes(dst, const_cast<char*>(b.data()), b.size());
      break;
    }
    case Kind::kTimestamp: rc = avro_value_set_long(dst, v.as_timestamp_us()); break;
    case Kind::kArray:
      for (const Value& item : v.as_list()) {
        avro_value_t child;
        if (avro_value_append(dst, &child, nullptr) != 0) return AvroError("avro array append");
        RETURN_IF_ERROR(FillValue(*t.items, item, &child, where + "[]"));
      }
      break;
    case Kind::kRecord: return FillRecord(t, v.as_row(), dst, where);
  }
  if (rc != 0) return AvroError("avro value");
  return Status::OK();
}

Status FillValue(const AvroFieldType& t, const Value& v, avro_value_t* dst, const std::string& where) {
  if (t.kind == Kind::kNull) return avro_value_set_null(dst) == 0 ? Status::OK() : AvroError("avro null");
  if (!t.nullable) return FillNonNull(t, v, dst, where);
  avro_value_t branch;
  if (avro_value_set_branch(dst, v.is_null() ? 0 : 1, &branch) != 0) return AvroError("avro union branch");
  if (v.is_null()) return avro_value_set_null(&branch) == 0 ? Status::OK() : AvroError("avro null");
  return FillNonNull(t, v, &branch, where);
}

Status ReadError(const char* what) {
  return DataLoss(fmt::format("cannot read Avro {}: {}", what, avro_strerror()));
}

Status ToValue(avro_value_t* src, Value& out, int depth) {
  if (depth > kMaxAvroDepth) return DataLoss(fmt::format("Avro value nests deeper than {} levels", kMaxAvroDepth));
  switch (avro_value_get_type(src)) {
    case AVRO_NULL: out = Value(); return Status::OK();
    case AVRO_BOOLEAN: {
      int b = 0;
      if (avro_value_get_boolean(src, &b) != 0) return ReadError("boolean");
      out.AssignBool(b != 0);
      return Status::OK();
    }
    case AVRO_INT32: {
      int32_t i = 0;
      if (avro_value_get_int(src, &i) != 0) return ReadError("int");
      out.AssignInt(i);
      return Status::OK();
    }
    case AVRO_INT64: {
      int64_t i = 0;
      if (avro_value_get_long(src, &i) != 0) return ReadError("long");
      out.AssignInt(i);
      return Status::OK();
    }
    case AVRO_FLOAT: {
      float f = 0;
      if (avro_value_get_float(src, &f) != 0) return ReadError("float");
      out.AssignFloat(f);
      return Status::OK();
    }
    case AVRO_DOUBLE: {
      double d = 0;
      if (avro_value_get_double(src, &d) != 0) return ReadError("double");
      out.AssignFloat(d);
      return Status::OK();
    }
    case AVRO_STRING: {
      const char* s = nullptr;
      size_t size = 0;  // counts the NUL terminator
      if (avro_value_get_string(src, &s, &size) != 0) return ReadError("string");
      out.AssignString(std::string_view(s != nullptr ? s : "", size > 0 ? size - 1 : 0));
      return Status::OK();
    }
    case AVRO_BYTES: {
      const void* b = nullptr;
      size_t size = 0;
      if (avro_value_get_bytes(src, &b, &size) != 0) return ReadError("bytes");
      out = Value::Bytes(std::string(static_cast<const char*>(b), b != nullptr ? size : 0));
      return Status::OK();
    }
    case AVRO_FIXED: {
      const void* b = nullptr;
      size_t size = 0;
      if (avro_value_get_fixed(src, &b, &size) != 0) return ReadError("fixed");
      out = Value::Bytes(std::string(static_cast<const char*>(b), b != nullptr ? size : 0));
      return Status::OK();
    }
    case AVRO_ENUM: {
      int idx = 0;
      if (avro_value_get_enum(src, &idx) != 0) return ReadError("enum");
      const char* symbol = avro_schema_enum_get(avro_value_get_schema(src), idx);
      if (symbol == nullptr) return DataLoss(fmt::format("Avro enum index {} is not in the schema", idx));
      out.AssignString(symbol);
      return Status::OK();
    }
    case AVRO_ARRAY: {
      size_t n = 0;
      if (avro_value_get_size(src, &n) != 0) return ReadError("array");
      List items;
      items.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        avro_value_t child;
        if (avro_value_get_by_index(src, i, &child, nullptr) != 0) return ReadError("array item");
        RETURN_IF_ERROR(ToValue(&child, items.emplace_back(), depth + 1));
      }
      out = Value::FromList(std::move(items));
      return Status::OK();
    }
    case AVRO_MAP:
    case AVRO_RECORD: {
      size_t n = 0;
      if (avro_value_get_size(src, &n) != 0) return ReadError("record");
      Row row;
      row.Reserve(n);
      for (size_t i = 0; i < n; ++i) {
        avro_value_t child;
        const char* name = nullptr;
        if (avro_value_get_by_index(src, i, &child, &name) != 0) return ReadError("field");
        Value v;
        RETURN_IF_ERROR(ToValue(&child, v, depth + 1));
        row.Set(name != nullptr ? name : "", std::move(v));
      }
      out = Value::FromRow(std::move(row));
      return Status::OK();
    }
    case AVRO_UNION: {
      avro_value_t branch;
      if (avro_value_get_current_branch(src, &branch) != 0) return ReadError("union");
      return ToValue(&branch, out, depth + 1);
    }
    case AVRO_LINK: break;
  }
  return DataLoss("Avro value of an unknown type");
}

avro_schema_t Resolve(avro_schema_t s) {
  for (int i = 0; i < kMaxAvroDepth && is_avro_link(s); ++i) s = avro_schema_link_target(s);
  return s;
}

// A record reachable from itself through record fields alone (no union, array or map, which may
// end the nesting) would need infinite data; `open` holds the records on the current path.
bool HasEndlessRecord(avro_schema_t s, std::set<avro_schema_t>& open, int depth) {
  s = Resolve(s);
  if (depth > kMaxAvroDepth || is_avro_link(s)) return true;
  if (!is_avro_record(s)) return false;
  if (!open.insert(s).second) return true;
  for (size_t i = 0; i < avro_schema_record_size(s); ++i) {
    if (HasEndlessRecord(avro_schema_record_field_get_by_index(s, static_cast<int>(i)), open, depth + 1)) return true;
  }
  open.erase(s);
  return false;
}

bool ZeroBytes(avro_schema_t s, int depth) {
  s = Resolve(s);
  if (depth > kMaxAvroDepth) return true;
  if (is_avro_null(s)) return true;
  if (is_avro_fixed(s)) return avro_schema_fixed_size(s) == 0;
  if (!is_avro_record(s)) return false;
  for (size_t i = 0; i < avro_schema_record_size(s); ++i) {
    if (!ZeroBytes(avro_schema_record_field_get_by_index(s, static_cast<int>(i)), depth + 1)) return false;
  }
  return true;
}

}  // namespace

Status AvroSchemaBuilder::Add(const Row& row) {
  RETURN_IF_ERROR(MergeRow(root_, row, rows_ == 0, "", 0));
  ++rows_;
  return Status::OK();
}

std::string AvroSchemaBuilder::ToJson(const std::string& name) const {
  std::string out;
  AppendType(out, root_, name);
  return out;
}

Status RowToAvro(const AvroFieldType& type, const Row& row, avro_value_t* dst) {
  if (avro_value_reset(dst) != 0) return AvroError("avro reset");
  return FillRecord(type, row, dst, "");
}

Status AvroToValue(avro_value_t* src, Value& out) { return ToValue(src, out, 0); }

Status CheckReadableSchema(avro_schema_t schema) {
  avro_schema_t s = Resolve(schema);
  if (!is_avro_record(s)) {
    return DataLoss(fmt::format("the file's Avro schema is '{}', not a record; ReadFromAvro reads records as rows",
                                s != nullptr ? avro_schema_type_name(s) : "?"));
  }
  std::set<avro_schema_t> open;
  if (HasEndlessRecord(s, open, 0)) {
    return DataLoss("the file's Avro schema has a record that contains itself with no union, array or map in between "
                    "(or nests deeper than 64 levels)");
  }
  return Status::OK();
}

bool CanEncodeToZeroBytes(avro_schema_t schema) { return ZeroBytes(schema, 0); }

}  // namespace dfw::stages_io
