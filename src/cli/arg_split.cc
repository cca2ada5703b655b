#include "arg_split.h"

#include "dfw/options/parse.h"

namespace dfw::cli {
namespace {


const CLI::App* FindSubcommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->check_name(name)) return sub;
  }
  return nullptr;
}

}  // namespace

SplitArgs SplitPipelineArgs(const CLI::App& app, const std::vector<std::string>& args) {
  SplitArgs out;
  std::size_t i = 0;
  const CLI::App* sub = nullptr;
  for (; i < args.size(); ++i) {  // everything up to and including the subcommand name
    out.cli.push_back(args[i]);
    if (!args[i].starts_with("-")) {
      sub = FindSubcommand(app, args[i]);
      ++i;
      break;
    }
  }
  if (!sub || !sub->get_allow_extras()) {
    out.cli.insert(out.cli.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    return out;
  }
  bool seen_positional = false;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {  // everything after is for CLI11 (positionals)
      out.cli.insert(out.cli.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    if (!arg.starts_with("--")) {
      out.cli.push_back(arg);
      if (!arg.starts_with("-")) seen_positional = true;
      continue;
    }
    std::size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const bool has_next = i + 1 < args.size();
    if (const CLI::Option* opt = sub->get_option_no_throw("--" + name)) {
      out.cli.push_back(arg);
      if (eq == std::string::npos && opt->get_items_expected_min() > 0 && has_next) out.cli.push_back(args[++i]);
      continue;
    }
    out.pipeline.push_back(arg);
    if (eq != std::string::npos || !has_next) continue;
    FlagArity arity = LookupFlagArity(name);
    if ((arity == FlagArity::kValue && !args[i + 1].starts_with("--")) ||
        (arity == FlagArity::kUnknown && seen_positional && !args[i + 1].starts_with("-"))) {
      out.pipeline.push_back(args[++i]);
    }
  }
  return out;
}

}  // namespace dfw::cli
