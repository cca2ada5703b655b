#include "dfw/metrics/prometheus.h"

#include <cmath>
#include <cstdio>

namespace dfw {
namespace {

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char b[64];
  if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15) std::snprintf(b, sizeof b, "%.0f", v);
  else std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

}  // namespace

std::string PrometheusWriter::SanitizeName(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

void PrometheusWriter::Add(std::string_view name, std::string_view type, std::string_view help, const Labels& labels,
                           double value) {
  const std::string family = SanitizeName(name);
  Family& f = families_[family];
  if (f.type.empty()) {
    f.type = std::string(type);
    f.help = std::string(help);
  }
  std::string line = family;
  if (!labels.empty()) {
    line += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i) line += ',';
      line += SanitizeName(labels[i].first) + "=\"" + EscapeLabelValue(labels[i].second) + "\"";
    }
    line += '}';
  }
  f.samples.push_back(line + " " + FormatValue(value));
}

void PrometheusWriter::AddSnapshot(const MetricsSnapshot& snapshot, const Labels& labels, std::string_view own_namespace) {
  auto name_of = [&](const MetricKey& key) {
    return key.ns == own_namespace ? std::string(own_namespace) + "_" + key.name : key.name;
  };
  auto with_ns = [&](const MetricKey& key) {
    Labels l = labels;
    if (key.ns != own_namespace) l.emplace_back("namespace", key.ns);
    return l;
  };
  for (const auto& [key, value] : snapshot.counters) {
    Add(name_of(key), "counter", "Beam counter " + key.name, with_ns(key), static_cast<double>(value));
  }
  for (const auto& [key, d] : snapshot.distributions) {
    const std::string name = name_of(key);
    const Labels l = with_ns(key);
    // A summary without quantiles: Beam distributions keep count, sum, min and max only.
    Family& f = families_[SanitizeName(name)];
    if (f.type.empty()) {
      f.type = "summary";
      f.help = "Beam distribution " + key.name + " (count and sum; min and max in _min/_max)";
    }
    std::string head = SanitizeName(name);
    std::string lbl;
    for (std::size_t i = 0; i < l.size(); ++i) {
      lbl += (i ? "," : "") + SanitizeName(l[i].first) + "=\"" + EscapeLabelValue(l[i].second) + "\"";
    }
    lbl = lbl.empty() ? "" : "{" + lbl + "}";
    f.samples.push_back(head + "_sum" + lbl + " " + FormatValue(static_cast<double>(d.sum)));
    f.samples.push_back(head + "_count" + lbl + " " + FormatValue(static_cast<double>(d.count)));
    if (d.count > 0) {
      Add(name + "_min", "gauge", "smallest value of Beam distribution " + key.name, l, static_cast<double>(d.min));
      Add(name + "_max", "gauge", "largest value of Beam distribution " + key.name, l, static_cast<double>(d.max));
    }
  }
}

std::string PrometheusWriter::Text() const {
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n";
    out += "# TYPE " + name + " " + f.type + "\n";
    for (const std::string& s : f.samples) out += s + "\n";
  }
  return out;
}

}  // namespace dfw
