// The Stage interface every transform implements, and the registry the pipeline loader consults.
//
// One Stage object exists per transform per SDK process: it is made once (Make-style factory, which
// validates the config and compiles expressions) and then runs many bundles. For each bundle the
// pipeline module calls, in this order:
//   StartBundle(bundle)                    once, before any Process of that bundle
//   Process(batch, out)                    once per incoming batch of rows
//   FinishBundle(out)                      once, after every upstream stage has finished the bundle
// Sources are driven differently: Split() plans byte ranges, OpenSplit() returns a reader whose
// Next() fills one batch at a time.
//
// Threading rule: Process() is called CONCURRENTLY from TBB tasks (several batches of the same
// bundle at once) unless the stage is registered with `serial = true`, in which case the calls for
// one stage never overlap (but may run on different threads). StartBundle/FinishBundle never overlap
// Process. Stages never throw; failures are Status values (the graph converts a stray exception).
//
// Per-record failures: a stage calls `out.Fail(element, msg)`. When the transform declares
// `error_handling: {output: NAME}` the element goes to that output as Beam's error row
// {element, msg, stack, transform} and Fail returns OK; otherwise Fail returns the error Status that
// the stage must return (the run then stops, naming the transform and the element).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/inference/model_process_context.h"
#include "dfw/metrics/metrics.h"
#include "dfw/record/value.h"
#include "dfw/stages/config_node.h"

namespace dfw {

using RowBatch = std::vector<Row>;

// What the run, not the transform's YAML, tells the stages of one process: the runner sets it from
// RunnerOptions before each factory runs; load-time checks and tests get these defaults.
struct StageRunContext {
  MetricsRegistry* metrics = nullptr;  // the run's metrics, for stages with their own (RunInference's
                                       // Beam metrics); nullptr in load-time checks
  int inference_lanes = 1;             // RunInference: concurrent CPU models in this process
  ModelProcessContext model_process;   // RunInference: how model loads meet the job's device
};

// What the fused-stage plan (dfw/pipeline/fused_stages.h) tells the halves of a Combine or Join
// that it splits at a shuffle: never the transform's YAML, so no pipeline can set them.
struct ShuffleContext {
  int64_t partitions = 1;        // shuffle partitions; 1 when the transform is not split
  std::string dir;               // Combine's merge: <committed dir of the previous stage>/<combine name>
  int join_input = -1;           // Join's partial: the input it shuffles
  std::vector<std::string> join_dirs;  // Join's merge: each input's shuffle, in input order
};

// Where one transform came from and how it was configured (filled by the pipeline loader), and
// what the run tells it (`run`, filled by the runner; `shuffle`, by the fused-stage plan).
struct StageConfig {
  std::string name;          // transform name (defaults to the type); metrics namespace
  std::string type;          // e.g. "MapToFields"
  ConfigNode config;         // the `config:` mapping (an empty map when absent); keys already checked
  std::string file;          // pipeline file, for error messages
  int line = 0;              // 1-based position of the transform in `file`
  int column = 0;
  std::string error_output;  // `error_handling.output`, "" when error handling is not declared
  double error_threshold = 1.0;  // `error_handling.threshold`: max fraction of bad records (1 = no limit)
  ConfigNode windowing;     // the transform's `windowing:` (WindowInto, Combine); undefined when absent
  // The directory relative paths in `config` resolve against (ResolveConfigPath, stages/config.h):
  // the job's working directory when the process runs elsewhere (an SDK process or finalize of a
  // job resumed from another directory); "" = this process's working directory, paths as written.
  std::string base_dir;
  // Named inputs (`input: {left: A, right: B}`, Join), in file order; empty for the other types.
  std::vector<std::string> input_names;
  StageRunContext run;      // set by the runner
  ShuffleContext shuffle;   // set by the fused-stage plan (FuseStages)

  // "pipeline.yaml:12:7: transform 'Parse' (MapToFields)": prefix for every error about this stage.
  std::string Where() const;
  // Where() + ": " + message, as kInvalidArgument (a configuration error).
  Status ConfigError(const std::string& message) const;
};

// What the runner tells a stage about the bundle being processed.
struct BundleContext {
  int64_t bundle_id = 0;        // stable id from the bundle plan
  std::string staging_dir;      // sinks write <staging_dir>/<transform name>/bundle-<id>.{tmp,done}
};

// Output collector for one Process/FinishBundle call. Not thread-safe; each call gets its own.
class StageOutput {
 public:
  explicit StageOutput(const StageConfig* config) : config_(config) {}

  void Emit(Row row) { main_.push_back(std::move(row)); }
  // To named output `tag` (an index into the transform's declared outputs, see StageTypeInfo).
  void EmitTo(std::size_t tag, Row row) {
    if (tagged_.size() <= tag) tagged_.resize(tag + 1);
    tagged_[tag].push_back(std::move(row));
  }
  RowBatch& main() { return main_; }
  // Rows per named output (shorter than the declared outputs when the last ones got none).
  std::vector<RowBatch>& tagged() { return tagged_; }
  RowBatch& errors() { return errors_; }

  // A record failed. With error handling: appends {element, msg, stack, transform} to errors() and
  // returns OK. Without: returns kDataLoss "<where>: <msg>; element: <json>" for the stage to return.
  Status Fail(const Row& element, const std::string& msg, const std::string& stack = "");
  // Same for input that never became a row (a malformed JSON line): element is {"line": text}.
  Status FailRaw(const std::string& text, const std::string& msg, const std::string& stack = "");

  // A record dropped on purpose (Filter): counted for the accounting read = written + dead + filtered.
  void CountFiltered(int64_t n = 1) { filtered_ += n; }
  int64_t filtered() const { return filtered_; }
  // One input record became n > 1 output rows (Explode): counts the n - 1 extra rows, so the run's
  // accounting stays exact: read + fanned out = written + dead-lettered + filtered + unconsumed.
  void CountFannedOut(int64_t n) { fanned_out_ += n; }
  int64_t fanned_out() const { return fanned_out_; }

 private:
  const StageConfig* config_;
  RowBatch main_;
  RowBatch errors_;
  std::vector<RowBatch> tagged_;
  int64_t filtered_ = 0;
  int64_t fanned_out_ = 0;
};

// A byte range of one input file (or the whole of an in-memory source such as Create).
struct SourceSplit {
  std::string path;   // "" for in-memory sources
  int64_t begin = 0;  // [begin, end) bytes, cut at record boundaries
  int64_t end = 0;
  int64_t first_line = 1;  // 1-based line number of the byte at `begin` (for error messages)
};

// How far a reader is through its split, in the split's units (bytes of a file range; elements of
// an in-memory source).
struct SplitProgress {
  int64_t done = 0;   // units handed out by Next() so far
  int64_t total = 0;  // units in the split (shrinks when TrySplit succeeds)
};

// Reads one split. Next() appends up to `max_rows` rows (and failures) to `out`; returns false once
// the split is exhausted (it may still have appended rows in that call).
//
// Dynamic work rebalancing: Progress() and TrySplit() may be called from another thread while
// Next() runs (readers that support them synchronise internally). TrySplit cuts the part not yet
// handed out at a record boundary at or after done + fraction * (total - done), using the reader's
// own record logic (quoted CSV newlines are not boundaries); from then on the reader stops at the
// cut, and the returned split is the rest, with its first line number. nullopt = refused: no
// record boundary is left in the unread part, or it is smaller than the reader's minimum.
class SplitReader {
 public:
  virtual ~SplitReader() = default;
  virtual Result<bool> Next(StageOutput& out, std::size_t max_rows) = 0;
  virtual std::optional<SplitProgress> Progress() const { return std::nullopt; }
  virtual std::optional<SourceSplit> TrySplit(double /*fraction*/) { return std::nullopt; }
};

// Readers refuse to split off less than this many bytes of a file (a residual that small costs more
// in bundle overhead than it saves) or this many elements of an in-memory source.
inline constexpr int64_t kMinSplitBytes = 4096;
inline constexpr int64_t kMinSplitElements = 64;

// Split's slack: a file's range is cut off only while more than this many bytes of the file
// remain from its start (the target and a quarter), so no range sheds a small tail and a file
// within it is one range (and need not be read to be split). The planner uses the same limit to
// pick the sources worth splitting again.
inline constexpr int64_t UncutRangeLimit(int64_t target_bytes) { return target_bytes + target_bytes / 4; }

class Stage {
 public:
  virtual ~Stage() = default;

  virtual Status StartBundle(const BundleContext& /*bundle*/) { return Status::OK(); }
  // Non-sources: transform `in` (the stage owns it and may move rows out of it) into `out`.
  virtual Status Process(RowBatch& in, StageOutput& out) = 0;
  // End of bundle: flush anything buffered (a partial inference batch), close/commit sink files.
  virtual Status FinishBundle(StageOutput& /*out*/) { return Status::OK(); }

  // Sources only: split the input into ranges of about `target_bytes`, cut at record boundaries
  // (file ranges with UncutRangeLimit's slack).
  virtual Result<std::vector<SourceSplit>> Split(int64_t /*target_bytes*/) {
    return Unimplemented("not a source");
  }
  virtual Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& /*split*/) {
    return Unimplemented("not a source");
  }

  // How many Process calls may overlap: 0 = as the type's traits say (serial: 1, else unlimited);
  // n >= 1 = at most n (a stage with n independent lanes of state, such as RunInference's models).
  virtual int MaxConcurrentCalls() const { return 0; }

  // The most rows a message to this stage should carry, 0 = no preference. A stage whose rows each
  // cost milliseconds (a transformer encoder) says so: the source then hands out a bundle in small
  // messages, so most of a bundle is still unread while the first rows compute — which is what a
  // work-rebalancing split can hand to an idle process. The runner takes the smallest over stages.
  virtual int64_t MaxMessageRows() const { return 0; }
};

using StageFactory = std::function<Result<std::unique_ptr<Stage>>(const StageConfig&)>;
// Validates a config without side effects (no files opened, no models loaded). The loader calls it,
// so bad expressions and values are load-time errors (and show up in --dry_run).
using StageCheck = std::function<Status(const StageConfig&)>;

// A check that builds the stage and throws it away: right for stages whose factory is cheap.
StageCheck CheckByMaking(StageFactory factory);

struct StageTraits {
  bool is_source = false;            // no input; Split/OpenSplit implemented
  bool is_sink = false;              // no main output (writes files)
  bool can_fail_per_record = false;  // accepts `error_handling`
  bool serial = false;               // Process calls never overlap (stateful stages, sinks)
  bool named_inputs = false;         // takes `input: {tag: Transform, ...}` (Join), and only that
  bool no_main_output = false;       // only named outputs (Partition): `input: Name` alone is an error
};

// The named outputs a transform's config declares (Partition's `outputs` plus `unknown_output`),
// in the order StageOutput::EmitTo numbers them. Called by the loader after the stage's check.
using StageOutputsFn = std::function<Result<std::vector<std::string>>(const StageConfig&)>;

struct StageTypeInfo {
  std::string type;                       // "ReadFromJson"
  StageFactory factory;
  std::vector<std::string> allowed_keys;  // config keys (error_handling is added when it applies)
  std::vector<std::string> required_keys;
  StageTraits traits;
  StageCheck check = nullptr;             // optional; see StageCheck
  StageOutputsFn named_outputs = nullptr; // optional; see StageOutputsFn
};

class StageRegistry {
 public:
  // kInvalidArgument when the type is already registered.
  Status Register(StageTypeInfo info);
  // nullptr when unknown.
  const StageTypeInfo* Find(const std::string& type) const;
  std::vector<std::string> Types() const;

 private:
  std::map<std::string, StageTypeInfo> types_;
};

// One registration function per stage file.
void RegisterReadText(StageRegistry& r);
void RegisterReadJson(StageRegistry& r);
void RegisterReadCsv(StageRegistry& r);
void RegisterCreate(StageRegistry& r);
void RegisterWriteText(StageRegistry& r);
void RegisterWriteJson(StageRegistry& r);
void RegisterWriteCsv(StageRegistry& r);
void RegisterMapToFields(StageRegistry& r);
void RegisterFilter(StageRegistry& r);
void RegisterExplode(StageRegistry& r);
void RegisterFlatten(StageRegistry& r);
void RegisterLogForTesting(StageRegistry& r);
// Beam YAML's Partition: each row to one named output (src/stages/partition.cc).
void RegisterPartition(StageRegistry& r);
// RunInference (src/stages/run_inference.cc) registers itself through RegisterRunInference, which
// RegisterBuiltinStages calls (see src/stages/builtin.cc).
// How much the load-time checks of the model stages (RunInference, MLTransform) look at:
// kFull opens the model files (config.json against the safetensors header; weights are never
// read); kConfigOnly checks their configs only and opens no model file — for a process that loads
// a pipeline text again after a first, full load of it (the launcher plans and finalizes from the
// text it checked at start-up).
enum class ModelChecks { kFull, kConfigOnly };
void RegisterRunInference(StageRegistry& r, ModelChecks checks = ModelChecks::kFull);
// Beam YAML's MLTransform with SentenceTransformerEmbeddings (src/stages/ml_transform.cc).
void RegisterMLTransform(StageRegistry& r, ModelChecks checks = ModelChecks::kFull);
// Event timestamps and windows in batch: AssignTimestamps and WindowInto (src/stages/windowing.cc).
void RegisterWindowing(StageRegistry& r);

// Registers every built-in stage.
void RegisterBuiltinStages(StageRegistry& r, ModelChecks checks = ModelChecks::kFull);

}  // namespace dfw
