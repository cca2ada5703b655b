// ReadFromJson: JSON Lines (one object per line) parsed with simdjson into rows.
#include <cstring>

// simdjson 3.0's inline DOM accessors trip g++ 12's -Wdangling-pointer / -Wmaybe-uninitialized
// false positives inside the library header; silence them for that header only.
// (clang has neither warning and would warn about the unknown names.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <simdjson.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <fmt/format.h>

#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "file_source.h"

namespace dfw {
namespace {

using stages_internal::LineSplitReader;

struct ReadJsonOptions {
  std::string path;  // glob of JSON Lines files
};

void AssignValue(Value& out, simdjson::dom::element e);

// Fields reserved beyond the object's own: downstream stages typically append a few (MapToFields
// with append, RunInference's inference tag), and growing then would reallocate and move every field.
constexpr std::size_t kRowHeadroom = 4;

// The field of `row` named `key`, or nullptr. Rows read here are narrow; a first-byte check keeps
// the repeated-key scan from calling memcmp for every earlier field.
Field* FindReadField(std::vector<Field>& fields, std::string_view key) {
  for (Field& f : fields) {
    if (f.name.size() == key.size() && (key.empty() || (f.name[0] == key[0] && std::memcmp(f.name.data(), key.data(), key.size()) == 0))) {
      return &f;
    }
  }
  return nullptr;
}

Row ToRow(simdjson::dom::object obj) {
  Row row;
  std::vector<Field>& fields = row.mutable_fields();
  fields.reserve(obj.size() + kRowHeadroom);
  for (auto kv : obj) {
    std::string_view key = kv.key;
    Field* field = FindReadField(fields, key);
    // A repeated key keeps the last value; otherwise the field is built in place in the row's
    // vector (no temporary Field to move: each key and string value is copied once).
    if (field == nullptr) {
      field = &fields.emplace_back();
      field->name.append(key.data(), key.size());  // cheaper than assign's general replace
    }
    AssignValue(field->value, kv.value);
  }
  return row;
}

void AssignValue(Value& out, simdjson::dom::element e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::OBJECT: out = Value::FromRow(ToRow(e.get_object().value_unsafe())); return;
    case element_type::ARRAY: {
      List items;
      simdjson::dom::array array = e.get_array().value_unsafe();
      items.reserve(array.size());  // size() saturates at 2^24 - 1: only a hint
      for (simdjson::dom::element v : array) AssignValue(items.emplace_back(), v);
      out = Value::FromList(std::move(items));
      return;
    }
    case element_type::INT64: out.AssignInt(e.get_int64().value_unsafe()); return;
    case element_type::UINT64: out.AssignFloat(static_cast<double>(e.get_uint64().value_unsafe())); return;
    case element_type::DOUBLE: out.AssignFloat(e.get_double().value_unsafe()); return;
    case element_type::STRING: out.AssignString(e.get_string().value_unsafe()); return;
    case element_type::BOOL: out.AssignBool(e.get_bool().value_unsafe()); return;
    case element_type::NULL_VALUE: out = Value(); return;
  }
  out = Value();
}

class ReadJson final : public Stage {
 public:
  ReadJson(StageConfig config, ReadJsonOptions options) : config_(std::move(config)), options_(std::move(options)) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("ReadFromJson has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t target_bytes) override {
    ASSIGN_OR_RETURN(auto files, stages_internal::ExpandGlob(config_, options_.path));
    return stages_internal::SplitFiles(files, target_bytes, /*csv_quotes=*/false);
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    // One parser per reader: simdjson parsers are not thread-safe, readers are never shared.
    auto parser = std::make_shared<simdjson::dom::parser>();
    std::string path = split.path;
    return LineSplitReader::Open(
        split, simdjson::SIMDJSON_PADDING,
        [parser, path](std::string_view line, int64_t line_no, StageOutput& out) -> Status {
          // The range buffer carries SIMDJSON_PADDING readable bytes after its end, so no copy is needed.
          simdjson::dom::element doc;
          auto error = parser->parse(line.data(), line.size(), false).get(doc);
          if (error == simdjson::UTF8_ERROR) {  // the reader skipped its own check: simdjson validates
            return out.FailRaw(std::string(line), fmt::format("line {} of '{}': not valid UTF-8", line_no, path));
          }
          if (error) {
            return out.FailRaw(std::string(line),
                               fmt::format("line {} of '{}': malformed JSON: {}", line_no, path, simdjson::error_message(error)));
          }
          if (!doc.is_object()) {
            return out.FailRaw(std::string(line), fmt::format("line {} of '{}': expected a JSON object, got {}", line_no,
                                                              path, doc.is_array() ? "an array" : "a scalar"));
          }
          out.Emit(ToRow(doc.get_object().value_unsafe()));
          return Status::OK();
        },
        /*check_utf8=*/false);
  }

 private:
  StageConfig config_;
  ReadJsonOptions options_;
};

Result<std::unique_ptr<Stage>> MakeReadJson(const StageConfig& config) {
  ReadJsonOptions o;
  ASSIGN_OR_RETURN(o.path, ConfigString(config, "path"));
  RETURN_IF_ERROR(CheckLocalPath(config, "path", o.path));
  o.path = ResolveConfigPath(config, o.path);
  return std::unique_ptr<Stage>(new ReadJson(config, std::move(o)));
}

}  // namespace

void RegisterReadJson(StageRegistry& r) {
  (void)r.Register({"ReadFromJson", MakeReadJson, {"path"}, {"path"}, StageTraits{.is_source = true, .can_fail_per_record = true}, CheckByMaking(MakeReadJson)});
}

}  // namespace dfw
