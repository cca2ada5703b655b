// Column-at-a-time evaluation of a Program over a batch of rows (expression_ast.h, ColumnPlan).
//
// Each node reachable from the root gets a column: one `const Value*` per row, pointing at the
// row's own field, at the node's constant, or at a value the node computed for that row (kept in
// the column's `owned`). A null entry means the row left the columns (a missing field, an operator
// error): it is evaluated again by the tree walker alone, which reproduces its error or value
// exactly, since every node here is pure and, unlike and/or/if, evaluates all its operands.
//
// Memory: the walker holds one row's intermediate values at a time (at most kEvalBudgetBytes of
// strings and lists built), the columns hold a whole batch's. Operators that build more than their
// input (repeat, concatenation, join...) charge the row's budget; the batch's charges together are
// capped at kEvalBudgetBytes too, and a batch that reaches the cap drops its columns and goes to
// the walker row by row. So a batch never holds more than about twice what one row may build.
#include <cstddef>
#include <vector>

#include "record/expression_ast.h"

namespace dfw::expr {
namespace {

bool HasColumnForm(const Node& n) {
  switch (n.kind) {
    case NodeKind::kConst:
    case NodeKind::kName:
    case NodeKind::kUnary:
    case NodeKind::kBinary:
    case NodeKind::kCall:
    case NodeKind::kMethod:
      return true;
    case NodeKind::kCompare:
      return n.ops.size() == 1;  // a chain evaluates its later operands only while it holds
    default:
      return false;
  }
}

struct Column {
  std::vector<const Value*> at;  // per row; nullptr: the row left the columns
  std::vector<Value> owned;      // values this node computed, by row
};

// The walker's evaluation of one row, as Compiled::Evaluate returns it.
Result<Value> WalkRow(const Program& p, const Row& row) {
  EvalContext ctx{row};
  Slot slot;
  RETURN_IF_ERROR(Evaluate(p, p.root, ctx, slot));
  if (slot.ref != nullptr) return *slot.ref;
  return std::move(slot.owned);
}

// Stores r as row i's value of column c, or takes the row out of the columns.
inline void Keep(Column& c, std::size_t i, Result<Value> r) {
  if (!r.ok()) {
    c.at[i] = nullptr;
    return;
  }
  c.owned[i] = std::move(r).value();
  c.at[i] = &c.owned[i];
}

// Each row's remaining allocation budget, and the bytes the batch has charged in all.
struct Budgets {
  std::vector<int64_t> row;
  int64_t charged = 0;
  // Runs `op` with row i's context and charges what it spent; false once the batch is over its cap.
  template <typename Fn>
  bool Spend(const Row& r, std::size_t i, Fn op) {
    EvalContext ctx{r, row[i]};
    op(ctx);
    charged += row[i] - ctx.budget;
    row[i] = ctx.budget;
    return charged <= kEvalBudgetBytes;
  }
};

// Fills the node's column; false when the batch went over its allocation cap (the columns are
// then abandoned).
bool EvaluateNode(const Program& p, const Node& node, std::vector<Column>& cols, const Row* rows, std::size_t n,
                  Budgets& budgets) {
  Column& c = cols[static_cast<std::size_t>(&node - p.nodes.data())];
  c.at.assign(n, nullptr);
  auto kid = [&](std::size_t k) -> const std::vector<const Value*>& {
    return cols[static_cast<std::size_t>(node.kids[k])].at;
  };
  switch (node.kind) {
    case NodeKind::kConst:
      for (std::size_t i = 0; i < n; ++i) c.at[i] = &node.value;
      return true;
    case NodeKind::kName:
      for (std::size_t i = 0; i < n; ++i) c.at[i] = FindHinted(rows[i], node.name, node.hint);
      return true;
    default:
      break;
  }
  c.owned.resize(n);
  switch (node.kind) {
    case NodeKind::kUnary: {
      const auto& x = kid(0);
      for (std::size_t i = 0; i < n; ++i) {
        if (x[i] != nullptr) Keep(c, i, UnaryOp(node.op, *x[i]));
      }
      return true;
    }
    case NodeKind::kBinary: {
      const auto& x = kid(0);
      const auto& y = kid(1);
      for (std::size_t i = 0; i < n; ++i) {
        if (x[i] == nullptr || y[i] == nullptr) continue;
        if (FloatArithmetic(node.op, *x[i], *y[i], c.owned[i])) {
          c.at[i] = &c.owned[i];
          continue;
        }
        if (!budgets.Spend(rows[i], i, [&](EvalContext& ctx) { Keep(c, i, BinaryOp(node.op, *x[i], *y[i], ctx)); })) return false;
      }
      return true;
    }
    case NodeKind::kCompare: {
      const auto& x = kid(0);
      const auto& y = kid(1);
      for (std::size_t i = 0; i < n; ++i) {
        if (x[i] == nullptr || y[i] == nullptr) continue;
        bool r = false;
        if (!FloatComparison(node.ops[0], *x[i], *y[i], r)) {
          Result<bool> general = CompareOp(node.ops[0], *x[i], *y[i]);
          if (!general.ok()) continue;
          r = *general;
        }
        c.owned[i].AssignBool(r);
        c.at[i] = &c.owned[i];
      }
      return true;
    }
    case NodeKind::kCall:
    case NodeKind::kMethod: {
      const bool method = node.kind == NodeKind::kMethod;
      const std::size_t first = method ? 1 : 0;
      const std::size_t nargs = node.kids.size() - first;
      const Value* argv[kMaxCallArgs];
      for (std::size_t i = 0; i < n; ++i) {
        bool missing = false;
        for (std::size_t a = 0; a < nargs; ++a) {
          const int32_t k = node.kids[first + a];
          argv[a] = k < 0 ? nullptr : cols[static_cast<std::size_t>(k)].at[i];  // k < 0: an omitted optional argument
          missing |= k >= 0 && argv[a] == nullptr;
        }
        const Value* self = method ? kid(0)[i] : nullptr;
        if (missing || (method && self == nullptr)) continue;
        const bool within = budgets.Spend(rows[i], i, [&](EvalContext& ctx) {
          Keep(c, i, method ? CallMethod(node.fn, *self, argv, static_cast<int>(nargs), ctx)
                            : CallBuiltin(node.fn, argv, static_cast<int>(nargs), ctx));
        });
        if (!within) return false;
      }
      return true;
    }
    default:
      return false;  // PlanColumns admits no other kind
  }
}

}  // namespace

bool PlanColumns(const Program& p, ColumnPlan& plan) {
  plan.order.clear();
  if (p.root < 0) return false;
  // Iterative post-order from the root (the parser bounds the depth, the stack stays small).
  std::vector<std::pair<int32_t, std::size_t>> stack{{p.root, 0}};
  while (!stack.empty()) {
    auto& [index, next] = stack.back();
    const Node& node = p.nodes[static_cast<std::size_t>(index)];
    if (next == 0 && !HasColumnForm(node)) return false;
    if (node.kids.size() > kMaxCallArgs + 1) return false;  // more than a call's argv holds (the parser refuses it)
    while (next < node.kids.size() && node.kids[next] < 0) ++next;
    if (next < node.kids.size()) {
      const int32_t k = node.kids[next++];
      stack.emplace_back(k, 0);
      continue;
    }
    plan.order.push_back(index);
    stack.pop_back();
  }
  return true;
}

void EvaluateColumns(const Program& p, const ColumnPlan& plan, const Row* rows, std::size_t n,
                     std::vector<Result<Value>>& out) {
  out.clear();
  out.reserve(n);
  std::vector<Column> cols(p.nodes.size());
  Budgets budgets{std::vector<int64_t>(n, kEvalBudgetBytes)};
  for (int32_t index : plan.order) {
    const Node& node = p.nodes[static_cast<std::size_t>(index)];
    if (!EvaluateNode(p, node, cols, rows, n, budgets)) {
      cols.clear();  // over the batch's cap: free the columns, walk every row
      for (std::size_t i = 0; i < n; ++i) out.push_back(WalkRow(p, rows[i]));
      return;
    }
    for (int32_t k : node.kids) {
      if (k >= 0) cols[static_cast<std::size_t>(k)] = Column{};  // read by this node only (a tree)
    }
  }
  Column& root = cols[static_cast<std::size_t>(p.root)];
  for (std::size_t i = 0; i < n; ++i) {
    const Value* v = root.at[i];
    if (v == nullptr) {
      out.push_back(WalkRow(p, rows[i]));
    } else if (!root.owned.empty() && v == &root.owned[i]) {
      out.emplace_back(std::move(root.owned[i]));
    } else {
      out.emplace_back(*v);  // a field of the row or a constant
    }
  }
}

}  // namespace dfw::expr
