// Text and JSON of the plan across the catalog.
#include <algorithm>
#include <cstdio>
#include <vector>
#include <nlohmann/json.hpp>

#include "dfw/common/strings.h"
#include "dfw/plan/catalog_plan.h"

namespace dfw {
namespace {

std::string Configuration(const CatalogPlanRow& r) {
  if (!r.mig_profile.empty()) {
    return "MIG " + r.mig_profile + " (" + std::to_string(r.mig_compute_slices) + "/" +
           std::to_string(r.mig_gpu_slices) + " SMs, up to " +
           std::to_string(r.mig_max_instances) + " per GPU)";
  }
  return (r.machine_type.empty() ? std::string("(no --machine_type)") : r.machine_type) + ", " +
         std::to_string(r.gpu_count) + " GPU" + (r.gpu_count == 1 ? "" : "s");
}

std::string Gib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(bytes) / 1073741824.0);
  return b;
}

std::string Fmt(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

// "g2-standard-8 + 1 x l4" (34 columns at most in the estimate table: the "nvidia-" prefix is dropped).
std::string ShortConfiguration(const CatalogPlanRow& r) {
  const std::string gpu = r.gpu.rfind("nvidia-", 0) == 0 ? r.gpu.substr(7) : r.gpu;
  if (!r.mig_profile.empty()) return gpu + " MIG " + r.mig_profile;
  return (r.machine_type.empty() ? std::string("(host)") : r.machine_type) + " + " + std::to_string(r.gpu_count) +
         " x " + gpu;
}

std::string BottleneckText(const Estimate& e) {
  if (e.bottleneck == Bottleneck::kCpu) {
    return "CPU, GPU waits " + Fmt(e.gpu_wait > 0.99 ? "%.1f" : "%.0f", e.gpu_wait * 100) + "%";
  }
  if (e.bottleneck == Bottleneck::kGpuMemoryBandwidth) return "GPU bandwidth";
  return BottleneckName(e.bottleneck);
}

std::string Money(const Estimate& e, double v) {
  if (!e.priced || v <= 0) return "-";
  return Fmt(v < 0.01 ? "%.3g" : v < 10 ? "%.3f" : "%.0f", v);
}

// `line` (no newline) wrapped at spaces to 100 columns; continuation lines start with `indent`.
std::string Wrap(const std::string& line, const std::string& indent) {
  constexpr std::size_t kWidth = 100;
  const std::size_t lead = line.find_first_not_of(' ');
  if (lead == std::string::npos) return line + "\n";
  std::string out, current = line.substr(0, lead);
  bool fresh = true;  // `current` holds only its indentation
  for (std::size_t start = lead; start < line.size();) {
    std::size_t end = line.find(' ', start);
    if (end == std::string::npos) end = line.size();
    const std::string word = line.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!fresh && current.size() + 1 + word.size() > kWidth) {
      out += current + "\n";
      current = indent;
      fresh = true;
    }
    current += (fresh ? "" : " ") + word;
    fresh = false;
  }
  return out + current + "\n";
}

// One recommendation with everything it rests on.
std::string Recommendation(const char* what, const CatalogPlanRow& r) {
  const Estimate& e = *r.estimate;
  std::string out = std::string(what) + ": " + ShortConfiguration(r) + " (" + FitVerdictName(r.verdict) + "): ~" +
                    Fmt(e.records_per_second < 10 ? "%.3g" : "%.0f", e.records_per_second) + " records/s per worker, bottleneck " + BottleneckText(e);
  if (e.priced) {
    out += ", " + e.currency + " " + Money(e, e.price_per_hour) + "/h, " + Money(e, e.cost_per_thousand) + " per 1,000 and " +
           Money(e, e.cost_per_million) + " per million records";
  }
  if (e.job_hours) {
    out += ", job " + Fmt("%.2f", *e.job_hours) + " h";
    if (e.job_cost) out += " for " + e.currency + " " + Money(e, *e.job_cost);
  }
  std::string text = Wrap(out, "    ");
  for (const std::string& in : e.inputs) text += Wrap("    input: " + in, "        ");
  text += Wrap(e.priced ? "    price: " + e.price_how : "    price: none (" + e.price_unknown + ")", "        ");
  return text;
}

// Rows of the estimate table: fitting rows with a speed, cheapest per record first (unpriced ones
// after, fastest first), or fastest first with --objective time; the first kEstimateRows unless `all`.
constexpr std::size_t kEstimateRows = 10;

std::string EstimateText(const CatalogPlan& plan, bool all) {
  const EstimateInputs& in = *plan.estimate_inputs;
  std::string out = "estimates (not measurements; every input is printed)";
  if (in.records) out += ", job of " + std::to_string(*in.records) + " records on " + std::to_string(in.workers) + " worker(s)";
  out = Wrap(out, "  ");
  const std::string cheapest = plan.cheapest >= 0
                                   ? Recommendation("cheapest", plan.rows[plan.cheapest])
                                   : "cheapest: none (no configuration that fits has both a speed estimate and a price)\n";
  const std::string fastest = plan.fastest >= 0 ? Recommendation("fastest", plan.rows[plan.fastest])
                                                : "fastest: none (no configuration that fits has a speed estimate)\n";
  const bool by_time = in.objective == Objective::kTime;
  out += by_time ? fastest + cheapest : cheapest + fastest;
  char line[256];
  std::snprintf(line, sizeof line, "  %-34s %8s %-20s %6s %8s %6s %8s\n", "configuration (fits or tight)", "rec/s",
                "bottleneck", "$/h", "$/1M", "job h", "job $");
  out += line;
  std::string unknown;
  std::vector<int> order;
  for (const CatalogPlanRow& r : plan.rows) {
    if (r.verdict == FitVerdict::kDoesNotFit || !r.estimate) continue;
    if (!r.estimate->speed_known) {
      if (unknown.empty()) unknown = r.estimate->speed_unknown;
      continue;
    }
    order.push_back(static_cast<int>(&r - plan.rows.data()));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Estimate& x = *plan.rows[a].estimate;
    const Estimate& y = *plan.rows[b].estimate;
    if (by_time) return x.records_per_second > y.records_per_second;
    if (x.priced != y.priced) return x.priced;
    return x.priced ? x.cost_per_million < y.cost_per_million : x.records_per_second > y.records_per_second;
  });
  const std::size_t shown = all ? order.size() : std::min(order.size(), kEstimateRows);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int i = order[k];
    // The two recommendations always show.
    if (k >= shown && i != plan.cheapest && i != plan.fastest) continue;
    const CatalogPlanRow& r = plan.rows[i];
    const Estimate& e = *r.estimate;
    const char mark = i == plan.cheapest ? '$' : i == plan.fastest ? '^' : ' ';
    // Text generation runs at records/s below 1: keep three figures there.
    std::snprintf(line, sizeof line, "%c %-34s %8s %-20s %6s %8s %6s %8s\n", mark, ShortConfiguration(r).c_str(),
                  Fmt(e.records_per_second < 10 ? "%.3g" : "%.0f", e.records_per_second).c_str(), BottleneckText(e).c_str(), Money(e, e.price_per_hour).c_str(),
                  Money(e, e.cost_per_million).c_str(), e.job_hours ? Fmt("%.2f", *e.job_hours).c_str() : "-",
                  e.job_cost ? Money(e, *e.job_cost).c_str() : "-");
    out += line;
  }
  if (shown < order.size()) {
    out += "  ... " + std::to_string(order.size() - shown) + " more fitting rows (--all lists every one)\n";
  }
  if (!unknown.empty()) out += Wrap("no speed estimate for some rows: " + unknown, "  ");
  out += Wrap("marks: $ cheapest per record, ^ fastest per worker. Common inputs: " +
         std::string(!in.cpu_rate_given ? "assumed CPU rate " : in.cpu_rate_how.empty() ? "--cpu_rate " : "measured CPU rate ") +
         Fmt("%.4g", in.cpu_records_per_vcpu_second) +
         " records/s per vCPU; GPU bandwidth efficiency " + Fmt("%.2g", in.bandwidth_efficiency) +
         " (assumed); worker start-up " + Fmt("%.2g", in.startup_hours) + " h per job (assumed); " +
         (in.prices ? in.prices->region + (in.streaming ? " streaming" : " batch") + " rates from " + in.prices->source +
                          " (read " + in.prices->read + ")"
                    : in.price_note.empty() ? std::string("no prices") : in.price_note),
              "  ") + "\n";
  return out;
}

// What the seqs column counts, from the first row that generates (the inputs are the same on
// every row; the budget and what fills it are the row's).
std::string GenerationText(const CatalogPlan& plan) {
  std::string out;
  for (const CatalogPlanRow& r : plan.rows) {
    for (const auto& m : r.plan.models) {
      if (!m.sequences) continue;
      const auto& s = *m.sequences;
      out += Wrap("seqs = sequences of " + std::to_string(s.kv.context_tokens) + " tokens (" + s.kv.context_how +
                      ") whose KV cache fits per GPU for model '" + m.name + "': the budget gpu_memory_utilization " +
                      Fmt("%.2g", s.utilization) + " (vLLM's default) x the GPU memory, less the CUDA contexts, the weights (" +
                      HumanBytes(m.bytes) + " per copy: " + m.bytes_how + "), the activations (" +
                      HumanBytes(s.kv.activation_bytes) + " per process) and other workspace, split between the SDK " +
                      "processes on the GPU (one cache each), in whole sequences of " + HumanBytes(s.sequence_bytes) + " (" +
                      std::to_string(s.kv.bytes_per_token) + " B per token: " + s.kv.bytes_per_token_how +
                      "); the engine admits at most max_num_seqs " + std::to_string(s.kv.max_sequences) +
                      " per process, and its cache is kv_cache_memory_bytes " + std::to_string(s.kv.cache_bytes) + " B (" +
                      (s.kv.cache_bytes_given ? "given" : "the default") + ") in the peak",
                  "  ");
      return out;
    }
  }
  return out;
}

nlohmann::json EstimateJson(const Estimate& e) {
  nlohmann::json j = {{"speed_known", e.speed_known}, {"priced", e.priced}, {"inputs", e.inputs}};
  if (e.speed_known) {
    j["records_per_second"] = e.records_per_second;
    j["gpu_compute_records_per_second"] = e.gpu_compute_rps;
    j["gpu_bandwidth_records_per_second"] = e.gpu_bandwidth_rps;
    j["cpu_records_per_second"] = e.cpu_rps;
    j["bottleneck"] = BottleneckName(e.bottleneck);
    j["gpu_wait"] = e.gpu_wait;
  } else {
    j["speed_unknown"] = e.speed_unknown;
  }
  if (e.priced) {
    j["currency"] = e.currency;
    j["price_per_hour"] = e.price_per_hour;
    j["price_verified"] = e.price_verified;
    j["price_how"] = e.price_how;
    if (e.speed_known) {
      j["cost_per_thousand_records"] = e.cost_per_thousand;
      j["cost_per_million_records"] = e.cost_per_million;
    }
  } else {
    j["price_unknown"] = e.price_unknown;
  }
  if (e.job_hours) j["job_hours"] = *e.job_hours;
  if (e.job_cost) j["job_cost"] = *e.job_cost;
  return j;
}

}  // namespace

std::string RenderCatalogPlanText(const CatalogPlan& plan, bool all_rows) {
  // With estimates the recommendation comes first; the memory-fit table follows.
  std::string out = plan.estimate_inputs ? EstimateText(plan, all_rows) : std::string();
  out +=
      "plan across the catalog (> your flags' configuration, * smallest that fits with headroom; memory in GiB on "
      "the busiest GPU)\n";
  char line[512];
  // Text generation adds a column: sequences of the context that fit per GPU (vLLM's question).
  bool generates = false;
  for (const CatalogPlanRow& r : plan.rows) generates |= r.sequences_per_gpu >= 0;
  std::snprintf(line, sizeof line, "  %-22s %-44s %5s %6s %6s %7s %7s %8s %9s%s  %s\n", "GPU", "configuration", "procs",
                "copies", "fit", "peak", "of", "headroom", "MPS", generates ? "   seqs" : "", "verdict (rule)");
  out += line;
  for (const CatalogPlanRow& r : plan.rows) {
    int copies = 0;
    for (const auto& m : r.plan.models) copies += m.copies_per_gpu;
    const std::string fit = r.model_copies_that_fit < 0       ? "-"
                            : r.model_copies_that_fit > 99999 ? ">99999"
                                                              : std::to_string(r.model_copies_that_fit);
    const std::string mps = r.mps_clients > 0 ? std::to_string(r.mps_clients) + "/" + std::to_string(r.mps_client_limit) : "off";
    const char mark = r.selected ? '>' : r.smallest ? '*' : ' ';
    char seqs[16] = "";
    if (generates) std::snprintf(seqs, sizeof seqs, " %6lld", static_cast<long long>(r.sequences_per_gpu));
    std::snprintf(line, sizeof line, "%c%c%-22s %-44s %5d %6d %6s %7s %7s %8s %9s%s  %s (%s)\n", mark,
                  r.selected && r.smallest ? '*' : ' ', r.gpu.c_str(), Configuration(r).c_str(), r.plan.sdk_processes,
                  copies, fit.c_str(), Gib(r.plan.gpu_memory.planned_peak_bytes).c_str(),
                  Gib(r.plan.gpu_memory.capacity_bytes).c_str(), Gib(r.headroom_bytes).c_str(), mps.c_str(), seqs,
                  FitVerdictName(r.verdict), r.rule.c_str());
    out += line;
  }
  out += "columns: procs = SDK processes per worker; copies = model copies on the busiest GPU; fit = copies of the "
         "pipeline's models that GPU holds beside its contexts and workspace; MPS = clients/limit per GPU\n";
  if (generates) out += GenerationText(plan);
  for (const CatalogPlanRow& r : plan.rows) {
    if (r.selected) out += "your flags: " + r.gpu + " " + Configuration(r) + ": " + FitVerdictName(r.verdict) + "\n";
  }
  bool any_smallest = false;
  for (const CatalogPlanRow& r : plan.rows) {
    if (!r.smallest) continue;
    any_smallest = true;
    out += std::string(r.mig_profile.empty() ? "smallest that fits: " : "smallest MIG slice that fits: ") + r.gpu +
           " " + Configuration(r) + " (headroom " + HumanBytes(r.headroom_bytes) + ")\n";
  }
  if (!any_smallest) out += "no configuration fits with headroom\n";
  for (const std::string& n : plan.notes) out += "note: " + n + "\n";
  bool any_mig = false;
  for (const CatalogPlanRow& r : plan.rows) any_mig |= !r.mig_profile.empty();
  if (any_mig && !plan.processes_note.empty()) out += "note: " + plan.processes_note + "\n";
  return out;
}

std::string RenderCatalogPlanJson(const CatalogPlan& plan) {
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const CatalogPlanRow& r : plan.rows) {
    nlohmann::json row = {
        {"gpu", r.gpu},
        {"machine_type", r.machine_type},
        {"gpu_count", r.gpu_count},
        {"sdk_processes", r.plan.sdk_processes},
        {"planned_peak_bytes", r.plan.gpu_memory.planned_peak_bytes},
        {"capacity_bytes", r.plan.gpu_memory.capacity_bytes},
        {"headroom_bytes", r.headroom_bytes},
        {"contexts", r.plan.gpu_memory.contexts},
        {"context_bytes", r.plan.gpu_memory.context_bytes},
        {"model_bytes", r.plan.gpu_memory.model_bytes},
        {"workspace_bytes", r.plan.gpu_memory.workspace_bytes},
        {"model_copies_that_fit", r.model_copies_that_fit},
        {"sequences_per_gpu", r.sequences_per_gpu},
        {"mps", r.plan.accelerator.mps},
        {"mps_clients", r.mps_clients},
        {"mps_client_limit", r.mps_client_limit},
        {"verdict", FitVerdictName(r.verdict)},
        {"rule", r.rule},
        {"selected", r.selected},
        {"smallest", r.smallest},
    };
    row["models"] = nlohmann::json::array();
    for (const auto& m : r.plan.models) {
      nlohmann::json model = {{"name", m.name}, {"copies", m.copies}, {"copies_per_gpu", m.copies_per_gpu}, {"bytes", m.bytes}};
      if (m.sequences) {
        const auto& s = *m.sequences;
        model["sequences"] = {{"context_tokens", s.kv.context_tokens}, {"context_how", s.kv.context_how},
                              {"kv_bytes_per_token", s.kv.bytes_per_token}, {"sequence_bytes", s.sequence_bytes},
                              {"gpu_memory_utilization", s.utilization}, {"budget_bytes", s.budget_bytes},
                              {"other_bytes", s.other_bytes}, {"kv_bytes_left", s.kv_bytes_left},
                              {"kv_bytes_per_cache", s.kv_bytes_per_cache}, {"processes", s.processes},
                              {"per_process", s.per_process}, {"per_gpu", s.per_gpu},
                              {"max_num_seqs", s.kv.max_sequences}, {"cache_bytes", s.kv.cache_bytes},
                              {"cache_sequences", s.cache_sequences}};
      }
      row["models"].push_back(std::move(model));
    }
    if (!r.mig_profile.empty()) {
      row["mig"] = {{"profile", r.mig_profile}, {"compute_slices", r.mig_compute_slices}, {"gpu_slices", r.mig_gpu_slices},
                    {"max_instances", r.mig_max_instances}};
    }
    if (r.estimate) row["estimate"] = EstimateJson(*r.estimate);
    j["rows"].push_back(std::move(row));
  }
  if (plan.estimate_inputs) {
    const EstimateInputs& in = *plan.estimate_inputs;
    nlohmann::json inputs = {{"cpu_records_per_vcpu_second", in.cpu_records_per_vcpu_second},
                             {"cpu_rate_given", in.cpu_rate_given},
                             {"bandwidth_efficiency", in.bandwidth_efficiency},
                             {"startup_hours", in.startup_hours},
                             {"workers", in.workers},
                             {"streaming", in.streaming}};
    if (in.gpu_efficiency) inputs["gpu_efficiency"] = *in.gpu_efficiency;
    if (!in.cpu_rate_how.empty()) inputs["cpu_rate_how"] = in.cpu_rate_how;
    if (!in.gpu_efficiency_by_model.empty()) {
      nlohmann::json measured = nlohmann::json::object();
      for (const auto& [model, m] : in.gpu_efficiency_by_model) measured[model] = {{"efficiency", m.efficiency}, {"how", m.how}};
      inputs["gpu_efficiency_measured"] = std::move(measured);
    }
    if (in.records) inputs["records"] = *in.records;
    if (in.prices) {
      inputs["region"] = in.prices->region;
      inputs["price_source"] = in.prices->source;
      inputs["price_read"] = in.prices->read;
    }
    j["estimate_inputs"] = std::move(inputs);
    j["cheapest_row"] = plan.cheapest;
    j["fastest_row"] = plan.fastest;
    const bool by_time = in.objective == Objective::kTime;
    j["objective"] = by_time ? "time" : "cost";
    j["recommended_row"] = by_time ? plan.fastest : plan.cheapest;
  }
  j["notes"] = plan.notes;
  if (!plan.sequence_miss.empty()) j["sequence_miss"] = plan.sequence_miss;
  j["processes_note"] = plan.processes_note;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace dfw
