// Rows <-> Avro values (avro-c's generic values), with Beam's schema mapping:
//   Beam (dfworker value)  ->  Avro            Avro                  ->  dfworker value
//   bool                       boolean         boolean                   bool
//   int (INT64)                long            int, long                 int
//   float (DOUBLE)             double          float, double             float
//   str                        string          string, enum symbol       str
//   list                       array           bytes, fixed              str (the raw bytes)
//   row                        record          array                     list
//   null / absent in a row     ["null", T]     record, map               row
//   (no value in any row)      "null"          union                     its branch's value
// dfworker has no bytes type: Avro bytes and fixed read as strings holding the raw bytes.
#pragma once

#include <avro.h>

#include <memory>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw::stages_io {

struct AvroField;

// The Avro type of one field, derived from the rows a writer was given (what Beam derives from
// the PCollection's schema).
struct AvroFieldType {
  enum class Kind { kNull, kBoolean, kLong, kDouble, kString, kBytes, kTimestamp, kArray, kRecord };
  Kind kind = Kind::kNull;  // kNull until a non-null value is seen
  bool nullable = false;    // some row had null here or lacked the field
  std::unique_ptr<AvroFieldType> items;  // kArray
  std::vector<AvroField> fields;          // kRecord, in first-seen order
};

struct AvroField {
  std::string name;
  AvroFieldType type;
};

// Accumulates the record type of a set of rows. A value whose type conflicts with the type the
// earlier rows gave the field (a string where they had a long) is kInvalidArgument naming the
// field; an int where the field is a double (or the reverse) makes it a double.
class AvroSchemaBuilder {
 public:
  Status Add(const Row& row);
  const AvroFieldType& root() const { return root_; }
  // The Avro schema JSON: a record named `name`, nested records named <name>_<field>.
  std::string ToJson(const std::string& name) const;

 private:
  AvroFieldType root_{AvroFieldType::Kind::kRecord, false, nullptr, {}};
  int64_t rows_ = 0;
};

// Fills `dst` (a generic value of the schema made from `type`) from `row`.
Status RowToAvro(const AvroFieldType& type, const Row& row, avro_value_t* dst);

// Converts a value read from a file; a record becomes a Row. Nesting deeper than 64 levels is
// kDataLoss (a hostile schema must not exhaust the stack).
Status AvroToValue(avro_value_t* src, Value& out);

// OK when `schema` is a record whose values can be read without unbounded recursion; otherwise
// kDataLoss saying why (not a record: ReadFromAvro reads rows; a record that contains itself with
// no union, array or map in between can never end).
Status CheckReadableSchema(avro_schema_t schema);

// True when a value of `schema` may encode to zero bytes (null, an empty record, fixed(0)), so a
// block's record count is the only bound on how many a file yields.
bool CanEncodeToZeroBytes(avro_schema_t schema);

}  // namespace dfw::stages_io
