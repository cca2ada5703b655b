// The bench page: one row per grid point in throughput order.
#include <cstdio>
#include <set>

#include "dfw/report/svg.h"
#include "dfw/report/sweep.h"

namespace dfw::report {
namespace {

const char* const kPalette[] = {"#4a78b5", "#e8743b", "#19a979", "#ed4a7b", "#945ecf", "#13a4b4", "#525df4", "#bf399e"};

}  // namespace

std::string RenderSweepHtml(const std::vector<PointSummary>& sorted, const std::string& pipeline, int repeat) {
  std::string body = "<h1>dfworker bench: " + Escape(pipeline) + "</h1>\n<p class=\"note\">" +
                     std::to_string(sorted.size()) + " configuration(s), " + std::to_string(repeat) +
                     " run(s) each; medians, sorted by throughput.</p>\n";
  for (const PointSummary& p : sorted) {
    if (p.failed) continue;
    body += "<p><b>recommended:</b> " + Escape(PointName(p.point)) + " — " + Escape(FlagsFor(p.point)) + "</p>\n";
    break;
  }
  std::vector<Bar> throughput, idle, stages;
  std::vector<std::string> stage_names;
  std::set<std::string> seen;
  for (const PointSummary& p : sorted) {
    for (const auto& [s, v] : p.stage_busy_s) {
      if (seen.insert(s).second) stage_names.push_back(s);
    }
  }
  for (const PointSummary& p : sorted) {
    const std::string name = PointName(p.point);
    const bool ok = p.failed < static_cast<int>(p.runs.size());
    throughput.push_back({name, {{p.records_per_s, "#4a78b5", Fixed(p.records_per_s, 0) + " records/s"}},
                          ok ? Fixed(p.records_per_s, 0) + " (" + Fixed(p.records_per_s_min, 0) + "-" +
                                   Fixed(p.records_per_s_max, 0) + ")"
                             : "failed"});
    idle.push_back({name, {{100.0 * p.idle_fraction, "#d5a03b", Fixed(100.0 * p.idle_fraction, 0) + "% idle"}},
                    Fixed(100.0 * p.idle_fraction, 0) + "% · " + Fixed(static_cast<double>(p.max_rss_kib) / 1024.0, 0) + " MiB"});
    // The note: the bottleneck's leading stage and its kind's share, "WriteToJson: 83%" (the
    // whole sentence is in the table).
    std::string note = p.bottleneck;
    if (const std::size_t open = note.rfind('('); open != std::string::npos) {
      note = note.substr(open + 1);
      note = note.substr(0, note.find(" of stage time"));
    }
    Bar b{name, {}, note};
    for (std::size_t i = 0; i < stage_names.size(); ++i) {
      auto it = p.stage_busy_s.find(stage_names[i]);
      const double v = it == p.stage_busy_s.end() ? 0 : it->second;
      b.segments.push_back({v, kPalette[i % 8], stage_names[i] + ": " + Fixed(v, 3) + " s"});
    }
    stages.push_back(std::move(b));
  }
  body += "<h2>Throughput</h2>\n" +
          BarChart("chart-sweep-throughput", "Records/s per configuration (median; min-max of the runs)", throughput,
                   "records/s");
  body += "<h2>Where the time goes</h2>\n";
  std::vector<std::pair<std::string, std::string>> legend;
  for (std::size_t i = 0; i < stage_names.size(); ++i) legend.emplace_back(kPalette[i % 8], stage_names[i]);
  body += Legend(legend) +
          BarChart("chart-sweep-stages", "Time inside each transform per configuration (median, summed over threads)",
                   stages, "s");
  body += BarChart("chart-sweep-idle", "SDK process idle share and peak RSS per configuration", idle, "%");
  body += "<h2>Table</h2>\n<table><tr><th>configuration</th><th>records/s</th><th>min</th><th>max</th><th>wall s</th>"
          "<th>idle</th><th>RSS MiB</th><th>batch</th><th>latency ms</th><th>errors</th><th class=\"text\">bottleneck</th></tr>\n";
  bool first = true;
  for (const PointSummary& p : sorted) {
    body += std::string(first && !p.failed ? "<tr class=\"best\">" : "<tr>") + "<td>" + Escape(PointName(p.point)) +
            "</td><td>" + Fixed(p.records_per_s, 0) + "</td><td>" + Fixed(p.records_per_s_min, 0) + "</td><td>" +
            Fixed(p.records_per_s_max, 0) + "</td><td>" + Fixed(p.wall_s, 2) + "</td><td>" +
            Fixed(100.0 * p.idle_fraction, 0) + "%</td><td>" + Fixed(static_cast<double>(p.max_rss_kib) / 1024.0, 0) +
            "</td><td>" + Fixed(p.batch_size, 1) + "</td><td>" + Fixed(p.batch_latency_ms, 2) + "</td><td>" +
            std::to_string(p.errors) + "</td><td class=\"text\">" + Escape(p.failed ? std::to_string(p.failed) + " failed run(s)" : p.bottleneck) +
            "</td></tr>\n";
    first = false;
  }
  body += "</table>\n";
  return Page("dfworker bench " + pipeline, body);
}

}  // namespace dfw::report
