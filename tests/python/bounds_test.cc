// The launcher's bounds on Python, through the real binary: runaway module-level code and runaway
// templates end with exit 2 and the reason (MemoryError, RecursionError), never a signal or the
// host's memory; a missing libdfw_python.so is exit 2 naming it, and a pipeline without Python
// runs without it (dfworker does not link libpython).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>

#include "cli/cli_test_util.h"
#include "test_util.h"

namespace dfw::python_bounds_test {

using dfw::testing::RunDfworker;
using dfw::testing::TempDir;

// `text`'s lines, each indented by `spaces`.
std::string Indent(const std::string& text, int spaces) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    out += std::string(static_cast<std::size_t>(spaces), ' ') + text.substr(at, end - at) + "\n";
    at = end + 1;
  }
  return out;
}

// Create {a: 1} → MapToFields `name` (b: a callable, `module_code` before `def f(row):` and `body`
// as its lines) → LogForTesting.
std::string CallablePipeline(const std::string& module_code, const std::string& body = "return row.a",
                             const std::string& name = "Udf") {
  return "pipeline:\n"
         "  type: chain\n"
         "  transforms:\n"
         "    - type: Create\n"
         "      config: {elements: [{a: 1}]}\n"
         "    - type: MapToFields\n"
         "      name: " + name + "\n"
         "      config:\n"
         "        language: python\n"
         "        fields:\n"
         "          b:\n"
         "            callable: |\n" +
         Indent(module_code, 14) + Indent("def f(row):", 14) + Indent(body, 18) +
         "    - type: LogForTesting\n";
}

void ExpectExit2With(const dfw::testing::CliOutcome& o, const std::string& fragment) {
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find(fragment), std::string::npos) << o.out;
}

// The interpreter's heap cap, lowered to 128 MiB (a test hook) so that the exponential repr ends
// within a second; at the default 1 GiB it ends the same way, after tens of CPU seconds.
const char* kSmallCap = "DFW_TEST_PYTHON_MEMORY_MB=128";

TEST(PythonBounds, SharedSubListsPrintedAtModuleLevelAreAMemoryError) {
  TempDir dir("dfw-pybounds");
  const std::string p = dir.Write("p.yaml", CallablePipeline("a = []\nfor _ in range(61):\n    a = [a, a]\nprint(a)"));
  ExpectExit2With(RunDfworker({"run", p, "--dry_run"}, DFW_SOURCE_DIR, kSmallCap), "MemoryError (<callable> line 4)");
  ExpectExit2With(RunDfworker({"plan", p}, DFW_SOURCE_DIR, kSmallCap), "MemoryError");
  ExpectExit2With(RunDfworker({"test", p}, DFW_SOURCE_DIR, kSmallCap), "MemoryError");
}

TEST(PythonBounds, AJoinOfGigabytesIsAMemoryError) {
  TempDir dir("dfw-pybounds");
  const std::string p = dir.Write("p.yaml", CallablePipeline("s = ''.join(['x' * 1024] * (2 * 1024 * 1024))"));
  ExpectExit2With(RunDfworker({"run", p, "--dry_run"}), "MemoryError");
}

TEST(PythonBounds, RunawayTemplatesEndWithExitTwo) {
  TempDir dir("dfw-pybounds");
  const std::string tail = "\npipeline:\n  transforms: []\n";
  std::string sum = "# {{ 0";
  for (int i = 0; i < 5000; ++i) sum += "+1";
  const std::string p1 = dir.Write("sum.yaml", "x: 1\n" + sum + " }}" + tail);
  ExpectExit2With(RunDfworker({"run", p1, "--dry_run"}), "RecursionError");
  std::string filters = "# {{ 1";
  for (int i = 0; i < 20000; ++i) filters += "|abs";
  const std::string p2 = dir.Write("filters.yaml", "x: 1\n" + filters + " }}" + tail);
  ExpectExit2With(RunDfworker({"run", p2, "--dry_run"}), "RecursionError");
  const std::string p3 = dir.Write(
      "macro.yaml",
      "x: 1\n# {% macro d(x, n) %}{% if n > 0 %}{{ d(x + x, n - 1) }}{% else %}{{ x|length }}{% endif %}{% endmacro %}"
      "{{ d([1], 40) }}" + tail);
  ExpectExit2With(RunDfworker({"run", p3, "--dry_run"}, DFW_SOURCE_DIR, kSmallCap), "MemoryError");
}

TEST(PythonBounds, EndlessModuleCodeAndTemplatesStopAtTheLoadTimeLimit) {
  // The limit, lowered to 2 s by a test hook (60 s by default); the code catching the
  // TimeoutError does not escape it.
  TempDir dir("dfw-pybounds");
  const char* short_limit = "DFW_TEST_PYTHON_LOAD_SECONDS=2";
  const std::string p = dir.Write("p.yaml", CallablePipeline("try:\n    while True:\n        pass\nexcept Exception:\n    while True:\n        pass"));
  ExpectExit2With(RunDfworker({"run", p, "--dry_run"}, DFW_SOURCE_DIR, short_limit), "TimeoutError: stopped after 2 s");
  const std::string t = dir.Write("t.yaml", "x: 1\n# {% for i in range(10**12) %}{% endfor %}\npipeline:\n  transforms: []\n");
  ExpectExit2With(RunDfworker({"run", t, "--dry_run"}, DFW_SOURCE_DIR, short_limit), "TimeoutError: stopped after 2 s");
}

TEST(PythonBounds, DeeplyNestedJinjaVariablesAreExitTwo) {
  TempDir dir("dfw-pybounds");
  const std::string p = dir.Write("p.yaml", "x: {{ a }}\npipeline:\n  transforms: []\n");
  const std::string deep = "{\"a\": " + std::string(40000, '[') + std::string(40000, ']') + "}";
  ExpectExit2With(RunDfworker({"run", p, "--dry_run", "--jinja_variables=" + deep}), "--jinja_variables: nested too deeply");
}

// Create {a: 1..3} -> MapToFields 'Udf' (b: `callable`, its lines indented as given, with
// error_handling) -> WriteToJson out/good, and Udf's error output -> WriteToJson out/bad.
std::string ErrorOutputPipeline(const TempDir& dir, const std::string& callable) {
  return "pipeline:\n"
         "  type: chain\n"
         "  transforms:\n"
         "    - type: Create\n"
         "      config: {elements: [{a: 1}, {a: 2}, {a: 3}]}\n"
         "    - type: MapToFields\n"
         "      name: Udf\n"
         "      config:\n"
         "        language: python\n"
         "        error_handling: {output: bad}\n"
         "        fields:\n"
         "          b:\n"
         "            callable: |\n" +
         Indent(callable, 14) +
         "  sink:\n"
         "    type: WriteToJson\n"
         "    config: {path: \"" + dir.path() + "/out/good\", file_name_suffix: .jsonl}\n"
         "  extra_transforms:\n"
         "    - type: WriteToJson\n"
         "      input: Udf.bad\n"
         "      config: {path: \"" + dir.path() + "/out/bad\", file_name_suffix: .jsonl}\n";
}

// The rows ErrorOutputPipeline wrote: {good, bad}, each the files' text joined.
std::pair<std::string, std::string> GoodAndBad(const TempDir& dir) {
  std::string good, bad;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/out")) {
    const std::string name = e.path().filename().string();
    (name.rfind("good", 0) == 0 ? good : bad) += dfw::testing::ReadFile(e.path().string());
  }
  return {good, bad};
}

TEST(PythonBounds, InSdkProcessesRunawayRowsAreTheirRowsErrors) {
  // A real run: the SDK processes load CPython themselves; a row whose callable recurses without
  // end or builds past the heap cap goes to the error output with the reason, the others through.
  TempDir dir("dfw-pybounds");
  const std::string p = dir.Write("p.yaml", ErrorOutputPipeline(dir,
                                                                "def deep(n):\n"
                                                                "    return deep(n + 1)\n"
                                                                "def f(row):\n"
                                                                "    if row.a == 1:\n"
                                                                "        return deep(0)\n"
                                                                "    if row.a == 2:\n"
                                                                "        return len('x' * (1 << 40))\n"
                                                                "    return row.a * 10"));
  auto o = RunDfworker({"run", p, "--job_dir=" + dir.path() + "/job"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto [good, bad] = GoodAndBad(dir);
  EXPECT_NE(good.find("\"b\":30"), std::string::npos) << good;
  EXPECT_NE(bad.find("RecursionError: maximum recursion depth exceeded"), std::string::npos) << bad;
  EXPECT_NE(bad.find("MemoryError"), std::string::npos) << bad;
}

TEST(PythonBounds, ARowPastThePerRowTimeLimitIsItsRowsError) {
  // --python_row_timeout: the row stuck in its callable fails with TimeoutError and goes to the
  // error output; the rows before and after it (in the same batch) go through.
  TempDir dir("dfw-pybounds");
  const std::string p = dir.Write("p.yaml", ErrorOutputPipeline(dir,
                                                                "def f(row):\n"
                                                                "    while row.a == 2:\n"
                                                                "        pass\n"
                                                                "    return row.a * 10"));
  auto o = RunDfworker({"run", p, "--job_dir=" + dir.path() + "/job", "--python_row_timeout=1",
                        "--machine_type=n1-standard-2"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const auto [good, bad] = GoodAndBad(dir);
  EXPECT_NE(good.find("\"b\":10"), std::string::npos) << good;
  EXPECT_NE(good.find("\"b\":30"), std::string::npos) << good;
  EXPECT_NE(bad.find("TimeoutError: the callable ran past the per-row time limit of 1000 ms"), std::string::npos) << bad;
  EXPECT_NE(bad.find("\"a\":2"), std::string::npos) << bad;
  // Each SDK process's interpreter got its share of n1-standard-2's 7.5 GB (or of 3/4 of the host's
  // memory, where that is smaller) and the limit.
  const std::string log = dfw::testing::ReadFile(dir.path() + "/job/logs/sdk-0.log");
  EXPECT_NE(log.find("Python bounds: heap cap "), std::string::npos) << log;
  EXPECT_NE(log.find("per-row time limit 1000 ms"), std::string::npos) << log;
}

TEST(PythonBounds, ARowStuckInItsCallableIsReportedAsDataflowReportsIt) {
  // Dataflow's worker logs a step still processing after 5 minutes; a test hook makes that 300 ms.
  // The callable sleeps 1.5 s: reported at 0.3, 0.6 and 1.2 s, the run then ends normally.
  TempDir dir("dfw-pybounds");
  const std::string p = dir.Write("p.yaml", CallablePipeline("import time", "time.sleep(1.5)\nreturn row.a"));
  auto o = RunDfworker({"run", p, "--job_dir=" + dir.path() + "/job"}, DFW_SOURCE_DIR, "DFW_TEST_STUCK_REPORT_MS=300");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  std::string logs;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/job/logs")) {
    logs += dfw::testing::ReadFile(e.path().string());
  }
  EXPECT_NE(logs.find("Processing stuck in step Udf for at least 00m0"), std::string::npos) << logs;
  EXPECT_NE(logs.find("without outputting or completing in state process"), std::string::npos) << logs;
}

TEST(PythonBounds, TheSdkProcessesTogetherGetTheWorkersMemory) {
  // The job's memory cgroup (dfw/launcher/memory_cgroup.h) at 200 MiB (a test hook; a real run gets
  // the machine type's memory), the Python heap cap raised past it (another hook) so that memory
  // outside Python's own bound is what runs out: the kernel ends the SDK process, the bundle is
  // retried, and the job fails after its 4 attempts saying it was memory. Skips where this host
  // offers no memory cgroup.
  TempDir dir("dfw-pybounds");
  const std::string p =
      dir.Write("p.yaml", CallablePipeline("held = []", "held.append(b'x' * (300 << 20))\nreturn row.a", "Hog"));
  auto o = RunDfworker({"run", p, "--job_dir=" + dir.path() + "/job", "--sdk_worker_parallelism=1"}, DFW_SOURCE_DIR,
                       "DFW_TEST_WORKER_MEMORY_MB=200 DFW_TEST_PYTHON_MEMORY_MB=1024");
  if (o.out.find("worker memory: no memory cgroup") != std::string::npos) GTEST_SKIP() << o.out;
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("failed 4 attempts"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("killed by signal 9 (SIGKILL) while in step 'Hog' — out of memory: the SDK processes together "
                       "reached the worker's 200.0 MiB"),
            std::string::npos)
      << o.out;
}

TEST(PythonBounds, AMissingLibraryIsExitTwoNamingIt) {
  TempDir dir("dfw-pybounds");
  const std::string p = dir.Write("p.yaml", CallablePipeline("import re"));
  auto o = RunDfworker({"run", p, "--dry_run"}, DFW_SOURCE_DIR, "DFW_PYTHON_LIBRARY=" + dir.path() + "/libdfw_python.so");
  ExpectExit2With(o, "libdfw_python.so");
  EXPECT_NE(o.out.find("apt-get install -y libpython3.11-dev python3-jinja2"), std::string::npos) << o.out;
  // The fast path needs no Python: the same pipeline with an expression it compiles still checks.
  const std::string fast = dir.Write("fast.yaml",
                                     "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [{a: 1}]}\n"
                                     "    - type: MapToFields\n      config: {language: python, fields: {b: 'a * 2'}}\n"
                                     "    - type: LogForTesting\n");
  auto ok = RunDfworker({"run", fast, "--dry_run"}, DFW_SOURCE_DIR, "DFW_PYTHON_LIBRARY=" + dir.path() + "/libdfw_python.so");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
}

TEST(PythonBounds, TheBinaryDoesNotLinkLibpython) {
  auto o = dfw::testing::RunDfworker({"--version"});
  ASSERT_EQ(o.exit_code, 0) << o.out;
  FILE* pipe = ::popen(("ldd " + std::string(DFW_BINARY_DIR) + "/src/cli/dfworker 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string deps;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) deps.append(buf, n);
  ::pclose(pipe);
  EXPECT_NE(deps.find("libc.so"), std::string::npos) << deps;
  EXPECT_EQ(deps.find("libpython"), std::string::npos) << deps;
}

}  // namespace dfw::python_bounds_test
