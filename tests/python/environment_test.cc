// The user's Python environment: RuntimeOptions::python_executable naming a venv's python makes
// that venv's site-packages importable, and only them (a venv without system site packages does
// not see the system's dist-packages). Each case starts its own interpreter, so it runs in a
// process of its own (a death test re-executing this binary).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "dfw/python/python.h"
#include "test_util.h"

namespace dfw::python_environment_test {

// 0: the venv's module imported, the system's jinja2 did not, and rendering said what to install;
// 1..5: which step failed.
int ImportFromVenv() {
  dfw::testing::TempDir dir("dfw-pyvenv");
  const std::string venv = dir.path() + "/venv";
  if (std::system(("/usr/bin/python3.11 -m venv --without-pip " + venv + " > /dev/null 2>&1").c_str()) != 0) return 1;
  dir.Write("venv/lib/python3.11/site-packages/dfw_venv_probe.py", "VALUE = 42\n");
  python::RuntimeOptions options;
  options.python_executable = venv + "/bin/python";
  if (!python::Configure(options).ok()) return 2;
  auto probe = python::Function::FromCallable("import dfw_venv_probe\nlambda row: dfw_venv_probe.VALUE + row.a");
  if (!probe.ok()) return 3;
  Row row;
  row.AppendNull("a") = Value::Int(1);
  Result<Value> v = (*probe)->CallRow(row);
  if (!v.ok() || !v->is_int() || v->as_int() != 43) return 3;
  auto system_only = python::Function::FromCallable("import jinja2\nlambda row: 1");
  if (system_only.ok()) return 4;
  // Without Jinja2 in the environment, rendering names the package to install.
  Result<std::string> rendered = python::RenderPipelineTemplate("p.yaml", "{{ 1 }}", "{}");
  if (rendered.ok() || rendered.status().code() != StatusCode::kUnavailable ||
      rendered.status().message().find("apt-get install -y python3-jinja2") == std::string::npos) {
    return 5;
  }
  return 0;
}

TEST(PythonEnvironment, AVenvsPackagesAreImportable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(ImportFromVenv()), ::testing::ExitedWithCode(0), "");
}

TEST(PythonEnvironment, ConfigureAfterStartWithOtherOptionsIsRefused) {
  ASSERT_TRUE(python::EnsureStarted().ok());
  python::RuntimeOptions other;
  other.python_executable = "/nowhere/bin/python";
  EXPECT_EQ(python::Configure(other).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(python::Configure(python::RuntimeOptions{}).ok());
}

}  // namespace dfw::python_environment_test
