// A compact, exact binary encoding of Values (the shuffle files of a Combine, dfw/pipeline/shuffle.h).
//
// Every Value kind round-trips exactly: ints as 64-bit, floats bit for bit (NaN and infinities
// included, unlike JSON), strings as bytes, lists and rows recursively with field order kept.
// Layout: one kind byte, then for bool one byte, int/float 8 bytes little-endian, string a varint
// length and the bytes, list a varint count and the items, row a varint count and (name, value)
// pairs. Decoding checks every length against the bytes left, so a truncated or corrupt input is
// kDataLoss, never a read past the end; nesting deeper than kMaxValueDepth is refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw {

inline constexpr int kMaxValueDepth = 64;

void AppendEncodedValue(std::string& out, const Value& v);
// The header of an encoded list of `n` items: followed by n AppendEncodedValue calls, it encodes
// the same bytes as AppendEncodedValue of that list (without building the list).
void AppendEncodedListHeader(std::string& out, std::size_t n);
std::string EncodeValue(const Value& v);
// The bytes of AppendEncodedValue(Value::FromList(items)) when every item is an int or a string
// (a shuffle key's usual shape), written with one resize: true. False, `out` untouched, when an
// item is of another kind.
bool AppendEncodedFlatList(std::string& out, const Value* const* items, std::size_t n);
// The bytes AppendEncodedValue writes for Value::FromRow(row), without making that Value; and a
// whole encoded row decoded straight into a Row (anything else is kDataLoss).
void AppendEncodedRow(std::string& out, const Row& row);
// The bytes AppendEncodedRow writes for the row of the fields i of `row` with keep[i] != 0 (in the
// row's order; a field past the end of `keep` is left out), without making that row.
void AppendEncodedRowFields(std::string& out, const Row& row, const std::vector<uint8_t>& keep);
Result<Row> DecodeWholeRow(std::string_view in);
// The same into an existing row, which is cleared first and keeps its field vector's capacity (a
// reader that decodes many rows reuses them). On an error the row holds what was decoded.
Status DecodeWholeRowInto(std::string_view in, Row& row);

// Decodes one Value from the front of `in` and advances it past the bytes used.
Result<Value> DecodeValue(std::string_view& in);
// Decodes `in` as exactly one Value (trailing bytes are kDataLoss).
Result<Value> DecodeWholeValue(std::string_view in);

// 8-byte little-endian integers and varints (LEB128, at most 10 bytes), shared by the shuffle
// file format.
void AppendFixed64(std::string& out, uint64_t x);
Result<uint64_t> DecodeFixed64(std::string_view& in);
void AppendVarint(std::string& out, uint64_t n);
Result<uint64_t> DecodeVarint(std::string_view& in);

}  // namespace dfw
