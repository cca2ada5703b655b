// LogForTesting: logs each row as JSON (with `prefix`) at `level`, and passes it through unchanged.
#include <spdlog/spdlog.h>

#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"

namespace dfw {
namespace {

struct LogForTestingOptions {
  spdlog::level::level_enum level = spdlog::level::info;  // ERROR, INFO (default) or DEBUG
  std::string prefix;                                     // written before each row
};

class LogForTesting final : public Stage {
 public:
  explicit LogForTesting(LogForTestingOptions options) : options_(std::move(options)) {}

  Status Process(RowBatch& in, StageOutput& out) override {
    const bool logged = spdlog::should_log(options_.level);  // (no JSON made for a level that is off)
    for (Row& row : in) {
      if (logged) spdlog::log(options_.level, "{}{}", options_.prefix, row.ToJson());
      out.Emit(std::move(row));
    }
    return Status::OK();
  }

 private:
  LogForTestingOptions options_;
};

Result<std::unique_ptr<Stage>> MakeLogForTesting(const StageConfig& config) {
  LogForTestingOptions o;
  ASSIGN_OR_RETURN(std::string level, ConfigString(config, "level", std::string("INFO")));
  if (level == "ERROR") {
    o.level = spdlog::level::err;
  } else if (level == "INFO") {
    o.level = spdlog::level::info;
  } else if (level == "DEBUG") {
    o.level = spdlog::level::debug;
  } else {
    return ConfigKeyError(config, "level", "unknown level '" + level + "'; allowed: ERROR, INFO, DEBUG");
  }
  ASSIGN_OR_RETURN(o.prefix, ConfigString(config, "prefix", std::string()));
  return std::unique_ptr<Stage>(new LogForTesting(std::move(o)));
}

}  // namespace

void RegisterLogForTesting(StageRegistry& r) {
  // Beam accepts error_handling on LogForTesting (its error output then never gets a row).
  (void)r.Register({"LogForTesting", MakeLogForTesting, {"level", "prefix"}, {}, StageTraits{.can_fail_per_record = true},
                    CheckByMaking(MakeLogForTesting)});
}

}  // namespace dfw
