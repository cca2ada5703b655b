#include "graph.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include <tbb/flow_graph.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dfw/common/step_board.h"
#include "dfw/common/strings.h"
#include "dfw/common/stuck_watch.h"
#include "dfw/common/test_hooks.h"

namespace dfw::pipeline_internal {
namespace {

namespace flow = tbb::flow;

// Every step's work on a batch, watched as Dataflow's worker watches it: still running after 5
// minutes, the SDK process's log says "Processing stuck in step STEP for at least 05m00s ...", and
// again at 10, 20, ... minutes, with the transform's name. (A test hook shortens the 5 minutes.)
StuckWatch& StepWatch() {
  static StuckWatch* watch = [] {
    const int64_t ms = ParseInt64(test_hooks::Get("STUCK_REPORT_MS").value_or("")).value_or(5 * 60 * 1000);
    return new StuckWatch(std::chrono::milliseconds(ms), [](const std::string& step, std::chrono::milliseconds elapsed) {
      spdlog::warn("{}", StuckReportLine(step, elapsed));
    });
  }();  // never destroyed: batches may still run while the process exits
  return *watch;
}

int64_t MicrosSince(std::chrono::steady_clock::time_point started) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
}

// Counts source batches alive; the last owner of a token decrements the limiter.
class InFlight {
 public:
  explicit InFlight(flow::receiver<flow::continue_msg>* decrementer) : decrementer_(decrementer) {}
  void Acquire() {
    int now = current_.fetch_add(1) + 1;
    int seen = max_.load();
    while (now > seen && !max_.compare_exchange_weak(seen, now)) {
    }
  }
  void Release() {
    current_.fetch_sub(1);
    decrementer_->try_put(flow::continue_msg());
  }
  int max() const { return max_.load(); }

 private:
  flow::receiver<flow::continue_msg>* decrementer_;
  std::atomic<int> current_{0}, max_{0};
};

class Token {
 public:
  explicit Token(InFlight* f) : f_(f) { f_->Acquire(); }
  ~Token() { f_->Release(); }
  Token(const Token&) = delete;
  Token& operator=(const Token&) = delete;

 private:
  InFlight* f_;
};

struct Batch {
  RowBatch rows;
  RowBatch errors;               // only on batches leaving a source
  bool dead_letter = false;      // rows are error rows (they came out of an error output)
  std::shared_ptr<Token> token;  // null for rows flushed at bundle end
};
using BatchPtr = std::shared_ptr<Batch>;

class BundleRun {
 public:
  BundleRun(std::vector<StageRuntime>& stages, const RunnerOptions& options) : stages_(stages), options_(options) {}

  Result<BundleStats> Run(const Bundle& bundle, const std::string& staging_dir, LiveSource* live);

 private:
  void SetError(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = std::move(s);
    failed_.store(true);
  }

  // Sends a stage's outputs to its consumers; `in` is the batch that produced them (for lineage).
  // `tagged` holds the rows per named output (TransformSpec::outputs; may be shorter).
  void Route(int from, RowBatch&& main, RowBatch&& errors, std::vector<RowBatch>&& tagged, bool dead_letter,
             const std::shared_ptr<Token>& token) {
    StageRuntime& s = stages_[from];
    s.counters.errors->Inc(static_cast<int64_t>(errors.size()));
    SendData(s, s.main_consumers, std::move(main), dead_letter, token);
    for (std::size_t k = 0; k < tagged.size(); ++k) {
      if (k >= s.tagged_consumers.size()) {  // a stage emitted to an output it did not declare: a bug, not a lost row
        SetError(Internal(fmt::format("{}: emitted {} rows to undeclared output #{}", s.spec->config.Where(),
                                      tagged[k].size(), k)));
        return;
      }
      SendData(s, s.tagged_consumers[k], std::move(tagged[k]), dead_letter, token);
    }
    Send(s.error_consumers, std::move(errors), true, token);
  }

  // One data output (main or named): counted out, fanned out or unconsumed, then sent.
  void SendData(StageRuntime& s, const std::vector<int>& consumers, RowBatch&& rows, bool dead_letter,
                const std::shared_ptr<Token>& token) {
    auto n = static_cast<int64_t>(rows.size());
    s.counters.out->Inc(n);
    if (!dead_letter) {
      if (consumers.empty()) {
        s.counters.unconsumed->Inc(n);
      } else {
        s.counters.fanned_out->Inc(n * static_cast<int64_t>(consumers.size() - 1));
      }
    }
    Send(consumers, std::move(rows), dead_letter, token);
  }

  void Send(const std::vector<int>& consumers, RowBatch&& rows, bool dead_letter, const std::shared_ptr<Token>& token) {
    if (rows.empty() || consumers.empty()) return;
    for (std::size_t k = 0; k < consumers.size(); ++k) {
      auto b = std::make_shared<Batch>();
      b->rows = (k + 1 == consumers.size()) ? std::move(rows) : rows;  // copy only for fan-out
      b->dead_letter = dead_letter;
      b->token = token;
      nodes_[consumers[k]]->try_put(b);
    }
  }

  void ProcessBatch(int i, const BatchPtr& b) {
    if (failed_.load()) return;
    StageRuntime& s = stages_[i];
    const TransformSpec& t = *s.spec;
    auto n = static_cast<int64_t>(b->rows.size());
    s.counters.in->Inc(n);
    if (t.traits.is_sink) (b->dead_letter ? s.counters.errors_written : s.counters.written)->Inc(n);
    StageOutput out(&t.config);
    Status st;
    const auto started = std::chrono::steady_clock::now();
    try {
      StuckWatch::Scope watched = StepWatch().Watch(t.config.name);
      StepBoard::Scope on_board(t.config.name);  // read by the launcher if this process is killed
      st = s.stage->Process(b->rows, out);
    } catch (...) {
      st = FromCurrentException(t.config.Where());
    }
    s.counters.busy_usecs->Inc(MicrosSince(started));
    if (!st.ok()) return SetError(st);
    s.counters.filtered->Inc(out.filtered());
    s.counters.fanned_out->Inc(out.fanned_out());
    b->rows.clear();
    Route(i, std::move(out.main()), std::move(out.errors()), std::move(out.tagged()), b->dead_letter, b->token);
  }

  std::vector<StageRuntime>& stages_;
  const RunnerOptions& options_;
  flow::graph g_;  // declared before the nodes: nodes must be destroyed before their graph
  std::vector<std::unique_ptr<flow::function_node<BatchPtr, flow::continue_msg>>> nodes_;
  std::mutex mu_;
  Status error_;
  std::atomic<bool> failed_{false};
};

// Detaches the reader from `live` before the reader is destroyed, on every path out of Run.
class LiveGuard {
 public:
  LiveGuard(LiveSource* live, SplitReader* reader, const SourceSplit& range, SourceSplit* read)
      : live_(live), read_(read) {
    *read_ = range;
    if (live_) live_->Attach(reader, range);
  }
  ~LiveGuard() { (void)Release(); }
  // Not OK when a split left the attempt unable to say what it read.
  Status Release() {
    Status s;
    if (live_) {
      auto range = live_->Detach();
      if (range.ok()) *read_ = *range;
      s = range.status();
    }
    live_ = nullptr;
    return s;
  }

 private:
  LiveSource* live_;
  SourceSplit* read_;
};

Result<BundleStats> BundleRun::Run(const Bundle& bundle, const std::string& staging_dir, LiveSource* live) {
  BundleContext ctx{bundle.id, staging_dir};
  for (StageRuntime& s : stages_) RETURN_IF_ERROR(s.stage->StartBundle(ctx));
  StageRuntime& source = stages_[bundle.source];
  ASSIGN_OR_RETURN(std::unique_ptr<SplitReader> reader, source.stage->OpenSplit(bundle.split));
  BundleStats stats;
  LiveGuard guard(live, reader.get(), bundle.split, &stats.read);

  stats.in_flight_limit = options_.max_in_flight_batches > 0 ? options_.max_in_flight_batches : 2 * options_.threads + 2;
  flow::graph& g = g_;
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const int max_calls = stages_[i].stage->MaxConcurrentCalls();
    std::size_t concurrency = stages_[i].spec->traits.serial ? std::size_t{flow::serial} : std::size_t{flow::unlimited};
    if (max_calls > 0) concurrency = static_cast<std::size_t>(max_calls);
    int index = static_cast<int>(i);
    nodes_.push_back(std::make_unique<flow::function_node<BatchPtr, flow::continue_msg>>(
        g, concurrency, [this, index](const BatchPtr& b) {
          ProcessBatch(index, b);
          return flow::continue_msg();
        }));
  }
  bool done = false;
  const StageConfig* source_config = &source.spec->config;
  // Test hook (dfw/worker/pipeline_job.h): a slow source, so rebalancing tests find unread input.
  static const int64_t batch_delay_ms = ParseInt64(test_hooks::Get("SOURCE_BATCH_DELAY_MS").value_or("0")).value_or(0);
  static const std::optional<std::string> gate_file = test_hooks::Get("SOURCE_GATE_FILE");
  flow::input_node<BatchPtr> input(g, [&](tbb::flow_control& fc) -> BatchPtr {
    if (done || failed_.load()) {
      fc.stop();
      return nullptr;
    }
    if (batch_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(batch_delay_ms));
    // Before the first batch too: a share that fits in one batch would otherwise end before the
    // gate, and its process would ask for (and take) a second share before every process had one.
    if (gate_file) test_hooks::WaitForFile(*gate_file);
    StageOutput out(source_config);
    Result<bool> more(false);
    const auto started = std::chrono::steady_clock::now();
    try {
      more = reader->Next(out, options_.batch_size);
    } catch (...) {
      more = FromCurrentException(source_config->Where());
    }
    source.counters.busy_usecs->Inc(MicrosSince(started));
    if (!more.ok()) {
      SetError(more.status().WithContext(source_config->Where()));
      fc.stop();
      return nullptr;
    }
    done = !*more;
    auto b = std::make_shared<Batch>();
    b->rows = std::move(out.main());
    b->errors = std::move(out.errors());
    return b;
  });
  flow::limiter_node<BatchPtr> limiter(g, static_cast<std::size_t>(stats.in_flight_limit));
  InFlight in_flight(&limiter.decrementer());
  int64_t rows_read = 0;
  flow::function_node<BatchPtr, flow::continue_msg> router(g, flow::serial, [&](const BatchPtr& b) {
    auto token = std::make_shared<Token>(&in_flight);
    if (failed_.load()) return flow::continue_msg();
    auto n = static_cast<int64_t>(b->rows.size() + b->errors.size());
    rows_read += n;
    source.counters.read->Inc(n);
    Route(bundle.source, std::move(b->rows), std::move(b->errors), {}, false, token);
    return flow::continue_msg();
  });
  flow::make_edge(input, limiter);
  flow::make_edge(limiter, router);
  input.activate();
  g.wait_for_all();
  Status released = guard.Release();  // the reader is done: no split may move its end any more
  if (!released.ok()) SetError(released);

  // End of bundle: flush stages in topological order, letting each flush travel downstream.
  for (std::size_t i = 0; i < stages_.size() && !failed_.load(); ++i) {
    if (stages_[i].spec->traits.is_source) continue;
    StageOutput out(&stages_[i].spec->config);
    Status st;
    const auto started = std::chrono::steady_clock::now();
    try {
      st = stages_[i].stage->FinishBundle(out);
    } catch (...) {
      st = FromCurrentException(stages_[i].spec->config.Where());
    }
    stages_[i].counters.busy_usecs->Inc(MicrosSince(started));
    if (!st.ok()) {
      SetError(st);
      break;
    }
    stages_[i].counters.filtered->Inc(out.filtered());
    stages_[i].counters.fanned_out->Inc(out.fanned_out());
    Route(static_cast<int>(i), std::move(out.main()), std::move(out.errors()), std::move(out.tagged()), false, nullptr);
    g.wait_for_all();
  }
  if (failed_.load()) return error_;
  stats.rows_read = rows_read;
  stats.max_in_flight_batches = in_flight.max();
  return stats;
}

}  // namespace

Result<BundleStats> RunBundleGraph(std::vector<StageRuntime>& stages, const Bundle& bundle,
                                   const std::string& staging_dir, const RunnerOptions& options, LiveSource* live) {
  BundleRun run(stages, options);
  return run.Run(bundle, staging_dir, live);
}

void LiveSource::Attach(SplitReader* reader, const SourceSplit& range) {
  std::lock_guard<std::mutex> lock(mu_);
  reader_ = reader;
  range_ = range;
}

Result<SourceSplit> LiveSource::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  reader_ = nullptr;
  if (!broken_.empty()) return Internal(std::exchange(broken_, ""));
  return range_;
}

std::optional<SplitProgress> LiveSource::Progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (reader_ == nullptr) return std::nullopt;
  return reader_->Progress();
}

std::optional<SplitHalves> LiveSource::TrySplit(double fraction) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reader_ == nullptr) return std::nullopt;
  std::optional<SourceSplit> residual = reader_->TrySplit(fraction);
  if (!residual) return std::nullopt;
  if (residual->begin <= range_.begin || residual->end != range_.end || residual->path != range_.path) {
    // A reader bug. It has already stopped early, so this attempt cannot say what it read: fail it.
    broken_ = "the source reader split [" + std::to_string(range_.begin) + ", " + std::to_string(range_.end) +
              ") into an impossible residual [" + std::to_string(residual->begin) + ", " +
              std::to_string(residual->end) + ")";
    return std::nullopt;
  }
  range_.end = residual->begin;
  return SplitHalves{range_, *residual};
}

}  // namespace dfw::pipeline_internal
