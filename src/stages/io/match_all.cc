// MatchAll (Beam YAML's match_all over fileio.MatchAll): each input row names a file pattern; each
// matching file becomes a row {path, size_in_bytes, last_updated_in_seconds}.
#include <fmt/format.h>

#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "file_match.h"
#include "io_stages.h"

namespace dfw {
namespace {

// Beam's EmptyMatchTreatment.
enum class EmptyMatch { kAllow, kDisallow, kAllowIfWildcard };

struct MatchAllOptions {
  std::string file_pattern;  // the field holding the pattern; "" = the row's only field
  EmptyMatch empty_match = EmptyMatch::kAllow;  // Beam YAML's default (fileio's own is DISALLOW)
};

class MatchAll final : public Stage {
 public:
  MatchAll(StageConfig config, MatchAllOptions options) : config_(std::move(config)), options_(std::move(options)) {}

  Status Process(RowBatch& in, StageOutput& out) override {
    for (const Row& row : in) {
      auto pattern = PatternOf(row);
      if (!pattern.ok()) {
        RETURN_IF_ERROR(out.Fail(row, pattern.status().message()));
        continue;
      }
      if (Status local = CheckLocalPath(config_, "the pattern", *pattern); !local.ok()) {
        RETURN_IF_ERROR(out.Fail(row, local.message()));
        continue;
      }
      auto files = stages_io::MatchFiles(ResolveAgainst(config_.base_dir, *pattern));
      if (!files.ok()) {
        RETURN_IF_ERROR(out.Fail(row, files.status().message()));
        continue;
      }
      if (files->empty()) {
        const bool allowed = options_.empty_match == EmptyMatch::kAllow ||
                             (options_.empty_match == EmptyMatch::kAllowIfWildcard && stages_io::HasWildcard(*pattern));
        if (!allowed) {
          RETURN_IF_ERROR(out.Fail(row, fmt::format("pattern '{}' matches no files (empty_match_treatment: {})", *pattern,
                                                    options_.empty_match == EmptyMatch::kDisallow ? "DISALLOW"
                                                                                                  : "ALLOW_IF_WILDCARD")));
          continue;
        }
        out.CountFiltered();
        continue;
      }
      for (const stages_io::MatchedFile& f : *files) {
        Row m;
        m.Reserve(3);
        m.Append("path", Value::String(f.path));
        m.Append("size_in_bytes", Value::Int(f.size_in_bytes));
        m.Append("last_updated_in_seconds", Value::Float(f.last_updated_in_seconds));
        m.CopyMetadataFrom(row);
        out.Emit(std::move(m));
      }
      if (files->size() > 1) out.CountFannedOut(static_cast<int64_t>(files->size() - 1));
    }
    return Status::OK();
  }

 private:
  Result<std::string> PatternOf(const Row& row) const {
    const Value* v = nullptr;
    std::string field = options_.file_pattern;
    if (!field.empty()) {
      v = row.Find(field);
      if (v == nullptr) return InvalidArgument(fmt::format("the row has no field '{}' (file_pattern)", field));
    } else if (row.size() == 1) {
      field = row.fields()[0].name;
      v = &row.fields()[0].value;
    } else {
      return InvalidArgument(fmt::format("the row has {} fields; set file_pattern to the one that holds the pattern", row.size()));
    }
    if (!v->is_string()) return InvalidArgument(fmt::format("field '{}' is a {}, not a pattern string", field, v->TypeName()));
    return v->as_string();
  }

  StageConfig config_;
  MatchAllOptions options_;
};

Result<std::unique_ptr<Stage>> MakeMatchAll(const StageConfig& config) {
  MatchAllOptions o;
  ASSIGN_OR_RETURN(o.file_pattern, ConfigString(config, "file_pattern", std::string()));
  ASSIGN_OR_RETURN(std::string treatment, ConfigString(config, "empty_match_treatment", std::string("ALLOW")));
  if (treatment == "ALLOW") {
    o.empty_match = EmptyMatch::kAllow;
  } else if (treatment == "DISALLOW") {
    o.empty_match = EmptyMatch::kDisallow;
  } else if (treatment == "ALLOW_IF_WILDCARD") {
    o.empty_match = EmptyMatch::kAllowIfWildcard;
  } else {
    return ConfigKeyError(config, "empty_match_treatment",
                          fmt::format("'{}' is not one of ALLOW, DISALLOW, ALLOW_IF_WILDCARD", treatment));
  }
  return std::unique_ptr<Stage>(new MatchAll(config, std::move(o)));
}

}  // namespace

void RegisterMatchAll(StageRegistry& r) {
  (void)r.Register({"MatchAll", MakeMatchAll, {"file_pattern", "empty_match_treatment"}, {},
                    StageTraits{.can_fail_per_record = true}, CheckByMaking(MakeMatchAll)});
}

}  // namespace dfw
