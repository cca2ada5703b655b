// Private to the expression evaluator: the compiled form of an expression and the helpers the
// lexer, parser, evaluator, builtins and methods share. Not a public contract.
//
// A Program is a flat vector of nodes (children referenced by index, root last). It is built once
// by the parser and only read afterwards, so one Program may be evaluated from many threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/common/strings.h"
#include "dfw/record/expression.h"
#include "dfw/record/value.h"

namespace dfw::expr {

// Deepest AST (and parser recursion) accepted; keeps evaluation recursion far from the stack end.
inline constexpr int kMaxDepth = 200;
// Bytes one evaluation may spend building strings and lists (repeat, concat, join, split...).
inline constexpr int64_t kEvalBudgetBytes = int64_t{64} << 20;
// Most arguments a builtin or method call may pass.
inline constexpr int kMaxCallArgs = 16;

enum class NodeKind : uint8_t {
  kConst,    // value
  kName,     // name: a row field
  kUnary,    // op, kids[0]
  kBinary,   // op, kids[0] OP kids[1]
  kAnd,      // kids[0] and kids[1] and ...
  kOr,       // kids[0] or kids[1] or ...
  kCompare,  // kids[0] ops[0] kids[1] ops[1] kids[2] ...
  kIf,       // kids[0] if kids[1] else kids[2]
  kIndex,    // kids[0][kids[1]]
  kSlice,    // kids[0][kids[1]:kids[2]:kids[3]], absent parts are -1
  kAttr,     // kids[0].name (nested row field)
  kCall,     // builtin fn(kids...), -1 for an omitted optional argument
  kMethod,   // kids[0].method fn(kids[1...])
  kList,     // [kids...]
};

inline constexpr uint8_t kNoMethod = 255;

enum class Op : uint8_t {
  kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kBitAnd, kBitOr, kBitXor, kShl, kShr,  // binary
  kNeg, kPos, kNot, kInvert,                                                          // unary
  kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn, kIs, kIsNot,                             // compare
};

// Where a kName node's field was found last: the rows of a batch (and of a job) mostly share one
// layout, so the lookup first tries that index and only scans when the name is not there. Shared
// by every thread evaluating the program (a relaxed atomic: a stale index only costs the scan);
// copies start cold.
struct FieldHint {
  mutable std::atomic<int32_t> index{-1};
  FieldHint() = default;
  FieldHint(const FieldHint&) {}
  FieldHint& operator=(const FieldHint&) { return *this; }
};

struct Node {
  NodeKind kind = NodeKind::kConst;
  Op op = Op::kAdd;
  uint8_t fn = 0;        // Builtin or Method id for kCall / kMethod
  int column = 0;        // 1-based source column of the construct
  std::vector<int32_t> kids;
  std::vector<Op> ops;   // kCompare only
  Value value;           // kConst only
  std::string name;      // kName / kAttr
  std::vector<std::string> kw;  // kCall* only: keyword names of the last kw.size() arguments
  FieldHint hint;               // kName only
};

struct Program {
  std::vector<Node> nodes;
  int32_t root = -1;
  bool generic = false;  // compiled from the generic language: Beam's error text for missing fields
  std::string source;
  std::vector<std::string> fields;  // referenced row fields, first-use order
};

// Python-style operator spelling ("+", "//", "not in").
std::string_view OpText(Op op);
// Python type names for messages: "NoneType", "bool", "int", "float", "str", "list", "row".
std::string_view PyTypeName(const Value& v);

// ---- Parser (expression_parser.cc) -------------------------------------------------------------
Result<Program> ParsePython(std::string_view source);
Result<Program> ParseGeneric(std::string_view source);

// ---- Evaluation (expression_eval.cc) ------------------------------------------------------------
// A result that either borrows a value living in the row or the program, or owns a new one, so
// reading a field or a constant copies nothing.
struct Slot {
  const Value* ref = nullptr;
  Value owned;
  const Value& get() const { return ref ? *ref : owned; }
  void Set(Value v) { ref = nullptr; owned = std::move(v); }
  void Borrow(const Value& v) { ref = &v; }
};

struct EvalContext {
  const Row& row;
  int64_t budget = kEvalBudgetBytes;
  // Spends `bytes` of the allocation budget; MemoryError when it runs out.
  Status Charge(std::size_t bytes);
};

Status Evaluate(const Program& p, int32_t node, EvalContext& ctx, Slot& out);

// row.Find(name), trying the hint's index first (names compared with SameString, strings.h: the
// byte loop it replaced was the hottest loop of column evaluation). Row field names are unique
// (Row's contract), so the field at the hinted index, when it has the name, is the one Find would
// return.
[[gnu::always_inline]] inline const Value* FindHinted(const Row& row, const std::string& name, const FieldHint& hint) {
  const std::vector<Field>& fields = row.fields();
  const int32_t h = hint.index.load(std::memory_order_relaxed);
  if (h >= 0 && static_cast<std::size_t>(h) < fields.size()) {
    if (SameString(fields[static_cast<std::size_t>(h)].name, name)) return &fields[static_cast<std::size_t>(h)].value;
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (SameString(fields[i].name, name)) {
      if (static_cast<int32_t>(i) != h) hint.index.store(static_cast<int32_t>(i), std::memory_order_relaxed);
      return &fields[i].value;
    }
  }
  return nullptr;
}

// + - * of two floats, or of a float and an int: IEEE arithmetic, no error possible, the same
// double BinaryOp computes (an int operand converts exactly as FloatOf does). False, `out`
// untouched, for any other operator or operand types.
[[gnu::always_inline]] inline bool FloatArithmetic(Op op, const Value& x, const Value& y, Value& out) {
  if (!(op == Op::kAdd || op == Op::kSub || op == Op::kMul)) return false;
  if (!((x.is_float() && (y.is_float() || y.is_int())) || (x.is_int() && y.is_float()))) return false;
  const double u = x.is_float() ? x.as_float() : static_cast<double>(x.as_int());
  const double v = y.is_float() ? y.as_float() : static_cast<double>(y.as_int());
  out.AssignFloat(op == Op::kAdd ? u + v : op == Op::kSub ? u - v : u * v);
  return true;
}

// == != < <= > >= of two floats, or of a float and an int within 2^53 (exact as a double): the
// answer CompareOp gives, without its Result. False for any other operator or operand types.
[[gnu::always_inline]] inline bool FloatComparison(Op op, const Value& x, const Value& y, bool& r) {
  constexpr int64_t kExact = int64_t{1} << 53;
  const bool floats = (x.is_float() && (y.is_float() || (y.is_int() && y.as_int() >= -kExact && y.as_int() <= kExact))) ||
                      (y.is_float() && x.is_int() && x.as_int() >= -kExact && x.as_int() <= kExact);
  if (!floats || op < Op::kEq || op > Op::kGe) return false;
  const double u = x.is_float() ? x.as_float() : static_cast<double>(x.as_int());
  const double v = y.is_float() ? y.as_float() : static_cast<double>(y.as_int());
  switch (op) {
    case Op::kEq: r = u == v; break;
    case Op::kNe: r = u != v; break;
    case Op::kLt: r = u < v; break;
    case Op::kLe: r = u <= v; break;
    case Op::kGt: r = u > v; break;
    default: r = u >= v; break;
  }
  return true;
}

// ---- Column-at-a-time evaluation (expression_batch.cc) -----------------------------------------
// A program built only of constants, fields, unary and binary operators, single comparisons and
// calls is evaluated over a batch one node at a time: a column of values per node, each node's
// operator applied to every row in one loop (no per-row walk of the tree, no Slot per node per
// row). A row whose value a node cannot produce (a missing field, an operator error) leaves the
// columns and is evaluated by the tree walker alone, which gives its error (or value) exactly as
// Evaluate does: every node is pure, and these kinds evaluate all their operands.
// Short-circuiting kinds (and, or, if) and the rest keep the walker for the whole batch.
struct ColumnPlan {
  std::vector<int32_t> order;  // the nodes reachable from the root, children before parents
};
// The plan for `p`, or false when a node reachable from the root has no column form.
bool PlanColumns(const Program& p, ColumnPlan& plan);
void EvaluateColumns(const Program& p, const ColumnPlan& plan, const Row* rows, std::size_t n,
                     std::vector<Result<Value>>& out);

// ---- Operators with Python 3 semantics (expression_ops.cc) -------------------------------------
Result<Value> BinaryOp(Op op, const Value& a, const Value& b, EvalContext& ctx);
Result<Value> UnaryOp(Op op, const Value& a);
// For ==, !=, <, ..., in, not in, is, is not.
Result<bool> CompareOp(Op op, const Value& a, const Value& b);
bool PyEquals(const Value& a, const Value& b);
// a < b; TypeError for unordered types.
Result<bool> PyLess(const Value& a, const Value& b, std::string_view op_text = "<");
Result<Value> Subscript(const Value& obj, const Value& index);
Result<Value> Slice(const Value& obj, const Value* lo, const Value* hi, const Value* step, EvalContext& ctx);

// ---- Builtins and methods (expression_builtins.cc, expression_methods.cc) ----------------------
struct CallSpec {
  std::string_view name;
  int min_args;
  int max_args;                          // kMaxCallArgs for variadic
  std::vector<std::string_view> params;  // names accepted as keyword arguments, by position
};
const std::vector<CallSpec>& Builtins();
const std::vector<CallSpec>& Methods();
// args[i] is nullptr for an omitted optional argument.
Result<Value> CallBuiltin(uint8_t fn, const Value* const* args, int nargs, EvalContext& ctx);
Result<Value> CallMethod(uint8_t fn, const Value& self, const Value* const* args, int nargs, EvalContext& ctx);

// ---- Text helpers (expression_text.cc) ---------------------------------------------------------
// Python str() and repr() of a value.
void AppendStr(std::string& out, const Value& v);
void AppendRepr(std::string& out, const Value& v);
std::string PyStr(const Value& v);
std::string PyRepr(const Value& v);
// Code points in `s`; an invalid UTF-8 byte counts as one.
std::size_t CodePointCount(std::string_view s);
// Byte offset of each code point in `s`, plus s.size() at the end.
std::vector<std::size_t> CodePointOffsets(std::string_view s);
bool IsAscii(std::string_view s);
// Decodes the code point at s[i] into *cp; returns its length in bytes (1 for an invalid byte).
std::size_t DecodeUtf8(std::string_view s, std::size_t i, uint32_t* cp);
void AppendUtf8(std::string& out, uint32_t cp);
bool IsPyWhitespace(uint32_t cp);
// Finds `needle` in `hay` from `from`; linear worst case for long needles. npos when absent.
std::size_t FindText(std::string_view hay, std::string_view needle, std::size_t from = 0);

// Python's numeric view of a value: bool is an int (True == 1).
inline bool IsNum(const Value& v) { return v.is_number() || v.is_bool(); }
inline bool IsIntLike(const Value& v) { return v.is_int() || v.is_bool(); }
inline int64_t IntOf(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
inline double FloatOf(const Value& v) { return v.is_float() ? v.as_float() : static_cast<double>(IntOf(v)); }
// An evaluation error (a Python TypeError/ValueError text), and a value's Python type name for one.
inline Status EvalError(std::string s) { return InvalidArgument(std::move(s)); }
inline std::string PyType(const Value& v) { return std::string(PyTypeName(v)); }

}  // namespace dfw::expr
