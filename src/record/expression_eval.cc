// Tree-walking evaluation of a compiled Program against one row. Reads of fields and constants
// borrow (Slot::Borrow) instead of copying; only operators that build a new value allocate.
#include <optional>
#include <string>

#include "dfw/common/strings.h"
#include "record/expression_ast.h"

namespace dfw::expr {
namespace {

std::vector<std::string> FieldNames(const Row& row) {
  std::vector<std::string> names;
  for (const Field& f : row.fields()) names.push_back(f.name);
  return names;
}

Status MissingName(const Program& p, const Node& n, const Row& row) {
  std::vector<std::string> names = FieldNames(row);
  std::string fields = names.empty() ? "(none)" : Join(names);
  if (p.generic)
    return InvalidArgument("Missing language specification, unknown input fields, or invalid generic expression: " + p.source +
                           ". See https://beam.apache.org/documentation/sdks/yaml-udf/#generic (field '" + n.name +
                           "' is not in this row; fields: " + fields + ")");
  return InvalidArgument("NameError: name '" + n.name + "' is not defined" + DidYouMeanSuffix(n.name, names) +
                         "; fields of this row: " + fields);
}

// The value of a leaf operand, a constant or a field the row has, read in place: no Slot and no
// call into Evaluate (most operands are leaves). nullptr for any other node and for a field the
// row lacks; the caller then evaluates the node in full, which reports the missing name.
[[gnu::always_inline]] inline const Value* Leaf(const Program& p, int32_t index, const EvalContext& ctx) {
  const Node& n = p.nodes[static_cast<std::size_t>(index)];
  if (n.kind == NodeKind::kConst) return &n.value;
  if (n.kind == NodeKind::kName) return FindHinted(ctx.row, n.name, n.hint);
  return nullptr;
}

// The operand at `index`: the leaf in place, or evaluated into `slot`.
[[gnu::always_inline]] inline Status Operand(const Program& p, int32_t index, EvalContext& ctx, Slot& slot, const Value*& v) {
  v = Leaf(p, index, ctx);
  if (v != nullptr) return Status::OK();
  RETURN_IF_ERROR(Evaluate(p, index, ctx, slot));
  v = &slot.get();
  return Status::OK();
}

// Both operands of a binary operator or a single comparison (kids 0 and 1).
[[gnu::always_inline]] inline Status BothOperands(const Program& p, const Node& n, EvalContext& ctx, Slot& a, Slot& b,
                                                  const Value*& x, const Value*& y) {
  RETURN_IF_ERROR(Operand(p, n.kids[0], ctx, a, x));
  return Operand(p, n.kids[1], ctx, b, y);
}

// Calls keep their argument slots in their own frame, so Evaluate's own frame stays small: every
// node evaluation would otherwise pay for initialising them. Leaf arguments (constants, fields)
// are read in place; a slot is made only for an argument that computes something (a small inline
// array of them, a vector past it).
[[gnu::noinline]] Status EvalCall(const Program& p, const Node& n, EvalContext& ctx, Slot& out) {
  constexpr std::size_t kInlineArgs = 4;
  const bool method = n.kind == NodeKind::kMethod;
  const std::size_t first = method ? 1 : 0;
  const std::size_t nargs = n.kids.size() - first;
  std::optional<Slot> inline_slots[kInlineArgs];
  std::vector<Slot> more_slots;
  const Value* argv[kMaxCallArgs];
  Slot self_slot;
  const Value* self = nullptr;
  if (method) RETURN_IF_ERROR(Operand(p, n.kids[0], ctx, self_slot, self));
  for (std::size_t i = 0; i < nargs; ++i) {
    const int32_t k = n.kids[first + i];
    if (k < 0) {
      argv[i] = nullptr;
      continue;
    }
    if ((argv[i] = Leaf(p, k, ctx)) != nullptr) continue;
    Slot* slot;
    if (nargs <= kInlineArgs) {
      slot = &inline_slots[i].emplace();
    } else {
      if (more_slots.empty()) more_slots.resize(nargs);
      slot = &more_slots[i];
    }
    RETURN_IF_ERROR(Evaluate(p, k, ctx, *slot));
    argv[i] = &slot->get();
  }
  Result<Value> r = method ? CallMethod(n.fn, *self, argv, static_cast<int>(nargs), ctx)
                           : CallBuiltin(n.fn, argv, static_cast<int>(nargs), ctx);
  if (!r.ok()) return r.status();
  out.Set(std::move(r).value());
  return Status::OK();
}

Status SetResult(Result<Value> r, Slot& out) {
  if (!r.ok()) return r.status();
  out.Set(std::move(r).value());
  return Status::OK();
}

}  // namespace

Status EvalContext::Charge(std::size_t bytes) {
  if (static_cast<int64_t>(bytes) <= budget && bytes <= static_cast<std::size_t>(kEvalBudgetBytes)) {
    budget -= static_cast<int64_t>(bytes);
    return Status::OK();
  }
  return InvalidArgument("MemoryError: the expression builds more than " + std::to_string(kEvalBudgetBytes >> 20) +
                         " MiB of strings/lists for one row");
}

Status Evaluate(const Program& p, int32_t index, EvalContext& ctx, Slot& out) {
  const Node& n = p.nodes[static_cast<std::size_t>(index)];
  switch (n.kind) {
    case NodeKind::kConst:
      out.Borrow(n.value);
      return Status::OK();
    case NodeKind::kName: {
      const Value* v = FindHinted(ctx.row, n.name, n.hint);
      if (v == nullptr) return MissingName(p, n, ctx.row);
      out.Borrow(*v);
      return Status::OK();
    }
    case NodeKind::kUnary: {
      Slot a;
      const Value* x;
      RETURN_IF_ERROR(Operand(p, n.kids[0], ctx, a, x));
      return SetResult(UnaryOp(n.op, *x), out);
    }
    case NodeKind::kBinary: {
      Slot a, b;
      const Value* xp;
      const Value* yp;
      RETURN_IF_ERROR(BothOperands(p, n, ctx, a, b, xp, yp));
      if (FloatArithmetic(n.op, *xp, *yp, out.owned)) {
        out.ref = nullptr;
        return Status::OK();
      }
      return SetResult(BinaryOp(n.op, *xp, *yp, ctx), out);
    }
    case NodeKind::kAnd:
    case NodeKind::kOr: {
      // Returns the deciding operand itself, as Python does (0 or 'x' is 'x').
      for (std::size_t i = 0; i < n.kids.size(); ++i) {
        RETURN_IF_ERROR(Evaluate(p, n.kids[i], ctx, out));
        bool truthy = IsTruthy(out.get());
        if (i + 1 == n.kids.size() || truthy == (n.kind == NodeKind::kOr)) break;
      }
      return Status::OK();
    }
    case NodeKind::kCompare: {
      Slot left, right;
      if (n.ops.size() == 1) {  // one comparison: operands read in place, floats without a Result
        const Value* xp;
        const Value* yp;
        RETURN_IF_ERROR(BothOperands(p, n, ctx, left, right, xp, yp));
        bool r = false;
        if (FloatComparison(n.ops[0], *xp, *yp, r)) {
          out.ref = nullptr;
          out.owned.AssignBool(r);
          return Status::OK();
        }
        Result<bool> general = CompareOp(n.ops[0], *xp, *yp);
        if (!general.ok()) return general.status();
        out.Set(Value::Bool(*general));
        return Status::OK();
      }
      RETURN_IF_ERROR(Evaluate(p, n.kids[0], ctx, left));
      for (std::size_t i = 0; i < n.ops.size(); ++i) {
        RETURN_IF_ERROR(Evaluate(p, n.kids[i + 1], ctx, right));
        Result<bool> r = CompareOp(n.ops[i], left.get(), right.get());
        if (!r.ok()) return r.status();
        if (!*r) {
          out.Set(Value::Bool(false));
          return Status::OK();
        }
        std::swap(left, right);  // a < b < c: b is evaluated once
      }
      out.Set(Value::Bool(true));
      return Status::OK();
    }
    case NodeKind::kIf: {
      Slot cond;
      RETURN_IF_ERROR(Evaluate(p, n.kids[1], ctx, cond));
      return Evaluate(p, n.kids[IsTruthy(cond.get()) ? 0 : 2], ctx, out);
    }
    case NodeKind::kIndex: {
      Slot obj, idx;
      RETURN_IF_ERROR(Evaluate(p, n.kids[0], ctx, obj));
      RETURN_IF_ERROR(Evaluate(p, n.kids[1], ctx, idx));
      if (obj.get().is_row() && idx.get().is_string() && obj.ref != nullptr) {
        const Value* v = obj.get().as_row().Find(idx.get().as_string());
        if (v != nullptr) {  // borrow from the row the field lives in
          out.Borrow(*v);
          return Status::OK();
        }
      }
      return SetResult(Subscript(obj.get(), idx.get()), out);
    }
    case NodeKind::kSlice: {
      Slot obj, parts[3];
      RETURN_IF_ERROR(Evaluate(p, n.kids[0], ctx, obj));
      const Value* pv[3] = {nullptr, nullptr, nullptr};
      for (int i = 0; i < 3; ++i) {
        if (n.kids[static_cast<std::size_t>(i) + 1] < 0) continue;
        RETURN_IF_ERROR(Evaluate(p, n.kids[static_cast<std::size_t>(i) + 1], ctx, parts[i]));
        pv[i] = &parts[i].get();
      }
      return SetResult(Slice(obj.get(), pv[0], pv[1], pv[2], ctx), out);
    }
    case NodeKind::kAttr: {
      Slot obj;
      RETURN_IF_ERROR(Evaluate(p, n.kids[0], ctx, obj));
      const Value& o = obj.get();
      if (!o.is_row())
        return InvalidArgument("AttributeError: '" + std::string(PyTypeName(o)) + "' object has no attribute '" + n.name + "'");
      const Value* v = o.as_row().Find(n.name);
      if (v == nullptr) {
        std::vector<std::string> names = FieldNames(o.as_row());
        return InvalidArgument("AttributeError: row has no field '" + n.name + "'" + DidYouMeanSuffix(n.name, names) +
                               "; fields: " + (names.empty() ? "(none)" : Join(names)));
      }
      if (obj.ref != nullptr) out.Borrow(*v);
      else out.Set(*v);  // the row is a temporary: copy the field out of it
      return Status::OK();
    }
    case NodeKind::kCall:
    case NodeKind::kMethod:
      return EvalCall(p, n, ctx, out);
    case NodeKind::kList: {
      RETURN_IF_ERROR(ctx.Charge(n.kids.size() * sizeof(Value)));
      List items;
      items.reserve(n.kids.size());
      for (int32_t k : n.kids) {
        Slot s;
        RETURN_IF_ERROR(Evaluate(p, k, ctx, s));
        items.push_back(s.ref ? *s.ref : std::move(s.owned));
      }
      out.Set(Value::FromList(std::move(items)));
      return Status::OK();
    }
  }
  return Internal("unknown expression node");
}

}  // namespace dfw::expr
