// Small inline-SVG charts for the HTML reports (no script, no network): horizontal bars, stacked
// bars and min/mean/max ranges. Every chart is one <svg> element with an id and a <title>.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dfw::report {

// &, <, >, " and ' escaped for HTML text and attribute values.
std::string Escape(std::string_view text);
// "1.2k", "3.4M", "12", "0.35" — short numbers for axis labels.
std::string ShortNumber(double v);
// `v` with `digits` decimals (printf %.*f), for table cells and labels.
std::string Fixed(double v, int digits = 2);

struct BarSegment {
  double value = 0;
  std::string color;  // CSS colour
  std::string label;  // tooltip (<title>) text
};

struct Bar {
  std::string label;                  // left of the bar
  std::vector<BarSegment> segments;   // stacked left to right
  std::string note;                   // right of the bar (e.g. "1,234 records")
};

// Horizontal (stacked) bars scaled to the largest total; `unit` follows the axis maximum.
std::string BarChart(std::string_view id, std::string_view title, const std::vector<Bar>& bars,
                     std::string_view unit);

struct Range {
  std::string label;
  double min = 0, mean = 0, max = 0;
  double count = 0;
  double p50 = -1, p99 = -1;  // from the distribution's histogram; < 0 = unknown
};

// One row per range: a line from min to max with a dot at the mean and ticks at p50 and p99 (when
// known), on a shared axis.
std::string RangeChart(std::string_view id, std::string_view title, const std::vector<Range>& ranges,
                       std::string_view unit);

// Vertical columns in order (e.g. a value per committed bundle, or per sweep point).
std::string ColumnChart(std::string_view id, std::string_view title, const std::vector<double>& values,
                        std::string_view unit, std::string_view x_label);

// Vertical columns over equal intervals of time from 0 to `span_s`: the x axis is a time axis whose
// unit follows the length (ms under 2 s, s under 2 min, min under 2 h, else h), ticks included.
std::string TimeColumnChart(std::string_view id, std::string_view title, const std::vector<double>& values,
                            std::string_view unit, double span_s);

// A duration with the unit that fits its length, as a reader says it: "45 ms", "3.2 s", "12 min".
std::string Duration(double seconds);

// A Gantt-style timeline: one row per label, each span drawn at [start, end] on a shared time axis
// from 0 to `total` (at least the latest end).
struct Span {
  double start = 0, end = 0;
  std::string color;
  std::string label;  // tooltip
};
struct TimelineRow {
  std::string label;
  std::vector<Span> spans;
  std::string note;
};
std::string TimelineChart(std::string_view id, std::string_view title, const std::vector<TimelineRow>& rows,
                          double total, std::string_view unit);

// A step line over time: `points` (seconds, value) held until the next point, on axes from 0 to
// `total_s` and from 0 to `limit` (drawn as a dashed line, e.g. a budget) or the largest value.
std::string StepChart(std::string_view id, std::string_view title, const std::vector<std::pair<double, double>>& points,
                      double total_s, double limit, std::string_view unit);

// A legend line: coloured squares with their names.
std::string Legend(const std::vector<std::pair<std::string, std::string>>& color_and_name);

// The page around the sections: <!DOCTYPE html>, inline CSS, title.
std::string Page(std::string_view title, const std::string& body);

}  // namespace dfw::report
