// StageConfig locations, StageOutput's error rows, and the StageRegistry.
#include "dfw/stages/stage.h"

#include <fmt/format.h>

namespace dfw {

std::string StageConfig::Where() const {
  return fmt::format("{}:{}:{}: transform '{}' ({})", file, line, column, name, type);
}

Status StageConfig::ConfigError(const std::string& message) const {
  return InvalidArgument(Where() + ": " + message);
}

Status StageOutput::Fail(const Row& element, const std::string& msg, const std::string& stack) {
  if (config_ == nullptr || config_->error_output.empty()) {
    std::string where = config_ ? config_->Where() : std::string("stage");
    std::string json = element.ToJson();
    if (json.size() > 200) json = json.substr(0, 200) + "...";
    return DataLoss(fmt::format("{}: {}; element: {} (declare error_handling to send failing records to an error output)",
                                where, msg, json));
  }
  Row err;
  err.Reserve(4);
  err.Append("element", Value::FromRow(element));
  err.Append("msg", Value::String(msg));
  err.Append("stack", Value::String(stack.empty() ? config_->Where() : stack));
  err.Append("transform", Value::String(config_->name));
  errors_.push_back(std::move(err));
  return Status::OK();
}

Status StageOutput::FailRaw(const std::string& text, const std::string& msg, const std::string& stack) {
  Row element;
  element.Append("line", Value::String(text));
  return Fail(element, msg, stack);
}

StageCheck CheckByMaking(StageFactory factory) {
  return [factory = std::move(factory)](const StageConfig& c) { return factory(c).status(); };
}

Status StageRegistry::Register(StageTypeInfo info) {
  if (info.type.empty() || !info.factory) return InvalidArgument("stage registration needs a type and a factory");
  if (types_.count(info.type)) return InvalidArgument("stage type '" + info.type + "' is registered twice");
  std::string type = info.type;
  types_.emplace(std::move(type), std::move(info));
  return Status::OK();
}

const StageTypeInfo* StageRegistry::Find(const std::string& type) const {
  auto it = types_.find(type);
  return it == types_.end() ? nullptr : &it->second;
}

std::vector<std::string> StageRegistry::Types() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : types_) out.push_back(k);
  return out;
}

}  // namespace dfw
