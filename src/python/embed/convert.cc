#include "convert.h"

#include <cstring>
#include <string_view>

namespace dfw::python_embed {
namespace {

PyObject* g_row_type = nullptr;  // borrowed from the prelude's module, which lives forever
PyObject* g_timestamp = nullptr;  // the prelude's timestamp_from_micros, likewise

// The named-tuple class for `row`'s field names: the previous row's class when the names are the
// same (rows of one batch nearly always share them), else the prelude's cached one.
struct RowTypeCache {
  std::vector<std::string> names;
  PyObject* type = nullptr;  // strong reference
};
thread_local RowTypeCache t_last_type;

PyObject* RowType(const Row& row) {
  RowTypeCache& c = t_last_type;
  bool same = c.type != nullptr && c.names.size() == row.size();
  for (std::size_t i = 0; same && i < row.size(); ++i) same = c.names[i] == row.fields()[i].name;
  if (same) return c.type;
  PyObject* names = PyTuple_New(static_cast<Py_ssize_t>(row.size()));
  if (names == nullptr) return nullptr;
  for (std::size_t i = 0; i < row.size(); ++i) {
    const std::string& n = row.fields()[i].name;
    PyObject* s = PyUnicode_DecodeUTF8(n.data(), static_cast<Py_ssize_t>(n.size()), "surrogateescape");
    if (s == nullptr) {
      Py_DECREF(names);
      return nullptr;
    }
    PyTuple_SET_ITEM(names, static_cast<Py_ssize_t>(i), s);
  }
  PyObject* type = PyObject_CallOneArg(g_row_type, names);
  Py_DECREF(names);
  if (type == nullptr) return nullptr;
  Py_XDECREF(c.type);
  c.type = type;
  c.names.clear();
  for (const Field& f : row.fields()) c.names.push_back(f.name);
  return type;
}

PyObject* ToPythonAt(const Value& v, int depth);

PyObject* RowToPythonAt(const Row& row, int depth) {
  PyObject* type = RowType(row);
  if (type == nullptr) return nullptr;
  Py_INCREF(type);  // a nested row may replace the cached class while this one is being built
  PyObject* items = PyTuple_New(static_cast<Py_ssize_t>(row.size()));
  if (items == nullptr) {
    Py_DECREF(type);
    return nullptr;
  }
  for (std::size_t i = 0; i < row.size(); ++i) {
    PyObject* item = ToPythonAt(row.fields()[i].value, depth + 1);
    if (item == nullptr) {
      Py_DECREF(items);
      Py_DECREF(type);
      return nullptr;
    }
    PyTuple_SET_ITEM(items, static_cast<Py_ssize_t>(i), item);
  }
  // tuple.__new__(type, items): what a named tuple's own __new__ does, without its Python frame.
  PyObject* args = PyTuple_Pack(1, items);
  Py_DECREF(items);
  if (args == nullptr) {
    Py_DECREF(type);
    return nullptr;
  }
  PyObject* out = PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(type), args, nullptr);
  Py_DECREF(args);
  Py_DECREF(type);
  return out;
}

PyObject* ToPythonAt(const Value& v, int depth) {
  if (depth > kMaxNesting) {
    PyErr_Format(PyExc_ValueError, "value nested deeper than %d levels", kMaxNesting);
    return nullptr;
  }
  switch (v.kind()) {
    case Value::Kind::kNull: Py_RETURN_NONE;
    case Value::Kind::kBool: return PyBool_FromLong(v.as_bool() ? 1 : 0);
    case Value::Kind::kInt: return PyLong_FromLongLong(v.as_int());
    case Value::Kind::kFloat: return PyFloat_FromDouble(v.as_float());
    case Value::Kind::kString: {
      const std::string& s = v.as_string();
      return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
    }
    case Value::Kind::kBytes: {
      const std::string& b = v.as_bytes();
      return PyBytes_FromStringAndSize(b.data(), static_cast<Py_ssize_t>(b.size()));
    }
    case Value::Kind::kTimestamp: {
      PyObject* micros = PyLong_FromLongLong(v.as_timestamp_us());
      if (micros == nullptr) return nullptr;
      PyObject* t = PyObject_CallOneArg(g_timestamp, micros);
      Py_DECREF(micros);
      return t;
    }
    case Value::Kind::kList: {
      const List& l = v.as_list();
      PyObject* out = PyList_New(static_cast<Py_ssize_t>(l.size()));
      if (out == nullptr) return nullptr;
      for (std::size_t i = 0; i < l.size(); ++i) {
        PyObject* item = ToPythonAt(l[i], depth + 1);
        if (item == nullptr) {
          Py_DECREF(out);
          return nullptr;
        }
        PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), item);
      }
      return out;
    }
    case Value::Kind::kRow: return RowToPythonAt(v.as_row(), depth);
  }
  Py_RETURN_NONE;
}

std::string TypeNameOf(PyObject* obj) { return Py_TYPE(obj)->tp_name; }

Status TypeError(std::string message) { return InvalidArgument("TypeError: " + std::move(message)); }

Result<std::string> Utf8(PyObject* s) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s, &n);
  if (p == nullptr) {
    PyErr_Clear();
    return InvalidArgument("UnicodeEncodeError: a str with a lone surrogate cannot be UTF-8");
  }
  return std::string(p, static_cast<std::size_t>(n));
}

Result<Value> TimestampOf(PyObject* obj) {
  PyObject* micros = PyObject_GetAttrString(obj, "micros");
  if (micros == nullptr) {
    PyErr_Clear();
    return TypeError("a Timestamp without 'micros'");
  }
  int overflow = 0;
  const long long us = PyLong_Check(micros) ? PyLong_AsLongLongAndOverflow(micros, &overflow) : -1;
  const bool bad = !PyLong_Check(micros) || overflow != 0 || (us == -1 && PyErr_Occurred());
  Py_DECREF(micros);
  if (bad) {
    PyErr_Clear();
    return InvalidArgument("OverflowError: a Timestamp's micros must be a 64-bit int");
  }
  return Value::Timestamp(us);
}

class FromPythonConverter {
 public:
  Result<Value> Convert(PyObject* obj, int depth) {
    if (depth > kMaxNesting) return InvalidArgument("ValueError: result nested deeper than " + std::to_string(kMaxNesting) + " levels");
    if (++nodes_ > kMaxNodes) {
      return InvalidArgument("ValueError: result holds more than " + std::to_string(kMaxNodes) +
                             " values (a container shared many times over, or holding itself?)");
    }
    if (obj == Py_None) return Value();
    if (PyBool_Check(obj)) return Value::Bool(obj == Py_True);
    if (PyLong_Check(obj)) {
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(obj, &overflow);
      if (overflow != 0) return InvalidArgument("OverflowError: int too large for a 64-bit integer");
      if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return InvalidArgument("TypeError: cannot read an int from " + TypeNameOf(obj));
      }
      return Value::Int(x);
    }
    if (PyFloat_Check(obj)) return Value::Float(PyFloat_AS_DOUBLE(obj));
    if (PyUnicode_Check(obj)) {
      ASSIGN_OR_RETURN(std::string s, Utf8(obj));
      return Value::String(std::move(s));
    }
    if (PyBytes_Check(obj)) {
      return Value::Bytes(std::string(PyBytes_AS_STRING(obj), static_cast<std::size_t>(PyBytes_GET_SIZE(obj))));
    }
    if (PyByteArray_Check(obj)) {
      return Value::Bytes(std::string(PyByteArray_AS_STRING(obj), static_cast<std::size_t>(PyByteArray_GET_SIZE(obj))));
    }
    if (PyTuple_Check(obj)) {
      PyObject* fields = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj)), "_fields");
      if (fields == nullptr) PyErr_Clear();
      if (fields != nullptr && PyTuple_Check(fields) && PyTuple_GET_SIZE(fields) == PyTuple_GET_SIZE(obj)) {
        Result<Value> row = NamedTuple(obj, fields, depth);
        Py_DECREF(fields);
        return row;
      }
      Py_XDECREF(fields);
      return Sequence(obj, depth);
    }
    if (PyList_Check(obj)) return Sequence(obj, depth);
    if (PyDict_Check(obj)) return Dict(obj, depth);
    // beam.Row (the prelude's class, or Beam's own when it is installed): fields in __dict__.
    if (std::string_view(Py_TYPE(obj)->tp_name) == "Row") {
      PyObject* d = PyObject_GetAttrString(obj, "__dict__");
      if (d == nullptr) PyErr_Clear();
      if (d != nullptr && PyDict_Check(d)) {
        Result<Value> row = Dict(d, depth);
        Py_DECREF(d);
        return row;
      }
      Py_XDECREF(d);
    }
    // A Timestamp (the prelude's, or Beam's own when it is installed): its whole microseconds.
    if (std::string_view(Py_TYPE(obj)->tp_name) == "Timestamp") return TimestampOf(obj);
    return TypeError("a result of type '" + TypeNameOf(obj) +
                     "' is not a dfworker value (None, bool, int, float, str, bytes, Timestamp, list, tuple, dict, a "
                     "named tuple or beam.Row)");
  }

 private:
  Result<Value> Sequence(PyObject* seq, int depth) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject** items = PySequence_Fast_ITEMS(seq);
    List out;
    out.reserve(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(Value v, Convert(items[i], depth + 1));
      out.push_back(std::move(v));
    }
    return Value::FromList(std::move(out));
  }

  Result<Value> NamedTuple(PyObject* obj, PyObject* fields, int depth) {
    Row row;
    row.Reserve(static_cast<std::size_t>(PyTuple_GET_SIZE(obj)));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); ++i) {
      PyObject* name = PyTuple_GET_ITEM(fields, i);
      if (!PyUnicode_Check(name)) return TypeError("a named tuple field name is not a str");
      ASSIGN_OR_RETURN(std::string key, Utf8(name));
      ASSIGN_OR_RETURN(Value v, Convert(PyTuple_GET_ITEM(obj, i), depth + 1));
      row.AppendNull(key) = std::move(v);
    }
    return Value::FromRow(std::move(row));
  }

  Result<Value> Dict(PyObject* dict, int depth) {
    Row row;
    row.Reserve(static_cast<std::size_t>(PyDict_GET_SIZE(dict)));
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict, &pos, &key, &value)) {
      if (!PyUnicode_Check(key)) return TypeError("a dict key of type '" + TypeNameOf(key) + "' cannot be a field name (str keys only)");
      ASSIGN_OR_RETURN(std::string name, Utf8(key));
      ASSIGN_OR_RETURN(Value v, Convert(value, depth + 1));
      row.AppendNull(name) = std::move(v);
    }
    return Value::FromRow(std::move(row));
  }

  long nodes_ = 0;
};

}  // namespace

void SetRowTypeFactory(PyObject* factory) { g_row_type = factory; }
void SetTimestampFactory(PyObject* factory) { g_timestamp = factory; }

PyObject* ToPython(const Value& v) { return ToPythonAt(v, 0); }
PyObject* RowToPython(const Row& row) { return RowToPythonAt(row, 0); }

Result<Value> FromPython(PyObject* obj) { return FromPythonConverter().Convert(obj, 0); }

Status FetchError(PyObject* describe) {
  PyObject* type = nullptr;
  PyObject* exc = nullptr;
  PyObject* tb = nullptr;
  PyErr_Fetch(&type, &exc, &tb);
  if (type == nullptr) return Internal("a Python call failed without an exception");
  PyErr_NormalizeException(&type, &exc, &tb);
  if (tb != nullptr && exc != nullptr) PyException_SetTraceback(exc, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  if (exc == nullptr) return Internal("a Python call failed without an exception value");
  const bool memory = PyErr_GivenExceptionMatches(exc, PyExc_MemoryError);
  std::string text;
  PyObject* s = describe != nullptr ? PyObject_CallOneArg(describe, exc) : PyObject_Str(exc);
  if (s != nullptr && PyUnicode_Check(s)) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(s, &n);
    if (p != nullptr) text.assign(p, static_cast<std::size_t>(n));
  }
  Py_XDECREF(s);
  PyErr_Clear();
  if (text.empty()) text = Py_TYPE(exc)->tp_name;
  Py_DECREF(exc);
  return Status(memory ? StatusCode::kResourceExhausted : StatusCode::kInvalidArgument, std::move(text));
}

}  // namespace dfw::python_embed
