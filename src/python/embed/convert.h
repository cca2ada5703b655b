// Private to libdfw_python.so: dfworker values to Python objects and back, under the GIL.
//
// To Python: null/bool/int/float/str/bytes as themselves, a Timestamp as the prelude's Timestamp
// (Beam's: whole microseconds, Beam's repr), a list as a list, a row as an instance of the
// named-tuple class the prelude keeps per field-name tuple (Beam hands rows to callables as
// schema'd named tuples: row.field, row[i], row._asdict()).
// From Python: None, bool, int (64-bit; larger is OverflowError), float, str, bytes and bytearray,
// a Timestamp (any class of that name with int `micros`: Beam's own too), list and tuple as a
// list, dict (str keys), named tuples and beam.Row as a row. Anything else is a TypeError naming
// the type. Nesting deeper than kMaxNesting or more than kMaxNodes values (a list holding itself,
// or sub-lists shared 2^60 times) is a ValueError, never unbounded recursion or memory.
#pragma once

#include <Python.h>

#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/record/value.h"

namespace dfw::python_embed {

inline constexpr int kMaxNesting = 500;
inline constexpr long kMaxNodes = 1L << 22;

// The prelude's `row_type(names)` function; set once at start-up.
void SetRowTypeFactory(PyObject* factory);
// The prelude's `timestamp_from_micros(micros)`; set once at start-up.
void SetTimestampFactory(PyObject* factory);

// A new reference, or nullptr with a Python exception set.
PyObject* ToPython(const Value& v);
PyObject* RowToPython(const Row& row);

// The value of `obj`; on failure the Status carries "TypeName: message" (no Python error is left set).
Result<Value> FromPython(PyObject* obj);

// The pending Python exception as "TypeName: message" (cleared), with its kind: MemoryError is
// kResourceExhausted, everything else kInvalidArgument. `describe` is the prelude's
// describe(exc) (it adds the line for syntax errors and callables' frames); may be nullptr.
Status FetchError(PyObject* describe);

}  // namespace dfw::python_embed
