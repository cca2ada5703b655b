#include "dfw/stages/config_node.h"

#include <utility>

namespace dfw {
namespace {

const ConfigNode& Undefined() {
  static const ConfigNode kUndefined;
  return kUndefined;
}

}  // namespace

ConfigNode ConfigNode::Null() {
  ConfigNode n;
  n.kind_ = Kind::kNull;
  return n;
}

ConfigNode ConfigNode::Scalar(std::string text, bool quoted) {
  ConfigNode n;
  n.kind_ = Kind::kScalar;
  n.text_ = std::move(text);
  n.quoted_ = quoted;
  return n;
}

ConfigNode ConfigNode::Sequence() {
  ConfigNode n;
  n.kind_ = Kind::kSequence;
  return n;
}

ConfigNode ConfigNode::Map() {
  ConfigNode n;
  n.kind_ = Kind::kMap;
  return n;
}

std::size_t ConfigNode::size() const {
  if (kind_ == Kind::kSequence) return items_.size();
  if (kind_ == Kind::kMap) return entries_.size();
  return 0;
}

const ConfigNode& ConfigNode::operator[](std::string_view key) const {
  for (const ConfigEntry& e : entries_) {
    if (e.key.IsScalar() && e.key.Scalar() == key) return e.value;
  }
  return Undefined();
}

const ConfigNode& ConfigNode::operator[](std::size_t i) const { return i < items_.size() ? items_[i] : Undefined(); }

bool ConfigNode::Set(std::string key, ConfigNode value) {
  if (kind_ == Kind::kUndefined || kind_ == Kind::kNull) kind_ = Kind::kMap;
  if (kind_ != Kind::kMap) return false;
  for (ConfigEntry& e : entries_) {
    if (e.key.IsScalar() && e.key.Scalar() == key) {
      e.value = std::move(value);
      return true;
    }
  }
  entries_.push_back(ConfigEntry{Scalar(std::move(key)), std::move(value)});
  return true;
}

bool ConfigNode::AddEntry(ConfigNode key, ConfigNode value) {
  if (kind_ == Kind::kUndefined || kind_ == Kind::kNull) kind_ = Kind::kMap;
  if (kind_ != Kind::kMap) return false;
  entries_.push_back(ConfigEntry{std::move(key), std::move(value)});
  return true;
}

bool ConfigNode::Append(ConfigNode item) {
  if (kind_ == Kind::kUndefined || kind_ == Kind::kNull) kind_ = Kind::kSequence;
  if (kind_ != Kind::kSequence) return false;
  items_.push_back(std::move(item));
  return true;
}

}  // namespace dfw
