// Partition (Beam YAML's `Partition`, apache_beam/yaml/yaml_mapping.py): each row goes to exactly one
// named output, `Name.out_name`, chosen by `by` — a field name, or an expression / callable in the
// transform's `language`. A row whose name is not among `outputs` goes to `unknown_output` when
// set; otherwise, as on Beam, it is a per-record failure ("Unknown output name ..."), which goes to
// the error output with error_handling and stops the run without. A `by` that returns None goes to
// `unknown_output` (Beam's rule), and any other non-string is a failure. No row is ever dropped.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "expression_config.h"

namespace dfw {
namespace {

struct PartitionOptions {
  stages_internal::ConfiguredExpression by;  // the destination output's name, per row
  std::string by_text;                       // `by` as written, for messages (Beam's: 'from {by}')
  std::vector<std::string> outputs;          // `outputs`: EmitTo index k is outputs[k]
  int unknown = -1;                          // index of `unknown_output` in the declared outputs; -1 = unset
};

// Declared outputs: `outputs` in order, then `unknown_output` unless it is one of them.
Result<std::vector<std::string>> DeclaredOutputs(const StageConfig& config, std::string* unknown) {
  const ConfigNode& list = config.config["outputs"];
  if (!list.IsSequence() || list.items().empty()) {
    return ConfigKeyError(config, "outputs", "expected a non-empty list of output names, e.g. outputs: [small, large]");
  }
  std::vector<std::string> outputs;
  for (const ConfigNode& item : list.items()) {
    if (!item.IsScalar() || item.Scalar().empty()) {
      return ConfigKeyError(config, "outputs", "every output must be a non-empty name");
    }
    const std::string& name = item.Scalar();
    if (name.find('.') != std::string::npos) {
      return ConfigKeyError(config, "outputs", "output name '" + name + "' contains '.', which input: references split on");
    }
    if (std::find(outputs.begin(), outputs.end(), name) != outputs.end()) {
      return ConfigKeyError(config, "outputs", "output '" + name + "' is listed twice");
    }
    outputs.push_back(name);
  }
  ASSIGN_OR_RETURN(std::string u, ConfigString(config, "unknown_output", std::string()));
  if (ConfigHas(config, "unknown_output") && u.empty()) {
    return ConfigKeyError(config, "unknown_output", "expected an output name");
  }
  if (!u.empty() && std::find(outputs.begin(), outputs.end(), u) == outputs.end()) outputs.push_back(u);
  if (unknown != nullptr) *unknown = u;
  return outputs;
}

bool IsFieldName(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

class Partition final : public Stage {
 public:
  explicit Partition(PartitionOptions options) : options_(std::move(options)) {}

  // Stateless: safe to call concurrently.
  Status Process(RowBatch& in, StageOutput& out) override {
    for (Row& row : in) {
      Result<Value> v = options_.by.expr->Evaluate(row);
      if (!v.ok()) {
        RETURN_IF_ERROR(out.Fail(row, "by = " + options_.by_text + ": " + v.status().message()));
        continue;
      }
      int tag = -1;
      if (v->is_null() && options_.unknown >= 0) {
        tag = options_.unknown;
      } else if (!v->is_string()) {
        RETURN_IF_ERROR(out.Fail(row, fmt::format("Returned output name \"{}\" of type {} from \"{}\" must be a string.",
                                                  v->is_null() ? "None" : v->ToJson(), v->TypeName(), options_.by_text)));
        continue;
      } else {
        const std::string& name = v->as_string();
        auto it = std::find(options_.outputs.begin(), options_.outputs.end(), name);
        if (it != options_.outputs.end()) {
          tag = static_cast<int>(it - options_.outputs.begin());
        } else if (options_.unknown >= 0) {
          tag = options_.unknown;
        } else {
          RETURN_IF_ERROR(out.Fail(row, fmt::format("Unknown output name \"{}\" from {}; outputs: {} (set unknown_output "
                                                    "to collect the others)",
                                                    name, options_.by_text, Join(options_.outputs))));
          continue;
        }
      }
      out.EmitTo(static_cast<std::size_t>(tag), std::move(row));
    }
    return Status::OK();
  }

 private:
  PartitionOptions options_;
};

Result<std::unique_ptr<Stage>> MakePartition(const StageConfig& config) {
  PartitionOptions o;
  std::string unknown;
  ASSIGN_OR_RETURN(o.outputs, DeclaredOutputs(config, &unknown));
  if (!unknown.empty()) o.unknown = static_cast<int>(std::find(o.outputs.begin(), o.outputs.end(), unknown) - o.outputs.begin());
  ASSIGN_OR_RETURN(ExprLanguage lang, stages_internal::ConfigLanguage(config));
  const ConfigNode& by = config.config["by"];
  if (!by.IsDefined() || by.IsNull()) return config.ConfigError("config 'by' is required");
  if (lang == ExprLanguage::kGeneric) {
    // Beam's generic language gives Partition a field name only (no comparison, no callable).
    if (by.IsMap()) {
      return ConfigKeyError(config, "by",
                            "Missing language specification. Must specify a language when using a map with custom logic for by");
    }
    if (!by.IsScalar() || !IsFieldName(by.Scalar())) {
      return ConfigKeyError(config, "by",
                            "Missing language specification, unknown input fields, or invalid generic expression: " +
                                (by.IsScalar() ? by.Scalar() : std::string("?")) +
                                ". See https://beam.apache.org/documentation/sdks/yaml-udf/#generic (a field name, or "
                                "language: python for an expression)");
    }
  }
  o.by_text = by.IsScalar() ? by.Scalar()
              : by["callable"].IsScalar() ? by["callable"].Scalar()
              : by["expression"].IsScalar() ? by["expression"].Scalar()
                                            : std::string("by");
  ASSIGN_OR_RETURN(o.by, stages_internal::CompileConfigExpression(config, by, "by", lang));
  return std::unique_ptr<Stage>(new Partition(std::move(o)));
}

}  // namespace

void RegisterPartition(StageRegistry& r) {
  StageTypeInfo info{"Partition", MakePartition, {"by", "outputs", "unknown_output", "language"}, {"by", "outputs"},
                     StageTraits{.can_fail_per_record = true, .no_main_output = true}, CheckByMaking(MakePartition)};
  info.named_outputs = [](const StageConfig& c) { return DeclaredOutputs(c, nullptr); };
  (void)r.Register(std::move(info));
}

}  // namespace dfw
