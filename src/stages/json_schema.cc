// RowSchema (json_schema.h): rows and the schema as nlohmann::json, checked by valijson.
#include "json_schema.h"

// valijson reports a schema it cannot parse by throwing (caught below) only with this set; without
// it, it prints and aborts the process.
#ifndef VALIJSON_USE_EXCEPTIONS
#define VALIJSON_USE_EXCEPTIONS 1
#endif
#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "dfw/common/strings.h"
#include "dfw/stages/config.h"

namespace dfw::stages_internal {
namespace {

nlohmann::json ValueToSchemaJson(const Value& v);

nlohmann::json RowToSchemaJson(const Row& row) {
  nlohmann::json obj = nlohmann::json::object();
  for (const Field& f : row.fields()) obj[f.name] = ValueToSchemaJson(f.value);
  return obj;
}

nlohmann::json ValueToSchemaJson(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return nullptr;
    case Value::Kind::kBool: return v.as_bool();
    case Value::Kind::kInt: return v.as_int();
    case Value::Kind::kFloat: return v.as_float();
    case Value::Kind::kString: return v.as_string();
    // As dfworker writes them to JSON (Value::ToJson): seconds, base64.
    case Value::Kind::kTimestamp:
    case Value::Kind::kBytes: return nlohmann::json::parse(v.ToJson());
    case Value::Kind::kList: {
      nlohmann::json a = nlohmann::json::array();
      for (const Value& e : v.as_list()) a.push_back(ValueToSchemaJson(e));
      return a;
    }
    case Value::Kind::kRow: return RowToSchemaJson(v.as_row());
  }
  return nullptr;
}

// The first `$ref` in the schema, if any. valijson follows a reference that leads back to where it
// is (`$ref: '#'`, two definitions naming each other) without end and overflows the stack, so
// references are refused: the schema is written out instead.
const ConfigNode* FindRef(const ConfigNode& n, int depth = 0) {
  if (depth > 64) return nullptr;  // the YAML loader already bounds nesting; this bounds the walk
  for (const ConfigEntry& e : n.entries()) {
    if (e.key.IsScalar() && e.key.Scalar() == "$ref") return &e.key;
    if (const ConfigNode* r = FindRef(e.value, depth + 1)) return r;
  }
  for (const ConfigNode& item : n.items()) {
    if (const ConfigNode* r = FindRef(item, depth + 1)) return r;
  }
  return nullptr;
}

}  // namespace

struct RowSchema::Impl {
  valijson::Schema schema;
};

Result<RowSchema> RowSchema::Make(const StageConfig& c, const std::string& key) {
  const ConfigNode& node = c.config[key];
  if (!node.IsMap()) return ConfigKeyError(c, key, "must be a JSON Schema mapping, e.g. {type: object, properties: {a: {type: integer}}}");
  if (const ConfigNode* ref = FindRef(node)) {
    return Status(StatusCode::kUnimplemented, NodeLocation(c, *ref) + ": " + key +
                                                  ": '$ref' is not supported in dfworker's schemas (a reference can "
                                                  "lead back to itself); write the referenced schema in its place");
  }
  const nlohmann::json doc = ValueToSchemaJson(ConfigToValue(node));
  auto impl = std::make_shared<Impl>();
  try {
    valijson::SchemaParser parser;  // Draft 7
    valijson::adapters::NlohmannJsonAdapter adapter(doc);
    parser.populateSchema(adapter, impl->schema);
  } catch (const std::exception& e) {
    return ConfigKeyError(c, key, std::string("is not a valid JSON Schema: ") + e.what());
  }
  RowSchema s;
  s.impl_ = std::move(impl);
  return s;
}

std::optional<std::string> RowSchema::Validate(const Row& row) const {
  const nlohmann::json doc = RowToSchemaJson(row);
  valijson::ValidationResults results;
  try {
    valijson::Validator validator;  // one per call: it caches regexes, so it is not shared between threads
    valijson::adapters::NlohmannJsonAdapter adapter(doc);
    if (validator.validate(impl_->schema, adapter, &results)) return std::nullopt;
  } catch (const std::exception& e) {
    return std::string("schema validation failed: ") + e.what();
  }
  // The innermost error says what is wrong; its context says where (<root>.[age]).
  std::vector<std::string> messages;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string where;
    for (const std::string& part : error.context) where += part;
    messages.push_back(where + ": " + error.description);
  }
  if (messages.empty()) return std::string("does not match the schema");
  return Join(messages, "; ");
}

}  // namespace dfw::stages_internal
