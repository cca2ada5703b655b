// Collecting raw flags from the command line and from the pipeline file's `options:` block.
// Applying them (and deriving the accelerator) happens in apply.cc.
#include "dfw/options/parse.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iterator>

#include "dfw/common/strings.h"
#include "flag_table.h"
#include "service_options.h"

namespace dfw {
namespace oi = options_internal;

FlagArity LookupFlagArity(std::string_view name) {
  const oi::FlagSpec* spec = oi::FindFlag(name);
  if (auto service_option = oi::ServiceOptionWrittenAsFlag(name); !spec && service_option) {
    return *service_option == "worker_accelerator" ? FlagArity::kValue : FlagArity::kBool;
  }
  if (!spec) {
    auto near = oi::NearestSpelling(name);
    if (!near) return FlagArity::kUnknown;
    spec = oi::FindFlag(*near);
  }
  return (spec->kind == oi::FlagKind::kBool || spec->kind == oi::FlagKind::kIgnoredBool) ? FlagArity::kBool
                                                                                         : FlagArity::kValue;
}

bool IsKnownPipelineFlag(std::string_view name) {
  return oi::FindFlag(name) != nullptr || oi::ServiceOptionWrittenAsFlag(name).has_value();
}

void OptionsParser::AddCommandLine(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    Origin origin{"command line", arg, 0};
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0 || arg[2] == '=') {
      diagnostics_.push_back(MakeDiagnostic(
          Severity::kError, "option-syntax", "unexpected argument '" + arg + "'",
          "pipeline options are written --name=value or --name value", origin, 0, arg.size()));
      continue;
    }
    Raw raw;
    std::size_t eq = arg.find('=');
    raw.name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (eq != std::string::npos) {
      raw.value = arg.substr(eq + 1);
      raw.has_value = true;
      origin.value_offset = eq + 1;
    } else {
      // A known flag takes the next argument unless it is another flag; an unknown one only when
      // it does not start with '-' at all (Beam's argparse keeps such pairs together).
      FlagArity arity = LookupFlagArity(raw.name);
      bool has_next = i + 1 < args.size();
      bool take = (arity == FlagArity::kValue && has_next && args[i + 1].rfind("--", 0) != 0) ||
                  (arity == FlagArity::kUnknown && has_next && args[i + 1].rfind("-", 0) != 0);
      if (take) {
        raw.value = args[++i];
        raw.has_value = true;
        origin.text = arg + " " + raw.value;
        origin.value_offset = arg.size() + 1;
      } else {
        origin.value_offset = arg.size();
      }
    }
    raw.origin = std::move(origin);
    raw_.push_back(std::move(raw));
  }
}

namespace {

// "file:line:col" and the source line of a YAML node, so carets can point into the file.
Origin YamlOrigin(std::string_view text, std::string_view file_name, const YAML::Mark& mark) {
  Origin origin;
  int line = mark.line < 0 ? 0 : mark.line;
  int column = mark.column < 0 ? 0 : mark.column;
  origin.where = std::string(file_name) + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
  std::size_t start = 0;
  for (int l = 0; l < line && start != std::string_view::npos; ++l) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start == std::string_view::npos || start > text.size()) start = text.size();
  std::size_t end = text.find('\n', start);
  origin.text = std::string(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
  if (!origin.text.empty() && origin.text.back() == '\r') origin.text.pop_back();
  origin.value_offset = std::min<std::size_t>(static_cast<std::size_t>(column), origin.text.size());
  if (origin.value_offset < origin.text.size() &&
      (origin.text[origin.value_offset] == '"' || origin.text[origin.value_offset] == '\'')) {
    ++origin.value_offset;  // point at the first byte inside the quotes
  }
  return origin;
}

// The resource hints of the pipeline and of its transforms. Only well-formed entries are taken
// (a mapping of known keys to scalars); the pipeline loader refuses the rest with the position.
void CollectResourceHints(const YAML::Node& root, std::string_view text, std::string_view file_name,
                          std::vector<YamlResourceHint>& out) {
  static const char* const kKnown[] = {"accelerator", "min_ram", "cpu_count"};
  const YAML::Node pipeline = root["pipeline"];
  if (!pipeline.IsDefined() || !pipeline.IsMap()) return;
  auto take = [&](const YAML::Node& owner, const std::string& transform) {
    const YAML::Node hints = owner["resource_hints"];
    if (!hints.IsDefined() || !hints.IsMap()) return;
    const std::string where = YamlOrigin(text, file_name, owner.Mark()).where;
    for (const auto& kv : hints) {
      if (!kv.first.IsScalar() || !kv.second.IsScalar()) continue;
      const std::string key = kv.first.Scalar();
      if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) continue;
      out.push_back(YamlResourceHint{transform, where, key,
                                     OptionValue{kv.second.Scalar(), YamlOrigin(text, file_name, kv.second.Mark())}});
    }
  };
  take(pipeline, "");
  auto take_transform = [&](const YAML::Node& t) {
    if (!t.IsMap()) return;
    const YAML::Node name = t["name"], type = t["type"];
    take(t, name.IsDefined() && name.IsScalar() ? name.Scalar()
            : type.IsDefined() && type.IsScalar() ? type.Scalar()
                                                  : std::string("transform"));
  };
  auto take_list = [&](const YAML::Node& list) {
    if (!list.IsDefined() || !list.IsSequence()) return;
    for (const YAML::Node& t : list) take_transform(t);
  };
  // In file order for a chain: source, transforms, sink, then extra_transforms.
  if (pipeline["source"].IsDefined()) take_transform(pipeline["source"]);
  take_list(pipeline["transforms"]);
  if (pipeline["sink"].IsDefined()) take_transform(pipeline["sink"]);
  take_list(pipeline["extra_transforms"]);
}

}  // namespace

void OptionsParser::AddYamlFile(std::string_view yaml_text, std::string_view file_name) {
  auto syntax = [&](const YAML::Mark& mark, std::string message, std::string help) {
    Origin origin = YamlOrigin(yaml_text, file_name, mark);
    diagnostics_.push_back(MakeDiagnostic(Severity::kError, "option-syntax", std::move(message), std::move(help),
                                          origin, origin.value_offset, 0));
  };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return syntax(e.mark, "pipeline file is not valid YAML: " + e.msg, "fix the YAML syntax at this position");
  }
  try {
    if (!root.IsDefined() || root.IsNull()) return;
    if (!root.IsMap()) return syntax(root.Mark(), "pipeline file must be a YAML mapping at the top level", "");
    CollectResourceHints(root, yaml_text, file_name, yaml_hints_);
    YAML::Node block = root["options"];
    if (!block.IsDefined() || block.IsNull()) return;
    if (!block.IsMap()) {
      return syntax(block.Mark(), "'options:' must be a mapping of option name to value",
                    "write e.g.\n  options:\n    machine_type: g2-standard-8");
    }
    for (const auto& kv : block) {
      if (!kv.first.IsScalar()) {
        syntax(kv.first.Mark(), "an option name must be a plain string", "");
        continue;
      }
      std::string name = kv.first.Scalar();
      auto add = [&](const YAML::Node& node, bool list_element) {
        Raw raw;
        raw.name = name;
        raw.origin = YamlOrigin(yaml_text, file_name, node.IsNull() ? kv.first.Mark() : node.Mark());
        raw.from_yaml = true;
        raw.from_yaml_list = list_element;
        if (node.IsScalar()) {
          raw.value = node.Scalar();
          raw.has_value = true;
        } else if (node.IsNull()) {
          raw.origin.value_offset = raw.origin.text.size();
        } else {
          syntax(node.Mark(), "option '" + name + "' must be a string, number or boolean" +
                                  std::string(list_element ? " inside its list" : " or a list of them"), "");
          return;
        }
        raw_.push_back(std::move(raw));
      };
      if (kv.second.IsSequence()) {
        for (const auto& element : kv.second) add(element, true);
      } else {
        add(kv.second, false);
      }
    }
  } catch (const YAML::Exception& e) {
    syntax(e.mark, "cannot read the 'options:' block: " + e.msg, "");
  }
}

PipelineOptions ParsePipelineOptions(const std::vector<std::string>& args, std::string_view yaml_text,
                                     std::string_view yaml_file_name) {
  OptionsParser parser;
  if (!yaml_text.empty()) parser.AddYamlFile(yaml_text, yaml_file_name);
  parser.AddCommandLine(args);
  return std::move(parser).Finish();
}

}  // namespace dfw
