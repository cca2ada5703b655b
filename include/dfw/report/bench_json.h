// `dfworker bench --format=json`: the sweep as one JSON document, and the reader `dfworker plan
// --cpu_rate_from BENCH.json` takes the measured CPU side of its estimate from
// (docs/right-sizing.md). Pure values: the CLI reads and writes the files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/report/sweep.h"

namespace dfw::report {

// The document's "format" and "format_version": a reader refuses anything else.
inline constexpr const char* kBenchJsonFormat = "dfworker-bench";
inline constexpr int kBenchJsonVersion = 1;

// A stable hash of a pipeline file's bytes (FNV-1a, 64 bits, 16 hex digits): a bench result records
// the hash of the file it ran, and the plan compares it with the file it plans. Not a security
// boundary (it tells a different or edited file from the same one).
std::string PipelineContentHash(std::string_view text);

// What the sweep ran on, recorded beside its points.
struct BenchContext {
  std::string pipeline_path;   // as given on the command line
  std::string pipeline_hash;   // PipelineContentHash of the file's bytes (before any Jinja rendering)
  std::string machine_type;    // the runs' --machine_type ("" = none given: one process per host core)
  int host_cpu_cores = 0;      // this host's cores (the runs' processes share them)
  std::string host_cpu_model;  // /proc/cpuinfo "model name" ("" = unknown)
  int repeat = 1;
  int64_t records = -1;        // --records N (-1 = the whole input)
};

// The sorted points (best first), the recommendation's index (RecommendedIndex, -1 = none), the
// selection, and per point every median of the table plus its CPU side (PointSummary's
// cpu_* fields) and what its models ran as.
std::string RenderSweepJson(const std::vector<PointSummary>& sorted, const BenchContext& context,
                            const SweepSelection& selection);

// The CPU side a plan takes from a bench result.
struct BenchCpuRate {
  double records_per_vcpu_second = 0;  // records / CPU-seconds outside RunInference
  int64_t records = 0;
  double cpu_seconds = 0;
  std::vector<std::string> stages;     // the transforms whose time was counted
  std::string point;                   // its name ("batch_size=64"; "" for a run without sweep keys)
  bool recommended = false;            // the bench's recommendation (else the best point that ran)
  int sdk_processes = 0;
  std::string machine_type;            // "" = none given
  int host_cpu_cores = 0;
  std::string host_cpu_model;
  std::string how;                     // one sentence for the plan's inputs
};

// `path` names the file in messages, `text` is its contents; `pipeline_path` and `pipeline_text`
// are the plan's pipeline file and its bytes. kInvalidArgument, naming the file: not JSON
// (path:line:col: the parser's reason), not a bench result (format / format_version), a field of
// the wrong type, a result for another pipeline or an edited file (both paths and hashes named), no
// point that ran, or a point whose CPU side measured no time (rate 0).
// The point taken: the bench's recommended_point, else (no point was recommended) the first point
// with no failed run and a CPU rate, said so in `how`.
Result<BenchCpuRate> ReadBenchCpuRate(const std::string& path, const std::string& text, const std::string& pipeline_path,
                                      const std::string& pipeline_text);

}  // namespace dfw::report
