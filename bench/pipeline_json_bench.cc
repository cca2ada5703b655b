// ReadFromJson → MapToFields → Filter → WriteToJson on 1M JSON Lines records, one thread, next to
// the raw simdjson parse rate of the same file (parse every line, touch nothing) and the cost of
// only writing + fsyncing the pipeline's output bytes (the I/O floor any pipeline pays), and the
// same work hand-fused into one loop (the floor for any engine, BM_HandFusedFloor). All report
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
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <simdjson.h>
#pragma GCC diagnostic pop

#include <benchmark/benchmark.h>
#include <fmt/compile.h>
#include <fmt/format.h>

#include "dfw/pipeline/staged_run.h"
#include "dfw/pipeline/spec.h"
#include "dfw/record/value.h"

#define DFW_BENCH_STR2(x) #x
#define DFW_BENCH_STR(x) DFW_BENCH_STR2(x)

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

// The floor for any engine: the same work as the pipeline (read the file, split lines, parse each
// with simdjson, total = price * qty, label = name.upper(), keep total > 10, write every kept record
// as the pipeline's JSON, fsync) hand-fused into one loop: no rows, no expression evaluator, no
// graph, no per-record allocation; numbers formatted as the pipeline does (Python repr via fmt's
// Dragonbox), strings copied when nothing in them needs escaping. It is specific to this file's
// shape (flat objects of ints, floats and plain strings) and checks that its output is the
// pipeline's byte for byte. Arg 0: simdjson DOM (as ReadFromJson parses); arg 1: simdjson
// On-Demand (parses only while the loop walks the fields, once).

// Output of the fused loops: a buffer written out when a record might not fit.
class FusedOut {
 public:
  explicit FusedOut(std::FILE* f) : f_(f), buf_(std::size_t{1} << 20) {}
  // Room for a record of an input line of `len` bytes: every byte writes at most 6, plus 256.
  char* Begin(std::size_t len) {
    if (buf_.size() - used_ < len * 6 + 256) {
      Flush();
      if (buf_.size() < len * 6 + 256) buf_.resize(len * 6 + 256);
    }
    return buf_.data() + used_;
  }
  void Commit(char* end) { used_ = static_cast<std::size_t>(end - buf_.data()); }
  void Flush() {
    std::fwrite(buf_.data(), 1, used_, f_);
    used_ = 0;
  }

 private:
  std::FILE* f_;
  std::vector<char> buf_;
  std::size_t used_ = 0;
};

char* PutPlainOrEscaped(char* w, std::string_view v) {
  bool plain = true;
  for (char c : v) plain = plain && static_cast<unsigned char>(c) >= 0x20 && c != '"' && c != '\\' && static_cast<unsigned char>(c) < 0x80;
  if (!plain) {
    std::string tmp;
    dfw::AppendJsonString(tmp, v);
    std::memcpy(w, tmp.data(), tmp.size());
    return w + tmp.size();
  }
  *w++ = '"';
  std::memcpy(w, v.data(), v.size());
  w += v.size();
  *w++ = '"';
  return w;
}

char* PutDoubleRepr(char* w, double d) {
  char* b = w;
  w = fmt::format_to(w, FMT_COMPILE("{}"), d);
  if (std::string_view(b, static_cast<std::size_t>(w - b)).find_first_of(".eEn") == std::string_view::npos) {
    *w++ = '.';
    *w++ = '0';
  }
  return w;
}

char* PutTail(char* w, double total, std::string& label, std::string_view name) {
  label.assign(name);
  for (char& c : label) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  std::memcpy(w, ",\"total\":", 9);
  w = PutDoubleRepr(w + 9, total);
  std::memcpy(w, ",\"label\":", 9);
  w = PutPlainOrEscaped(w + 9, label);
  *w++ = '}';
  *w++ = '\n';
  return w;
}

// One record through the DOM: parse, read the three fields, filter, write. False when filtered or bad.
bool FusedDom(simdjson::dom::parser& parser, const char* p, std::size_t len, FusedOut& out, std::string& label) {
  simdjson::dom::element doc;
  simdjson::dom::object obj;
  if (parser.parse(p, len, false).get(doc) || doc.get_object().get(obj)) return false;
  double price = 0, qty = 0;
  std::string_view name;
  for (auto kv : obj) {
    if (kv.key == "price") price = kv.value.is_int64() ? static_cast<double>(kv.value.get_int64().value_unsafe()) : kv.value.get_double().value_unsafe();
    else if (kv.key == "qty") qty = static_cast<double>(kv.value.get_int64().value_unsafe());
    else if (kv.key == "name") name = kv.value.get_string().value_unsafe();
  }
  const double total = price * qty;
  if (!(total > 10)) return false;
  char* w = out.Begin(len);
  *w++ = '{';
  bool first = true;
  for (auto kv : obj) {
    if (!first) *w++ = ',';
    first = false;
    w = PutPlainOrEscaped(w, kv.key);
    *w++ = ':';
    switch (kv.value.type()) {
      case simdjson::dom::element_type::INT64: w = fmt::format_to(w, FMT_COMPILE("{}"), kv.value.get_int64().value_unsafe()); break;
      case simdjson::dom::element_type::DOUBLE: w = PutDoubleRepr(w, kv.value.get_double().value_unsafe()); break;
      case simdjson::dom::element_type::STRING: w = PutPlainOrEscaped(w, kv.value.get_string().value_unsafe()); break;
      default: std::memcpy(w, "null", 4); w += 4;
    }
  }
  out.Commit(PutTail(w, total, label, name));
  return true;
}

// One record On-Demand: a single walk over the fields writes them while it picks up the three the
// expressions need; a filtered record is not committed. `capacity` = readable bytes at p (>= len + padding).
// On-Demand's kernel is chosen at compile time (the DOM dispatches at run time): a baseline x86-64
// build would get simdjson's scalar fallback, so this benchmark is built for Haswell (AVX2, see
// bench/CMakeLists.txt) and main() refuses to run on a CPU without it.
namespace ondemand = simdjson::ondemand;
bool FusedOnDemand(ondemand::parser& parser, const char* p, std::size_t len, std::size_t capacity,
                   FusedOut& out, std::string& label) {
  ondemand::document doc;
  ondemand::object obj;
  if (parser.iterate(p, len, capacity).get(doc) || doc.get_object().get(obj)) return false;
  char* w = out.Begin(len);
  *w++ = '{';
  bool first = true;
  double price = 0, qty = 0;
  std::string_view name;
  for (auto field : obj) {
    std::string_view key;
    ondemand::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) return false;
    if (!first) *w++ = ',';
    first = false;
    w = PutPlainOrEscaped(w, key);
    *w++ = ':';
    ondemand::json_type t;
    if (v.type().get(t)) return false;
    if (t == ondemand::json_type::number) {
      ondemand::number n;
      if (v.get_number().get(n)) return false;
      double d = 0;
      if (n.is_int64()) {
        w = fmt::format_to(w, FMT_COMPILE("{}"), n.get_int64());
        d = static_cast<double>(n.get_int64());
      } else {
        d = n.get_double();
        w = PutDoubleRepr(w, d);
      }
      if (key == "price") price = d;
      else if (key == "qty") qty = d;
    } else if (t == ondemand::json_type::string) {
      std::string_view sv;
      if (v.get_string().get(sv)) return false;
      w = PutPlainOrEscaped(w, sv);
      if (key == "name") name = sv;
    } else {
      return false;  // not in this file
    }
  }
  const double total = price * qty;
  if (!(total > 10)) return false;
  out.Commit(PutTail(w, total, label, name));
  return true;
}

void BM_HandFusedFloor(benchmark::State& state) {
  const bool on_demand = state.range(0) == 1;
  const std::string in_path = Dir() + "/in/data.jsonl";
  const std::string out_path = Dir() + "/fused.tmp";
  int64_t kept = 0;
  for (auto _ : state) {
    std::FILE* in = std::fopen(in_path.c_str(), "rb");
    std::FILE* f = std::fopen(out_path.c_str(), "wb");
    FusedOut out(f);
    simdjson::dom::parser dom;
    ondemand::parser od;
    std::string label;
    // Lines are parsed in place when SIMDJSON_PADDING bytes follow them in the read buffer, else
    // from a padded copy (the last line of each read, and one that spans two reads).
    std::string buf(std::size_t{1} << 20, '\0');
    std::string pending;
    kept = 0;
    auto one = [&](const char* p, std::size_t len, std::size_t capacity) {
      kept += on_demand ? FusedOnDemand(od, p, len, capacity, out, label) : FusedDom(dom, p, len, out, label);
    };
    auto one_copied = [&](std::string& line) {
      const std::size_t len = line.size();
      line.append(simdjson::SIMDJSON_PADDING, '\0');
      one(line.data(), len, line.size());
    };
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), in)) > 0) {
      const char* p = buf.data();
      const char* end = p + n;
      while (p < end) {
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        if (nl == nullptr) {
          pending.append(p, static_cast<std::size_t>(end - p));
          break;
        }
        if (!pending.empty() || end - nl < static_cast<std::ptrdiff_t>(simdjson::SIMDJSON_PADDING)) {
          pending.append(p, static_cast<std::size_t>(nl - p));
          one_copied(pending);
          pending.clear();
        } else {
          one(p, static_cast<std::size_t>(nl - p), static_cast<std::size_t>(end - p));
        }
        p = nl + 1;
      }
    }
    if (!pending.empty()) one_copied(pending);
    out.Flush();
    std::fflush(f);
    ::fsync(fileno(f));
    std::fclose(f);
    std::fclose(in);
  }
  // Same bytes as the pipeline's output (when it ran first in this process).
  std::string pipeline_bytes;
  std::vector<fs::path> shards;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(Dir() + "/out", ec)) shards.push_back(e.path());
  std::sort(shards.begin(), shards.end());
  for (const auto& shard : shards) {
    std::ifstream f(shard, std::ios::binary);
    pipeline_bytes.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  std::ifstream f(out_path, std::ios::binary);
  const std::string fused_bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!pipeline_bytes.empty() && pipeline_bytes != fused_bytes) state.SkipWithError("output differs from the pipeline's");
  // On-Demand runs the kernel compiled into this file; the DOM the one libsimdjson picked at run time.
  state.SetLabel(on_demand ? "on-demand " DFW_BENCH_STR(SIMDJSON_BUILTIN_IMPLEMENTATION)
                           : "dom " + std::string(simdjson::get_active_implementation()->name()));
  state.counters["written"] = static_cast<double>(kept);
  state.counters["same_bytes_as_pipeline"] = pipeline_bytes.empty() ? -1 : (pipeline_bytes == fused_bytes ? 1 : 0);
  fs::remove(out_path);
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
BENCHMARK(BM_HandFusedFloor)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("bmi") || !__builtin_cpu_supports("pclmul")) {
    std::fprintf(stderr, "pipeline_json_bench is built for AVX2/BMI/PCLMUL (simdjson On-Demand's Haswell kernel); this CPU lacks them\n");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(Dir(), ec);
  return 0;
}
