// ReadFromJson → MapToFields → Filter → WriteToJson on 1M JSON Lines records, one thread, next to
// the raw simdjson parse rate of the same file (parse every line, touch nothing) and the cost of
// only writing + fsyncing the pipeline's output bytes (the I/O floor any pipeline pays). All report
// items_per_second (records/s) over the 1M input records. Run with scripts/bench_pipeline.sh.
// DFW_BENCH_DIR picks the working directory (default: the system temp dir); pointing it at a tmpfs
// (/dev/shm) takes the disk out and leaves the CPU cost.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <simdjson.h>
#pragma GCC diagnostic pop

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "dfw/pipeline/runner.h"
#include "dfw/pipeline/spec.h"

namespace {

namespace fs = std::filesystem;
// DFW_BENCH_RECORDS overrides the record count (e.g. a small run under valgrind --tool=callgrind).
const int64_t kRecords = [] {
  const char* n = std::getenv("DFW_BENCH_RECORDS");
  return (n != nullptr && std::atoll(n) > 0) ? static_cast<int64_t>(std::atoll(n)) : int64_t{1'000'000};
}();

const std::string& Dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("DFW_BENCH_DIR");
    fs::path root = (base != nullptr && *base != '\0') ? fs::path(base) : fs::temp_directory_path();
    std::string d = (root / fmt::format("dfw-bench-{}", ::getpid())).string();
    fs::create_directories(d + "/in");
    std::ofstream out(d + "/in/data.jsonl");
    std::string line;
    for (int64_t i = 0; i < kRecords; ++i) {
      line = fmt::format("{{\"id\": {}, \"name\": \"item-{}\", \"price\": {}.{:02d}, \"qty\": {}, \"tag\": \"{}\"}}\n", i, i,
                         i % 97, i % 100, i % 13, (i % 3) ? "normal" : "sale");
      out << line;
    }
    return d;
  }();
  return dir;
}

void BM_SimdjsonRawParse(benchmark::State& state) {
  std::string path = Dir() + "/in/data.jsonl";
  simdjson::padded_string data = simdjson::padded_string::load(path).value();
  simdjson::dom::parser parser;
  for (auto _ : state) {
    int64_t n = 0;
    const char* p = data.data();
    const char* end = p + data.size();
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      std::size_t len = nl ? static_cast<std::size_t>(nl - p) : static_cast<std::size_t>(end - p);
      simdjson::dom::element doc;
      if (!parser.parse(p, len, false).get(doc)) ++n;
      p += len + 1;
    }
    if (n != kRecords) state.SkipWithError("raw parse miscounted records");
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(data.size()));
}

void BM_PipelineReadMapFilterWrite(benchmark::State& state) {
  dfw::StageRegistry registry;
  dfw::RegisterBuiltinStages(registry);
  std::string yaml = fmt::format(R"yaml(
pipeline:
  type: chain
  source:
    type: ReadFromJson
    config: {{path: "{0}/in/*.jsonl"}}
  transforms:
    - type: MapToFields
      config:
        language: python
        append: true
        fields: {{total: "price * qty", label: "name.upper()"}}
    - type: Filter
      config: {{keep: "total > 10"}}
  sink:
    type: WriteToJson
    config: {{path: "{0}/out/result"}}
)yaml", Dir());
  auto spec = dfw::LoadPipelineString(yaml, registry, "bench.yaml");
  if (!spec.ok()) {
    state.SkipWithError(spec.status().ToString().c_str());
    return;
  }
  dfw::RunnerOptions options;
  options.threads = 1;
  for (auto _ : state) {
    dfw::MetricsRegistry metrics;
    auto summary = dfw::RunAllBundles(*spec, registry, options, Dir() + "/staging", &metrics);
    if (!summary.ok()) {
      state.SkipWithError(summary.status().ToString().c_str());
      return;
    }
    if (summary->accounting.read != kRecords || !summary->accounting.Balanced()) state.SkipWithError("accounting");
    state.counters["written"] = static_cast<double>(summary->accounting.written);
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}

// Writes the bytes the pipeline writes (its first run's output, concatenated) in 1 MiB chunks and
// fsyncs, as the sink does per bundle: the I/O floor of the pipeline benchmark.
void BM_WriteOutputBytesOnly(benchmark::State& state) {
  std::string bytes;
  for (const auto& e : fs::directory_iterator(Dir() + "/out")) {
    std::ifstream in(e.path(), std::ios::binary);
    bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (bytes.empty()) {
    state.SkipWithError("run BM_PipelineReadMapFilterWrite first (it makes the output)");
    return;
  }
  std::string path = Dir() + "/write-floor.tmp";
  for (auto _ : state) {
    FILE* f = std::fopen(path.c_str(), "wb");
    for (std::size_t off = 0; off < bytes.size(); off += 1 << 20) {
      std::fwrite(bytes.data() + off, 1, std::min<std::size_t>(1 << 20, bytes.size() - off), f);
    }
    std::fflush(f);
    ::fsync(fileno(f));
    std::fclose(f);
  }
  fs::remove(path);
  state.SetItemsProcessed(state.iterations() * kRecords);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes.size()));
}

BENCHMARK(BM_SimdjsonRawParse)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PipelineReadMapFilterWrite)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_WriteOutputBytesOnly)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(Dir(), ec);
  return 0;
}
