// Statements: text, output, if, for, set, include, import, macro, block and extends. Expressions
// are the Evaluator's.
#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "dfw/common/file.h"
#include "dfw/template/parser.h"
#include "dfw/template/render.h"
#include "evaluator.h"

namespace dfw::tmpl {
namespace {

// The definitions of each block, most derived template first (extends).
using BlockChain = std::map<std::string, std::vector<const Node*>>;

// What the statements of one template render against.
struct Ctx {
  std::shared_ptr<const Template> tmpl;
  std::shared_ptr<const Evaluator> eval;
  std::shared_ptr<const BlockChain> chain;  // null while a child template runs before its parent
  int depth = 0;                      // include/import/extends nesting
  std::string* extends_target = nullptr;  // where {% extends %} records its parent's name
};

// Jinja2 drops one trailing newline of every template it loads (keep_trailing_newline=False).
std::string DropTrailingNewline(std::string s) {
  if (s.ends_with("\r\n")) s.resize(s.size() - 2);
  else if (s.ends_with('\n')) s.pop_back();
  return s;
}

}  // namespace

// Beam's strip_leading_comments: the lines before the first that is neither blank nor a comment.
std::string StripLeadingComments(std::string_view source);
std::string StripLeadingComments(std::string_view source) {
  std::size_t pos = 0;
  while (pos < source.size()) {
    std::size_t end = source.find('\n', pos);
    end = end == std::string_view::npos ? source.size() : end + 1;
    std::string_view line = source.substr(pos, end - pos);
    const std::size_t first = line.find_first_not_of(" \t\r\n\f\v");
    if (first != std::string_view::npos && line[first] != '#') break;
    pos = end;
  }
  return std::string(source.substr(pos));
}

namespace {

class Renderer {
 public:
  explicit Renderer(const RenderOptions& options) : options_(options) {
    if (!options_.loader) options_.loader = FileTemplateLoader(options_.limits.max_output_bytes);
  }

  Result<std::string> RenderMain(std::string_view source, const std::string& name, const Value& variables) {
    ASSIGN_OR_RETURN(std::shared_ptr<const Template> t, ParseTemplate(source, name, options_.whitespace));
    loaded_.push_back(t);
    auto globals = std::make_shared<Scope>();
    if (variables.kind() == Value::Kind::kDict) {
      for (const auto& [k, v] : variables.as_dict()) globals->Set(k, v);
    }
    std::string out;
    RETURN_IF_ERROR(RenderTemplate(t, std::make_shared<Scope>(globals), out, 0));
    return out;
  }

  Status RenderBody(const Body& body, const Ctx& ctx, const std::shared_ptr<Scope>& scope, std::string& out);
  const TemplateLimits& limits() const { return options_.limits; }
  int& call_depth() { return call_depth_; }
  // Scopes that macros close over live as long as the render (a macro holds its scope by raw
  // pointer: the scope holds the macro, so owning it back would be a cycle that never frees).
  void KeepAlive(std::shared_ptr<Scope> scope) { keep_alive_.push_back(std::move(scope)); }

 private:
  // A template with its extends chain resolved: the child's top level runs (output discarded),
  // then the parent renders with the child's blocks in front of its own.
  Status RenderTemplate(std::shared_ptr<const Template> t, const std::shared_ptr<Scope>& scope, std::string& out, int depth) {
    auto chain = std::make_shared<BlockChain>();
    while (true) {
      for (const auto& [name, node] : t->blocks) (*chain)[name].push_back(node);
      if (!t->extends) break;
      std::string parent, discarded;
      auto eval = std::make_shared<const Evaluator>(t->name, options_.limits.max_output_bytes);
      Ctx child{t, eval, nullptr, depth, &parent};
      RETURN_IF_ERROR(RenderBody(t->body, child, scope, discarded));
      if (++depth > options_.limits.max_include_depth) return DepthError(t->name, 0);
      ASSIGN_OR_RETURN(t, Load(parent, t->name, extends_line_));
    }
    auto eval = std::make_shared<const Evaluator>(t->name, options_.limits.max_output_bytes);
    Ctx ctx{t, eval, chain, depth, nullptr};
    return RenderBody(t->body, ctx, scope, out);
  }

  Status DepthError(const std::string& file, int line) const {
    return ResourceExhausted(file + ":" + std::to_string(line) + ": templates nested more than " +
                             std::to_string(options_.limits.max_include_depth) + " deep (include/import/extends)");
  }

  // Beam's _BeamFileIOLoader: the name as given, then under each search path, then ".".
  Result<std::shared_ptr<const Template>> Load(const std::string& name, const std::string& from, int line) {
    std::vector<std::string> candidates = {name};
    if (!name.starts_with("/")) {
      for (const std::string& dir : options_.search_paths) candidates.push_back(dir + "/" + name);
      candidates.push_back("./" + name);
    }
    for (const std::string& path : candidates) {
      Result<std::string> text = options_.loader(path);
      if (!text.ok() && text.status().code() == StatusCode::kNotFound) continue;
      if (!text.ok()) return Located(from, line, text.status());
      ASSIGN_OR_RETURN(std::shared_ptr<const Template> t, ParseTemplate(DropTrailingNewline(StripLeadingComments(*text)), path, options_.whitespace));
      loaded_.push_back(t);
      return t;
    }
    std::string tried;
    for (const std::string& c : candidates) tried += (tried.empty() ? "'" : ", '") + c + "'";
    return NotFound(from + ":" + std::to_string(line) + ": template '" + name + "' not found (tried " + tried + ")");
  }

  Status Emit(std::string& out, std::string_view s, const std::string& file, int line) {
    produced_ += s.size();
    if (produced_ > options_.limits.max_output_bytes) {
      return ResourceExhausted(file + ":" + std::to_string(line) + ": the render produced more than " +
                               std::to_string(options_.limits.max_output_bytes) + " bytes");
    }
    out.append(s);
    return Status::OK();
  }

  Status RenderNode(const Node& n, const Ctx& ctx, const std::shared_ptr<Scope>& scope, std::string& out);
  Status RenderFor(const Node& n, const Ctx& ctx, const std::shared_ptr<Scope>& scope, std::string& out);
  Status RenderImport(const Node& n, const Ctx& ctx, const std::shared_ptr<Scope>& scope);
  Status RenderBlock(const std::string& name, std::size_t level, const Ctx& ctx, const std::shared_ptr<Scope>& scope, std::string& out);
  Result<std::string> NameArg(const Node& n, const Ctx& ctx, const Scope& scope) {
    ASSIGN_OR_RETURN(Value v, ctx.eval->Eval(*n.expr, scope));
    if (v.kind() != Value::Kind::kString) {
      return InvalidArgument(ctx.tmpl->name + ":" + std::to_string(n.line) + ": a template name must be a string, got " + v.TypeName());
    }
    return v.as_string();
  }

  friend class MacroFn;
  friend class SuperFn;
  RenderOptions options_;
  std::size_t produced_ = 0;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  int extends_line_ = 0;
  std::vector<std::shared_ptr<Scope>> keep_alive_;
  // Every template of this render: a block chain points into the ASTs of child templates.
  std::vector<std::shared_ptr<const Template>> loaded_;
};

// A {% macro %}: its parameters bound over the scope it was defined in.
class MacroFn : public Callable {
 public:
  MacroFn(Renderer* r, const Node* node, Ctx ctx, const Scope* closure)
      : r_(r), node_(node), ctx_(std::move(ctx)), closure_(closure) {
    ctx_.extends_target = nullptr;
  }

  Result<Value> Call(const ValueList& args, const ValueDict& kwargs, int line) override {
    const std::string& file = ctx_.tmpl->name;
    if (args.size() > node_->params.size()) {
      return InvalidArgument(file + ":" + std::to_string(line) + ": macro '" + node_->name + "' takes " +
                             std::to_string(node_->params.size()) + " argument(s), " + std::to_string(args.size()) + " given");
    }
    if (r_->call_depth() >= r_->limits().max_call_depth) {
      return ResourceExhausted(file + ":" + std::to_string(line) + ": macro calls nested more than " +
                               std::to_string(r_->limits().max_call_depth) + " deep");
    }
    // Non-owning: the render keeps the closure alive (Renderer::KeepAlive).
    auto scope = std::make_shared<Scope>(std::shared_ptr<const Scope>(std::shared_ptr<void>(), closure_));
    for (std::size_t i = 0; i < node_->params.size(); ++i) {
      const auto& [param, def] = node_->params[i];
      if (i < args.size()) {
        scope->Set(param, args[i]);
        continue;
      }
      const Value* kw = nullptr;
      for (const auto& [k, v] : kwargs) {
        if (k == param) kw = &v;
      }
      if (kw) {
        scope->Set(param, *kw);
      } else if (def) {
        ASSIGN_OR_RETURN(Value v, ctx_.eval->Eval(*def, *closure_));
        scope->Set(param, std::move(v));
      } else {
        scope->Set(param, Value::Undefined("'" + param + "' is undefined (macro '" + node_->name + "' called without it)"));
      }
    }
    for (const auto& [k, v] : kwargs) {
      bool known = false;
      for (const auto& p : node_->params) known |= p.first == k;
      if (!known) return InvalidArgument(file + ":" + std::to_string(line) + ": macro '" + node_->name + "' has no parameter '" + k + "'");
    }
    std::string out;
    ++r_->call_depth();
    Status s = r_->RenderBody(node_->body, ctx_, scope, out);
    --r_->call_depth();
    RETURN_IF_ERROR(s);
    return Value::String(std::move(out));
  }

 private:
  Renderer* r_;
  const Node* node_;
  Ctx ctx_;  // holds the template alive (ctx_.tmpl)
  const Scope* closure_;
};

// super() inside a block: the next definition of the block up the extends chain.
class SuperFn : public Callable {
 public:
  SuperFn(Renderer* r, std::string name, std::size_t level, Ctx ctx, std::shared_ptr<Scope> scope)
      : r_(r), name_(std::move(name)), level_(level), ctx_(std::move(ctx)), scope_(std::move(scope)) {}
  Result<Value> Call(const ValueList&, const ValueDict&, int) override {
    std::string out;
    RETURN_IF_ERROR(r_->RenderBlock(name_, level_, ctx_, scope_, out));
    return Value::String(std::move(out));
  }

 private:
  Renderer* r_;
  std::string name_;
  std::size_t level_;
  Ctx ctx_;
  std::shared_ptr<Scope> scope_;
};

Status Renderer::RenderBody(const Body& body, const Ctx& ctx, const std::shared_ptr<Scope>& scope, std::string& out) {
  for (const NodePtr& n : body) RETURN_IF_ERROR(RenderNode(*n, ctx, scope, out));
  return Status::OK();
}

Status Renderer::RenderBlock(const std::string& name, std::size_t level, const Ctx& ctx, const std::shared_ptr<Scope>& scope,
                             std::string& out) {
  const std::vector<const Node*>& defs = ctx.chain->at(name);
  if (level >= defs.size()) return InvalidArgument(ctx.tmpl->name + ": block '" + name + "' has no parent block for super()");
  auto inner = std::make_shared<Scope>(scope);
  if (level + 1 < defs.size()) inner->Set("super", Value::Function(std::make_shared<SuperFn>(this, name, level + 1, ctx, scope)));
  return RenderBody(defs[level]->body, ctx, inner, out);
}

Status Renderer::RenderNode(const Node& n, const Ctx& ctx, const std::shared_ptr<Scope>& scope, std::string& out) {
  const std::string& file = ctx.tmpl->name;
  switch (n.kind) {
    case Node::Kind::kText: return Emit(out, n.text, file, n.line);
    case Node::Kind::kOutput: {
      ASSIGN_OR_RETURN(Value v, ctx.eval->Eval(*n.expr, *scope));
      Result<std::string> s = v.Str();
      if (!s.ok()) return Located(file, n.line, s.status());
      return Emit(out, *s, file, n.line);
    }
    case Node::Kind::kIf: {
      for (std::size_t i = 0; i < n.conditions.size(); ++i) {
        ASSIGN_OR_RETURN(Value c, ctx.eval->Eval(*n.conditions[i], *scope));
        Result<bool> t = c.Truthy();
        if (!t.ok()) return Located(file, n.conditions[i]->line, t.status());
        if (*t) return RenderBody(n.bodies[i], ctx, scope, out);
      }
      return RenderBody(n.else_body, ctx, scope, out);
    }
    case Node::Kind::kFor: return RenderFor(n, ctx, scope, out);
    case Node::Kind::kSet: {
      Value v;
      if (n.expr) {
        ASSIGN_OR_RETURN(v, ctx.eval->Eval(*n.expr, *scope));
      } else {
        std::string captured;
        RETURN_IF_ERROR(RenderBody(n.body, ctx, scope, captured));
        v = Value::String(std::move(captured));
      }
      if (n.targets.size() == 1) {
        scope->Set(n.targets[0], std::move(v));
        return Status::OK();
      }
      if (v.kind() != Value::Kind::kList || v.as_list().size() != n.targets.size()) {
        return InvalidArgument(file + ":" + std::to_string(n.line) + ": cannot unpack " + v.Repr() + " into " +
                               std::to_string(n.targets.size()) + " names");
      }
      for (std::size_t i = 0; i < n.targets.size(); ++i) scope->Set(n.targets[i], v.as_list()[i]);
      return Status::OK();
    }
    case Node::Kind::kInclude: {
      ASSIGN_OR_RETURN(std::string name, NameArg(n, ctx, *scope));
      if (ctx.depth + 1 > options_.limits.max_include_depth) return DepthError(file, n.line);
      ASSIGN_OR_RETURN(std::shared_ptr<const Template> t, Load(name, file, n.line));
      Status s = RenderTemplate(t, std::make_shared<Scope>(scope), out, ctx.depth + 1);
      if (!s.ok() && s.message().find("(included from ") == std::string::npos) {
        return Status(s.code(), s.message() + " (included from " + file + ":" + std::to_string(n.line) + ")");
      }
      return s;
    }
    case Node::Kind::kImport: return RenderImport(n, ctx, scope);
    case Node::Kind::kMacro:
      KeepAlive(scope);
      scope->Set(n.name, Value::Function(std::make_shared<MacroFn>(this, &n, ctx, scope.get())));
      return Status::OK();
    case Node::Kind::kBlock:
      if (!ctx.chain) return Status::OK();  // a child's block renders in its parent's place
      return RenderBlock(n.name, 0, ctx, scope, out);
    case Node::Kind::kExtends: {
      if (!ctx.extends_target) return InvalidArgument(file + ":" + std::to_string(n.line) + ": {% extends %} here is not supported");
      ASSIGN_OR_RETURN(*ctx.extends_target, NameArg(n, ctx, *scope));
      extends_line_ = n.line;
      return Status::OK();
    }
  }
  return Status::OK();
}

Status Renderer::RenderFor(const Node& n, const Ctx& ctx, const std::shared_ptr<Scope>& scope, std::string& out) {
  const std::string& file = ctx.tmpl->name;
  ASSIGN_OR_RETURN(Value seq, ctx.eval->Eval(*n.expr, *scope));
  ValueList items;
  switch (seq.kind()) {
    case Value::Kind::kList: items = seq.as_list(); break;
    case Value::Kind::kDict:
      for (const auto& [k, v] : seq.as_dict()) items.push_back(Value::String(k));
      break;
    case Value::Kind::kString:
      for (char c : seq.as_string()) items.push_back(Value::String(std::string(1, c)));
      break;
    case Value::Kind::kUndefined: return Located(file, n.line, UndefinedError(seq));
    default: return InvalidArgument(file + ":" + std::to_string(n.line) + ": '" + seq.TypeName() + "' object is not iterable");
  }
  auto bind = [&](Scope& s, const Value& item) -> Status {
    if (n.targets.size() == 1) {
      s.Set(n.targets[0], item);
      return Status::OK();
    }
    if (item.kind() != Value::Kind::kList || item.as_list().size() != n.targets.size()) {
      return InvalidArgument(file + ":" + std::to_string(n.line) + ": cannot unpack " + item.Repr() + " into " +
                             std::to_string(n.targets.size()) + " names");
    }
    for (std::size_t i = 0; i < n.targets.size(); ++i) s.Set(n.targets[i], item.as_list()[i]);
    return Status::OK();
  };
  if (n.cond) {  // {% for x in xs if cond %}: the filter runs before loop.* is counted
    ValueList kept;
    for (const Value& item : items) {
      Scope s(scope);
      RETURN_IF_ERROR(bind(s, item));
      ASSIGN_OR_RETURN(Value c, ctx.eval->Eval(*n.cond, s));
      Result<bool> t = c.Truthy();
      if (!t.ok()) return Located(file, n.line, t.status());
      if (*t) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) return RenderBody(n.else_body, ctx, scope, out);
  const int64_t length = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < length; ++i) {
    if (++iterations_ > options_.limits.max_loop_iterations) {
      return ResourceExhausted(file + ":" + std::to_string(n.line) + ": more than " +
                               std::to_string(options_.limits.max_loop_iterations) + " loop iterations in this render");
    }
    auto inner = std::make_shared<Scope>(scope);
    RETURN_IF_ERROR(bind(*inner, items[static_cast<std::size_t>(i)]));
    inner->Set("loop", Value::Dict({{"index", Value::Int(i + 1)},
                                    {"index0", Value::Int(i)},
                                    {"revindex", Value::Int(length - i)},
                                    {"revindex0", Value::Int(length - i - 1)},
                                    {"first", Value::Bool(i == 0)},
                                    {"last", Value::Bool(i == length - 1)},
                                    {"length", Value::Int(length)}}));
    RETURN_IF_ERROR(RenderBody(n.body, ctx, inner, out));
  }
  return Status::OK();
}

// {% import 'f' as m %} / {% from 'f' import a %}: the file's top level runs without the caller's
// variables (jinja2 imports "without context"); its macros and top-level sets are the module.
Status Renderer::RenderImport(const Node& n, const Ctx& ctx, const std::shared_ptr<Scope>& scope) {
  const std::string& file = ctx.tmpl->name;
  ASSIGN_OR_RETURN(std::string name, NameArg(n, ctx, *scope));
  if (ctx.depth + 1 > options_.limits.max_include_depth) return DepthError(file, n.line);
  ASSIGN_OR_RETURN(std::shared_ptr<const Template> t, Load(name, file, n.line));
  auto module_scope = std::make_shared<Scope>();
  std::string discarded;
  RETURN_IF_ERROR(RenderTemplate(t, module_scope, discarded, ctx.depth + 1));
  if (n.targets.empty()) {
    ValueDict exports(module_scope->own().begin(), module_scope->own().end());
    scope->Set(n.name, Value::Dict(std::move(exports)));
    return Status::OK();
  }
  for (std::size_t i = 0; i < n.targets.size(); ++i) {
    const Value* v = module_scope->Lookup(n.targets[i]);
    if (!v) {
      return InvalidArgument(file + ":" + std::to_string(n.line) + ": the template '" + name + "' does not export '" +
                             n.targets[i] + "'");
    }
    scope->Set(n.aliases[i], *v);
  }
  return Status::OK();
}

}  // namespace

TemplateLoader FileTemplateLoader(std::size_t max_bytes) {
  return [max_bytes](const std::string& path) -> Result<std::string> {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return NotFound(path);
    return ReadWholeFile(path, max_bytes);
  };
}

Result<std::string> RenderTemplate(std::string_view source, const std::string& name, const Value& variables,
                                   const RenderOptions& options) {
  return Renderer(options).RenderMain(source, name, variables);
}

}  // namespace dfw::tmpl
