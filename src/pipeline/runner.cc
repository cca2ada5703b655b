// PipelineRunner (stage instantiation, bundle planning, one bundle at a time) and the bundle plan
// from the sources (dfw/pipeline/bundle.h).
#include "dfw/pipeline/runner.h"

#include <tbb/task_arena.h>

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "dfw/backend/registry.h"
#include "dfw/job/bundle_size.h"
#include "dfw/stages/run_inference.h"
#include "dfw/stages/sink.h"
#include "graph.h"

namespace dfw {

using pipeline_internal::StageRuntime;

struct PipelineRunner::Impl {
  PipelineSpec spec;
  RunnerOptions options;
  std::vector<StageRuntime> stages;
  std::unique_ptr<tbb::task_arena> arena;
  BundleTarget target;  // what the last PlanBundles aimed at
  pipeline_internal::LiveSource live;  // the running bundle's reader (rebalancing)
};

PipelineRunner::PipelineRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PipelineRunner::~PipelineRunner() = default;
const PipelineSpec& PipelineRunner::spec() const { return impl_->spec; }

Result<std::unique_ptr<PipelineRunner>> PipelineRunner::Make(const PipelineSpec& spec, const StageRegistry& registry,
                                                             RunnerOptions options, MetricsRegistry* metrics) {
  if (options.threads < 1) return InvalidArgument(fmt::format("runner threads must be >= 1, got {}", options.threads));
  if (options.batch_size < 1) return InvalidArgument("runner batch_size must be >= 1, got 0");
  if (options.max_in_flight_batches < 0) {
    return InvalidArgument(fmt::format("max_in_flight_batches must be >= 0 (0 = automatic), got {}", options.max_in_flight_batches));
  }
  if (metrics == nullptr) return InvalidArgument("PipelineRunner::Make needs a metrics registry");
  if (options.blas_threads < 0) {
    return InvalidArgument(fmt::format("runner blas_threads must be >= 0 (0 = automatic), got {}", options.blas_threads));
  }
  if (options.inference_lanes < 0) {
    return InvalidArgument(fmt::format("runner inference_lanes must be >= 0 (0 = automatic), got {}", options.inference_lanes));
  }
  const int lanes = options.inference_lanes > 0 ? options.inference_lanes
                                                : DefaultInferenceLanes(options.sdk_processes, options.threads);
  // The process's OpenBLAS pool, decided once, here, before any stage loads a model: a
  // RunInference transform's model_handler.config.blas_threads pins it (the last such transform in
  // pipeline order, as the pool is one per process), else RunnerOptions::blas_threads, else the
  // machine-wide default for this many SDK processes and lanes.
  int blas_threads = options.blas_threads > 0 ? options.blas_threads : DefaultBlasThreads(options.sdk_processes, lanes);
  const StageConfig* pinned_by = nullptr;
  for (const TransformSpec& t : spec.transforms) {
    if (t.config.type != "RunInference") continue;
    Result<RunInferenceConfig> ri = DescribeRunInference(t.config);  // (a bad config fails in its factory below)
    if (ri.ok() && ri->handler.blas_threads) {
      blas_threads = static_cast<int>(std::clamp<int64_t>(*ri->handler.blas_threads, INT32_MIN, 1024));
      pinned_by = &t.config;
    }
  }
  if (Status s = SetBlasThreads(blas_threads); !s.ok()) {
    return pinned_by != nullptr ? pinned_by->ConfigError(s.message()) : s;
  }
  auto impl = std::make_unique<Impl>();
  impl->spec = spec;
  impl->options = options;
  impl->stages.resize(impl->spec.transforms.size());
  for (std::size_t i = 0; i < impl->spec.transforms.size(); ++i) {
    const TransformSpec& t = impl->spec.transforms[i];
    const StageTypeInfo* info = registry.Find(t.config.type);
    if (info == nullptr) return InvalidArgument(t.config.Where() + ": transform type is not registered");
    StageRuntime& s = impl->stages[i];
    s.spec = &t;
    try {
      StageConfig config = t.config;
      config.run.metrics = metrics;  // stages that record their own metrics (RunInference) use the run's registry
      config.run.inference_lanes = lanes;
      config.run.model_process = options.model_process;
      ASSIGN_OR_RETURN(s.stage, info->factory(config));
    } catch (...) {
      return FromCurrentException(t.config.Where());
    }
    const std::string& ns = t.config.name;
    s.counters = {metrics->Counter(ns, "elements_read"),     metrics->Counter(ns, "elements_in"),
                  metrics->Counter(ns, "elements_out"),      metrics->Counter(ns, "errors"),
                  metrics->Counter(ns, "elements_filtered"), metrics->Counter(ns, "elements_written"),
                  metrics->Counter(ns, "errors_written"),    metrics->Counter(ns, "elements_fanned_out"),
                  metrics->Counter(ns, "elements_unconsumed"), metrics->Counter(ns, "process_bundle_usecs")};
    s.tagged_consumers.resize(t.outputs.size());
    for (const InputRef& in : t.inputs) {
      StageRuntime& producer = impl->stages[in.from];
      if (in.tag >= 0) {
        if (static_cast<std::size_t>(in.tag) >= producer.spec->outputs.size()) {
          return InvalidArgument(fmt::format("{}: reads output {} of '{}', which declares {}", t.config.Where(), in.tag,
                                             producer.spec->config.name, producer.spec->outputs.size()));
        }
        producer.tagged_consumers[static_cast<std::size_t>(in.tag)].push_back(static_cast<int>(i));
      } else {
        (in.error ? producer.error_consumers : producer.main_consumers).push_back(static_cast<int>(i));
      }
    }
  }
  // A dangling main output is legal Beam YAML (a chain ending in LogForTesting); its rows are not lost
  // silently: they are counted as elements_unconsumed and balance the accounting, and we warn once here.
  // LogForTesting ends a chain by design (Beam's examples all do): counted, not warned about.
  for (const StageRuntime& s : impl->stages) {
    if (!s.spec->traits.is_sink && !s.spec->traits.no_main_output && s.main_consumers.empty() &&
        s.spec->config.type != "LogForTesting") {
      spdlog::warn("{}: main output is not consumed; its rows are counted as elements_unconsumed", s.spec->config.Where());
    }
    for (std::size_t k = 0; k < s.tagged_consumers.size(); ++k) {
      if (s.tagged_consumers[k].empty()) {
        spdlog::warn("{}: output '{}.{}' is not consumed; its rows are counted as elements_unconsumed",
                     s.spec->config.Where(), s.spec->config.name, s.spec->outputs[k]);
      }
    }
  }
  // Lanes take messages, not rows: a bundle has to arrive as several messages to keep every lane
  // busy, so when a stage runs as several lanes (RunInference's CPU models: MaxConcurrentCalls > 1)
  // messages carry at most 256 rows (512 sentences in one 1024-row message ran on one lane at 18–19
  // sentences/s; 2 lanes: 35–37).
  constexpr std::size_t kLaneMessageRows = 256;
  const bool has_lanes = std::any_of(impl->stages.begin(), impl->stages.end(),
                                     [](const StageRuntime& s) { return s.stage->MaxConcurrentCalls() > 1; });
  if (has_lanes) impl->options.batch_size = std::min(impl->options.batch_size, kLaneMessageRows);
  // A stage whose rows are expensive asks for small messages (Stage::MaxMessageRows), so a bundle
  // is not all read ahead of its first rows' compute and a rebalancing split can still take the rest.
  for (const StageRuntime& s : impl->stages) {
    const int64_t rows = s.stage->MaxMessageRows();
    if (rows > 0) impl->options.batch_size = std::min(impl->options.batch_size, static_cast<std::size_t>(rows));
  }
  impl->arena = std::make_unique<tbb::task_arena>(options.threads);
  return std::unique_ptr<PipelineRunner>(new PipelineRunner(std::move(impl)));
}

namespace {

// Cuts in-memory ranges (element indexes; file ranges pass through) into runs of `per_bundle`
// elements. An empty range stays one (empty) bundle so that sinks still write their shard.
std::vector<SourceSplit> CutElementSplits(const std::vector<SourceSplit>& splits, int64_t per_bundle) {
  std::vector<SourceSplit> out;
  for (const SourceSplit& s : splits) {
    if (!s.path.empty() || per_bundle < 1 || s.end - s.begin <= per_bundle) {
      out.push_back(s);
      continue;
    }
    for (int64_t b = s.begin; b < s.end; b += per_bundle) out.push_back(SourceSplit{s.path, b, std::min(s.end, b + per_bundle), 1});
  }
  return out;
}

// The bundle plan over `sources` (transform index, its stage); see RunnerOptions::bundle_bytes.
Result<std::vector<Bundle>> PlanSources(const std::vector<std::pair<int, Stage*>>& sources, int64_t bundle_bytes,
                                        int processes, RowCost cost, BundleTarget& target) {
  const bool job_sized = bundle_bytes <= 0;
  // Job-sized: the job's size first, from one range per file (a file is not read for that: a
  // splitter whose cut lies past a file's end only stats it), then the sources with a range over
  // UncutRangeLimit are split again at the target. The file splitters cut only where the rest of
  // a file is over that limit too (Stage::Split's contract), so that pass
  // reads the big files only, up to their last cut: a file within the slack stays one bundle
  // (cutting off a small tail would read the whole file here, to number the tail's lines, for one
  // more, small, bundle). A job of files of about the target's size, the usual shape of sharded
  // input, reads none of them before its SDK processes start.
  constexpr int64_t kWholeSource = int64_t{1} << 60;
  std::vector<std::pair<int, std::vector<SourceSplit>>> per_source;
  int64_t file_bytes = 0, elements = 0;
  for (const auto& [index, stage] : sources) {
    ASSIGN_OR_RETURN(std::vector<SourceSplit> splits, stage->Split(job_sized ? kWholeSource : bundle_bytes));
    for (const SourceSplit& s : splits) (s.path.empty() ? elements : file_bytes) += s.end - s.begin;
    per_source.emplace_back(index, std::move(splits));
  }
  target = job_sized ? SizeBundles(file_bytes, elements, processes, cost) : BundleTarget{bundle_bytes, 0, 0};
  std::vector<Bundle> bundles;
  for (std::size_t k = 0; k < per_source.size(); ++k) {
    auto& [source, splits] = per_source[k];
    if (job_sized) {
      const auto too_big = [&](const SourceSplit& s) { return !s.path.empty() && s.end - s.begin > UncutRangeLimit(target.bytes); };
      if (std::any_of(splits.begin(), splits.end(), too_big)) {
        ASSIGN_OR_RETURN(splits, sources[k].second->Split(target.bytes));
      }
      splits = CutElementSplits(splits, target.elements);
    }
    for (SourceSplit& s : splits) bundles.push_back(Bundle{static_cast<int64_t>(bundles.size()), source, std::move(s)});
  }
  return bundles;
}

}  // namespace

Result<std::vector<Bundle>> PipelineRunner::PlanBundles() {
  std::vector<std::pair<int, Stage*>> sources;
  for (std::size_t i = 0; i < impl_->stages.size(); ++i) {
    if (impl_->spec.transforms[i].traits.is_source) sources.emplace_back(static_cast<int>(i), impl_->stages[i].stage.get());
  }
  return PlanSources(sources, impl_->options.bundle_bytes, impl_->options.sdk_processes, RowCostOf(impl_->spec),
                     impl_->target);
}

RowCost RowCostOf(const PipelineSpec& spec) {
  for (const TransformSpec& t : spec.transforms) {
    if (t.config.type == "MLTransform") return RowCost::kCostly;
    if (t.config.type != "RunInference") continue;
    const ConfigNode& type = t.config.config["model_handler"]["type"];
    if (!type.IsScalar()) continue;
    const std::string& name = type.Scalar();
    if (name == "SentenceEmbeddingHandler" || name == "HuggingFacePipelineModelHandler") return RowCost::kCostly;
  }
  return RowCost::kCheap;
}

Result<SourcePlan> PlanSourceBundles(const PipelineSpec& spec, const StageRegistry& registry, int processes,
                                     int64_t bundle_bytes) {
  std::vector<std::unique_ptr<Stage>> owned;
  std::vector<std::pair<int, Stage*>> sources;
  for (std::size_t i = 0; i < spec.transforms.size(); ++i) {
    const TransformSpec& t = spec.transforms[i];
    if (!t.traits.is_source) continue;
    const StageTypeInfo* info = registry.Find(t.config.type);
    if (info == nullptr) return InvalidArgument(t.config.Where() + ": transform type is not registered");
    ASSIGN_OR_RETURN(std::unique_ptr<Stage> stage, info->factory(t.config));
    sources.emplace_back(static_cast<int>(i), stage.get());
    owned.push_back(std::move(stage));
  }
  SourcePlan plan;
  ASSIGN_OR_RETURN(plan.bundles, PlanSources(sources, bundle_bytes, std::max(1, processes), RowCostOf(spec), plan.target));
  return plan;
}

Result<BundlePreview> PreviewBundles(const PipelineSpec& spec, const StageRegistry& registry, int processes) {
  ASSIGN_OR_RETURN(SourcePlan plan, PlanSourceBundles(spec, registry, processes));
  return BundlePreview{static_cast<int64_t>(plan.bundles.size()), plan.target};
}

const BundleTarget& PipelineRunner::bundle_target() const { return impl_->target; }

Result<BundleStats> PipelineRunner::RunBundle(const Bundle& bundle, const std::string& staging_dir) {
  if (bundle.source < 0 || bundle.source >= static_cast<int>(impl_->stages.size()) ||
      !impl_->spec.transforms[bundle.source].traits.is_source) {
    return InvalidArgument(fmt::format("bundle {} names transform #{}, which is not a source", bundle.id, bundle.source));
  }
  Result<BundleStats> result = Internal("bundle did not run");
  impl_->arena->execute([&] {
    result = pipeline_internal::RunBundleGraph(impl_->stages, bundle, staging_dir, impl_->options, &impl_->live);
  });
  if (!result.ok()) return result.status().WithContext(fmt::format("bundle {}", bundle.id));
  return result;
}

std::optional<SplitProgress> PipelineRunner::Progress() const { return impl_->live.Progress(); }

std::optional<SplitHalves> PipelineRunner::TrySplit(double fraction) { return impl_->live.TrySplit(fraction); }

}  // namespace dfw
