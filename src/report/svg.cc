#include "dfw/report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace dfw::report {
namespace {

constexpr int kWidth = 900;
constexpr int kLabelWidth = 190;  // the least; longer labels widen it (LabelWidth)
constexpr int kNoteWidth = 170;
constexpr int kRow = 24;

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// Room for the longest label at 12px (about 7px a character), within limits.
template <typename T>
double LabelWidth(const std::vector<T>& rows) {
  std::size_t longest = 0;
  for (const T& r : rows) longest = std::max(longest, r.label.size());
  return std::clamp(16.0 + 7.0 * static_cast<double>(longest), static_cast<double>(kLabelWidth), 460.0);
}

constexpr int kTicks = 5;  // axis intervals

// A round axis maximum at or above `v` (1, 2, 2.5, 5 × 10^k: each splits into 5 round steps).
double NiceMax(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (v <= m * p) return m * p;
  }
  return 10 * p;
}

std::string Head(std::string_view id, std::string_view title, int height) {
  return "<figure><figcaption>" + Escape(title) + "</figcaption><svg id=\"" + Escape(id) +
         "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(kWidth) + "\" height=\"" +
         std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(kWidth) + " " + std::to_string(height) +
         "\" role=\"img\"><title>" + Escape(title) + "</title>";
}

std::string Text(double x, double y, std::string_view text, std::string_view anchor = "start",
                 std::string_view cls = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" + std::string(anchor) + "\"" +
         (cls.empty() ? std::string() : " class=\"" + std::string(cls) + "\"") + ">" + Escape(text) + "</text>";
}

// Grid lines and tick labels along x for [0, max] between x0 and x1, below `bottom`.
std::string Axis(double x0, double x1, double top, double bottom, double max, std::string_view unit) {
  std::string out;
  for (int i = 0; i <= kTicks; ++i) {
    const double x = x0 + (x1 - x0) * i / kTicks;
    out += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(top) + "\" x2=\"" + Num(x) + "\" y2=\"" + Num(bottom) +
           "\" class=\"grid\"/>";
    out += Text(x, bottom + 14, ShortNumber(max * i / kTicks) + (i == kTicks ? " " + std::string(unit) : ""), "middle", "tick");
  }
  return out;
}

}  // namespace

std::string Escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string ShortNumber(double v) {
  char b[32];
  const double a = std::fabs(v);
  if (a >= 1e9) std::snprintf(b, sizeof b, "%.1fG", v / 1e9);
  else if (a >= 1e6) std::snprintf(b, sizeof b, "%.1fM", v / 1e6);
  else if (a >= 1e4) std::snprintf(b, sizeof b, "%.1fk", v / 1e3);
  else if (a >= 100 || v == std::floor(v)) std::snprintf(b, sizeof b, "%.0f", v);
  else std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

std::string BarChart(std::string_view id, std::string_view title, const std::vector<Bar>& bars, std::string_view unit) {
  double max = 0;
  for (const Bar& b : bars) {
    double total = 0;
    for (const BarSegment& s : b.segments) total += std::max(0.0, s.value);
    max = std::max(max, total);
  }
  max = NiceMax(max);
  const int top = 8, height = top + kRow * static_cast<int>(bars.size()) + 26;
  const double x0 = LabelWidth(bars), x1 = kWidth - kNoteWidth;
  std::string out = Head(id, title, height);
  out += Axis(x0, x1, top, height - 24, max, unit);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double y = top + kRow * static_cast<double>(i);
    out += Text(x0 - 8, y + 16, bars[i].label, "end");
    double x = x0;
    for (const BarSegment& s : bars[i].segments) {
      const double w = (x1 - x0) * std::max(0.0, s.value) / max;
      out += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y + 3) + "\" width=\"" + Num(w) + "\" height=\"" +
             std::to_string(kRow - 6) + "\" fill=\"" + Escape(s.color) + "\"><title>" + Escape(s.label) +
             "</title></rect>";
      x += w;
    }
    out += Text(x1 + 8, y + 16, bars[i].note);
  }
  return out + "</svg></figure>\n";
}

std::string TimelineChart(std::string_view id, std::string_view title, const std::vector<TimelineRow>& rows,
                          double total, std::string_view unit) {
  for (const TimelineRow& r : rows) {
    for (const Span& sp : r.spans) total = std::max(total, sp.end);
  }
  const double max = NiceMax(total);
  const int top = 8, height = top + kRow * static_cast<int>(rows.size()) + 26;
  const double x0 = LabelWidth(rows), x1 = kWidth - kNoteWidth;
  std::string out = Head(id, title, height);
  out += Axis(x0, x1, top, height - 24, max, unit);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double y = top + kRow * static_cast<double>(i);
    out += Text(x0 - 8, y + 16, rows[i].label, "end");
    for (const Span& sp : rows[i].spans) {
      const double a = x0 + (x1 - x0) * std::clamp(sp.start / max, 0.0, 1.0);
      const double b = x0 + (x1 - x0) * std::clamp(sp.end / max, 0.0, 1.0);
      out += "<rect x=\"" + Num(a) + "\" y=\"" + Num(y + 3) + "\" width=\"" + Num(std::max(1.0, b - a)) +
             "\" height=\"" + std::to_string(kRow - 6) + "\" fill=\"" + Escape(sp.color) +
             "\" stroke=\"#fff\" stroke-width=\"1\"><title>" + Escape(sp.label) + "</title></rect>";
    }
    out += Text(x1 + 8, y + 16, rows[i].note);
  }
  return out + "</svg></figure>\n";
}

std::string RangeChart(std::string_view id, std::string_view title, const std::vector<Range>& ranges,
                       std::string_view unit) {
  double max = 0;
  for (const Range& r : ranges) max = std::max(max, r.max);
  max = NiceMax(max);
  const int top = 8, height = top + kRow * static_cast<int>(ranges.size()) + 26;
  bool percentiles = false;
  for (const Range& r : ranges) percentiles |= r.p50 >= 0;
  // "min / mean / max (n=…)" is wider than a bar note, and wider still with "p50 … p99 …".
  const double x0 = LabelWidth(ranges), x1 = kWidth - kNoteWidth - (percentiles ? 150 : 50);
  std::string out = Head(id, title, height);
  out += Axis(x0, x1, top, height - 24, max, unit);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const Range& r = ranges[i];
    const double y = top + kRow * static_cast<double>(i) + kRow / 2.0;
    const double a = x0 + (x1 - x0) * r.min / max, b = x0 + (x1 - x0) * r.max / max, m = x0 + (x1 - x0) * r.mean / max;
    out += Text(x0 - 8, y + 4, r.label, "end");
    out += "<line x1=\"" + Num(a) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(std::max(b, a + 1)) + "\" y2=\"" + Num(y) +
           "\" class=\"range\"/>";
    out += "<circle cx=\"" + Num(m) + "\" cy=\"" + Num(y) + "\" r=\"5\" class=\"mean\"><title>mean " +
           ShortNumber(r.mean) + " " + Escape(unit) + "</title></circle>";
    for (const auto& [q, v] : {std::pair{"p50", r.p50}, std::pair{"p99", r.p99}}) {
      if (v < 0) continue;
      const double x = x0 + (x1 - x0) * std::min(v, max) / max;
      out += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(y - 7) + "\" x2=\"" + Num(x) + "\" y2=\"" + Num(y + 7) +
             "\" class=\"pct\" stroke=\"#333\" stroke-width=\"2\"><title>" + q + " " + ShortNumber(v) + " " +
             Escape(unit) + "</title></line>";
    }
    out += Text(x1 + 8, y + 4,
                ShortNumber(r.min) + " / " + ShortNumber(r.mean) + " / " + ShortNumber(r.max) + " (n=" +
                    ShortNumber(r.count) + ")" +
                    (r.p50 >= 0 ? " p50 " + ShortNumber(r.p50) + " p99 " + ShortNumber(r.p99) : std::string()));
  }
  return out + "</svg></figure>\n";
}

namespace {

// The value grid (left ticks) and one column per value between x0 and x1, top and bottom; the
// tooltip of column i is tip(i) followed by its value and unit.
template <typename Tip>
std::string Columns(const std::vector<double>& values, std::string_view unit, double x0, double x1, double top,
                    double bottom, Tip tip) {
  double max = 0;
  for (double v : values) max = std::max(max, v);
  max = NiceMax(max);
  std::string out;
  for (int i = 0; i <= kTicks; ++i) {
    const double y = bottom - (bottom - top) * i / kTicks;
    out += "<line x1=\"" + Num(x0) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(x1) + "\" y2=\"" + Num(y) + "\" class=\"grid\"/>";
    out += Text(x0 - 6, y + 4, ShortNumber(max * i / kTicks), "end", "tick");
  }
  const double step = values.empty() ? 0 : (x1 - x0) / static_cast<double>(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double h = (bottom - top) * std::max(0.0, values[i]) / max;
    out += "<rect x=\"" + Num(x0 + step * static_cast<double>(i) + step * 0.1) + "\" y=\"" + Num(bottom - h) +
           "\" width=\"" + Num(std::max(1.0, step * 0.8)) + "\" height=\"" + Num(h) + "\" class=\"col\"><title>" +
           tip(i) + ": " + ShortNumber(values[i]) + " " + Escape(unit) + "</title></rect>";
  }
  return out;
}

// The unit a time axis of `span_s` seconds reads in, and seconds per unit.
std::pair<const char*, double> TimeUnit(double span_s) {
  if (span_s < 2) return {"ms", 1e-3};
  if (span_s < 120) return {"s", 1};
  if (span_s < 7200) return {"min", 60};
  return {"h", 3600};
}

}  // namespace

std::string ColumnChart(std::string_view id, std::string_view title, const std::vector<double>& values,
                        std::string_view unit, std::string_view x_label) {
  const int height = 220, top = 10, bottom = height - 40;
  const double x0 = 70, x1 = kWidth - 20;
  std::string out = Head(id, title, height);
  out += Columns(values, unit, x0, x1, top, bottom, [](std::size_t i) { return std::to_string(i + 1); });
  out += Text((x0 + x1) / 2, height - 10, std::string(x_label) + " (" + std::to_string(values.size()) + ")", "middle", "tick");
  out += Text(14, top + 10, std::string(unit), "start", "tick");
  return out + "</svg></figure>\n";
}

std::string Duration(double seconds) {
  const auto [unit, per] = TimeUnit(seconds);
  const double v = seconds / per;
  char b[48];
  std::snprintf(b, sizeof b, v >= 100 ? "%.0f %s" : "%.3g %s", v, unit);  // three digits, never an exponent
  return b;
}

std::string TimeColumnChart(std::string_view id, std::string_view title, const std::vector<double>& values,
                            std::string_view unit, double span_s) {
  const int height = 232, top = 24, bottom = height - 40;  // the unit sits above the top tick
  const double x0 = 70, x1 = kWidth - 20;
  // Not a structured binding: the tooltip lambda captures the unit (clang 14 cannot capture bindings).
  const std::pair<const char*, double> axis = TimeUnit(span_s);
  const char* const time_unit = axis.first;
  const double per = axis.second;
  const double span_u = span_s > 0 ? span_s / per : 0;
  const double per_column_u = values.empty() ? 0 : span_u / static_cast<double>(values.size());
  std::string out = Head(id, title, height);
  out += Columns(values, unit, x0, x1, top, bottom, [&](std::size_t i) {
    return ShortNumber(per_column_u * static_cast<double>(i)) + "-" +
           ShortNumber(per_column_u * static_cast<double>(i + 1)) + " " + time_unit;
  });
  // Round time ticks (1, 2, 2.5 or 5 × 10^k apart, at most kTicks + 1 of them) placed where they fall.
  const double tick = NiceMax(span_u / kTicks);
  for (int i = 0; span_u > 0 && i * tick <= span_u * (1 + 1e-9); ++i) {
    const double x = x0 + (x1 - x0) * (i * tick) / span_u;
    out += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(bottom) + "\" x2=\"" + Num(x) + "\" y2=\"" + Num(bottom + 4) +
           "\" class=\"grid\"/>";
    out += Text(x, bottom + 16, ShortNumber(i * tick), "middle", "tick");
  }
  out += Text((x0 + x1) / 2, height - 8, std::string("time since the job started (") + time_unit + ")", "middle", "tick");
  out += Text(x0 - 6, 12, std::string(unit), "end", "tick");
  return out + "</svg></figure>\n";
}

std::string StepChart(std::string_view id, std::string_view title, const std::vector<std::pair<double, double>>& points,
                      double total_s, double limit, std::string_view unit) {
  constexpr double kLeft = 80, kRight = kWidth - 20, kTop = 10, kBottom = 150;
  const int height = static_cast<int>(kBottom) + 30;
  double top_value = limit;
  for (const auto& [t, v] : points) {
    top_value = std::max(top_value, v);
    total_s = std::max(total_s, t);
  }
  const double ymax = NiceMax(top_value);
  const double xmax = total_s > 0 ? total_s : 1;
  auto X = [&](double t) { return kLeft + (kRight - kLeft) * t / xmax; };
  auto Y = [&](double v) { return kBottom - (kBottom - kTop) * v / ymax; };
  std::string out = Head(id, title, height);
  for (int i = 0; i <= kTicks; ++i) {  // value grid on the left
    const double v = ymax * i / kTicks;
    out += "<line x1=\"" + Num(kLeft) + "\" y1=\"" + Num(Y(v)) + "\" x2=\"" + Num(kRight) + "\" y2=\"" + Num(Y(v)) +
           "\" class=\"grid\"/>" + Text(kLeft - 6, Y(v) + 4, ShortNumber(v), "end", "tick");
  }
  for (int i = 0; i <= kTicks; ++i) {  // time along the bottom
    const double t = xmax * i / kTicks;
    out += Text(X(t), kBottom + 16, ShortNumber(t) + (i == kTicks ? " s" : ""), "middle", "tick");
  }
  out += Text(kLeft - 6, kTop + 4, std::string(unit), "end", "tick");
  if (limit > 0) {
    out += "<line x1=\"" + Num(kLeft) + "\" y1=\"" + Num(Y(limit)) + "\" x2=\"" + Num(kRight) + "\" y2=\"" +
           Num(Y(limit)) + "\" stroke=\"#c0392b\" stroke-dasharray=\"5,4\"><title>limit " + Escape(ShortNumber(limit)) +
           "</title></line>";
  }
  if (!points.empty()) {
    std::string path = "M" + Num(X(points[0].first)) + "," + Num(Y(points[0].second));
    for (std::size_t i = 1; i < points.size(); ++i) {
      path += " H" + Num(X(points[i].first)) + " V" + Num(Y(points[i].second));
    }
    path += " H" + Num(X(xmax));
    out += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#4a78b5\" stroke-width=\"2\"/>";
  }
  return out + "</svg></figure>\n";
}

std::string Legend(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out = "<p class=\"legend\">";
  for (const auto& [color, name] : items) {
    out += "<span class=\"swatch\" style=\"background:" + Escape(color) + "\"></span>" + Escape(name) + " ";
  }
  return out + "</p>\n";
}

std::string Page(std::string_view title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>" + Escape(title) +
         "</title><style>\n"
         "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:960px;color:#222}\n"
         "h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}\n"
         "figure{margin:8px 0}figcaption{font-size:13px;color:#555;margin-bottom:2px}\n"
         "svg text{font-size:12px;fill:#333}svg .tick{font-size:10px;fill:#777}\n"
         "svg .grid{stroke:#e4e4e4;stroke-width:1}svg .range{stroke:#4a78b5;stroke-width:3}\n"
         "svg .mean{fill:#e8743b}svg .col{fill:#4a78b5}\n"
         "table{border-collapse:collapse;font-size:13px;margin:6px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}\n"
         "th{background:#f4f4f4}td:first-child,th:first-child,td.text,th.text{text-align:left}\n"
         ".legend{font-size:12px;color:#555}.swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}\n"
         ".kpi{display:inline-block;margin:6px 18px 6px 0}.kpi b{display:block;font-size:20px}\n"
         ".note{font-size:12px;color:#666}.best{background:#eaf5ea}\n"
         "</style></head><body>\n" +
         body + "</body></html>\n";
}

}  // namespace dfw::report
