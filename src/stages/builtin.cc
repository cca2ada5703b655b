// The list of built-in stages: the single place that knows which transforms exist.
#include "dfw/stages/assert_equal.h"
#include "dfw/stages/combine.h"
#include "dfw/stages/join.h"
#include "dfw/stages/sql.h"
#include "dfw/stages/stage.h"
#include "io/io_stages.h"

namespace dfw {

void RegisterBuiltinStages(StageRegistry& r, ModelChecks checks) {
  RegisterCreate(r);
  RegisterReadText(r);
  RegisterReadJson(r);
  RegisterReadCsv(r);
  RegisterWriteText(r);
  RegisterWriteJson(r);
  RegisterWriteCsv(r);
  RegisterMapToFields(r);
  RegisterFilter(r);
  RegisterExplode(r);
  RegisterFlatten(r);
  RegisterLogForTesting(r);
  RegisterPartition(r);
  RegisterRunInference(r, checks);
  RegisterMLTransform(r, checks);
  RegisterCombine(r);
  RegisterJoin(r);
  RegisterSql(r);
  RegisterWindowing(r);
  RegisterReadAvro(r);
  RegisterWriteAvro(r);
  RegisterReadTfRecord(r);
  RegisterWriteTfRecord(r);
  RegisterMatchAll(r);
  RegisterReadParquet(r);
  RegisterWriteParquet(r);
  RegisterAssertEqual(r);
  RegisterReshuffle(r);
  RegisterValidateWithSchema(r);
}

}  // namespace dfw
