// MapToFields: a new row per input row, each field computed by an expression (beam-yaml.md §6).
// With `append: true` the input fields are kept (minus `drop`); redefining one of them is an error.
#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "expression_config.h"
#include "sql_stages.h"

namespace dfw {
namespace {

using stages_internal::ConfiguredExpression;

struct OutputField {
  std::string name;          // output field name
  ConfiguredExpression expr; // how to compute it
};

struct MapToFieldsOptions {
  std::vector<OutputField> fields;  // in YAML order
  bool append = false;              // keep the input fields
  std::vector<std::string> drop;    // input fields removed first (only with append)
};

class MapToFields final : public Stage {
 public:
  MapToFields(StageConfig config, MapToFieldsOptions options) : config_(std::move(config)), options_(std::move(options)) {}

  // Stateless: safe to call concurrently. Each field is evaluated over the whole batch (one
  // request to CPython when it runs there), and with `append: true` the input row itself becomes
  // the output (fields moved, never copied).
  Status Process(RowBatch& in, StageOutput& out) override {
    out.main().reserve(out.main().size() + in.size());
    std::vector<std::vector<Result<Value>>> results(options_.fields.size());
    for (std::size_t f = 0; f < options_.fields.size(); ++f) {
      options_.fields[f].expr.expr->EvaluateBatch(in.data(), in.size(), results[f]);
    }
    std::string error;
    for (std::size_t i = 0; i < in.size(); ++i) {
      Row& row = in[i];
      if (!Check(row, results, i, error)) {
        RETURN_IF_ERROR(out.Fail(row, error));
        error.clear();
        continue;
      }
      // Every field of row i succeeded: its values move from the results into the row.
      if (options_.append) {
        if (!options_.drop.empty()) {
          auto& fields = row.mutable_fields();
          fields.erase(std::remove_if(fields.begin(), fields.end(), [&](const Field& f) { return IsDropped(f.name); }),
                       fields.end());
        }
        row.Reserve(row.size() + options_.fields.size());
        for (std::size_t k = 0; k < options_.fields.size(); ++k) {
          row.AppendNull(options_.fields[k].name) = std::move(*results[k][i]);
        }
        out.Emit(std::move(row));
      } else {
        Row result;
        result.CopyMetadataFrom(row);  // the event timestamp and window stay with the element
        result.Reserve(options_.fields.size());
        for (std::size_t k = 0; k < options_.fields.size(); ++k) {
          result.AppendNull(options_.fields[k].name) = std::move(*results[k][i]);
        }
        out.Emit(std::move(result));
      }
    }
    return Status::OK();
  }

 private:
  bool IsDropped(const std::string& name) const {
    return std::find(options_.drop.begin(), options_.drop.end(), name) != options_.drop.end();
  }

  // Whether row i's output can be built: false with `error` set for a redefined input field or
  // the first field that failed or has the wrong output_type. (Expressions read the untouched
  // input, dropped fields included.)
  bool Check(const Row& row, const std::vector<std::vector<Result<Value>>>& results, std::size_t i, std::string& error) const {
    if (options_.append) {
      for (const OutputField& f : options_.fields) {
        if (row.Has(f.name) && !IsDropped(f.name)) {
          error = "Redefinition of field '" + f.name + "' (it is an input field; add it to drop or rename it)";
          return false;
        }
      }
    }
    for (std::size_t k = 0; k < options_.fields.size(); ++k) {
      const OutputField& f = options_.fields[k];
      const Result<Value>& v = results[k][i];
      if (!v.ok()) {
        error = fmt::format("field '{}' = {}: {}", f.name, f.expr.expr->source(), v.status().message());
        return false;
      }
      if (!f.expr.output_type.empty()) {
        std::string type_error = stages_internal::CheckOutputType(*v, f.expr.output_type);
        if (!type_error.empty()) {
          error = fmt::format("field '{}': {}", f.name, type_error);
          return false;
        }
      }
    }
    return true;
  }

  StageConfig config_;
  MapToFieldsOptions options_;
};

Result<std::unique_ptr<Stage>> MakeMapToFields(const StageConfig& config) {
  if (stages_internal::IsSqlLanguage(config)) return stages_internal::MakeSqlMapToFields(config);
  MapToFieldsOptions o;
  ASSIGN_OR_RETURN(ExprLanguage lang, stages_internal::ConfigLanguage(config));
  ASSIGN_OR_RETURN(o.append, ConfigBool(config, "append", false));
  ASSIGN_OR_RETURN(o.drop, ConfigStringList(config, "drop"));
  if (!o.drop.empty() && !o.append) return ConfigKeyError(config, "drop", "is only allowed with append: true");
  const ConfigNode& fields = config.config["fields"];
  if (!fields.IsDefined() || fields.IsNull()) {
    if (!o.append) return config.ConfigError("config 'fields' is required (a mapping of output field: expression)");
  } else if (!fields.IsMap()) {
    return ConfigKeyError(config, "fields", "expected a mapping of output field name to expression");
  } else {
    std::unordered_set<std::string> names;  // a linear search per field made 40k fields take 8 s
    for (const ConfigEntry& kv : fields.entries()) {
      OutputField f;
      f.name = kv.key.Scalar();
      if (!names.insert(f.name).second) {
        return ConfigKeyError(config, "fields", "field '" + f.name + "' is defined twice");
      }
      ASSIGN_OR_RETURN(f.expr, stages_internal::CompileConfigExpression(config, kv.value, "fields." + f.name, lang));
      o.fields.push_back(std::move(f));
    }
  }
  return std::unique_ptr<Stage>(new MapToFields(config, std::move(o)));
}

}  // namespace

void RegisterMapToFields(StageRegistry& r) {
  (void)r.Register({"MapToFields", MakeMapToFields, {"fields", "append", "drop", "language"}, {},
                    StageTraits{.can_fail_per_record = true}, CheckByMaking(MakeMapToFields)});
}

}  // namespace dfw
