// Beam YAML's `dependencies:` (python.h InstallDependencies), with no package index: a tiny
// pure-Python wheel written here (zipfile) and pip's --no-index --find-links. A venv per
// requirements list, reused on the next call; a package no index has is named with the commands
// that install it by hand.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "cli/cli_test_util.h"
#include "dfw/python/python.h"
#include "test_util.h"

namespace dfw::python_dependencies_test {

using dfw::testing::TempDir;

// A wheel of the package `dfwdeptest` 1.0 (VALUE = 7) in `dir`; false when it could not be written.
bool WriteWheel(TempDir& dir) {
  const std::string script =
      "import sys, zipfile\n"
      "with zipfile.ZipFile(sys.argv[1] + '/dfwdeptest-1.0-py3-none-any.whl', 'w') as z:\n"
      "    z.writestr('dfwdeptest/__init__.py', 'VALUE = 7\\n')\n"
      "    z.writestr('dfwdeptest-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: dfwdeptest\\nVersion: 1.0\\n')\n"
      "    z.writestr('dfwdeptest-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: dfw-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n"
      "    z.writestr('dfwdeptest-1.0.dist-info/RECORD', 'dfwdeptest/__init__.py,,\\ndfwdeptest-1.0.dist-info/METADATA,,\\n'\n"
      "               'dfwdeptest-1.0.dist-info/WHEEL,,\\ndfwdeptest-1.0.dist-info/RECORD,,\\n')\n";
  const std::string path = dir.Write("make_wheel.py", script);
  return std::system(("/usr/bin/python3.11 " + path + " " + dir.path()).c_str()) == 0;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

TEST(PythonDependencies, InstalledFromALocalWheelIntoACachedVenv) {
  TempDir dir("dfw-pydeps");
  ASSERT_TRUE(WriteWheel(dir));
  python::DependencyOptions options;
  options.cache_dir = dir / "cache";
  options.pip_args = {"--no-index", "--find-links", dir.path()};
  Result<std::string> venv = python::InstallDependencies({"dfwdeptest==1.0"}, options);
  ASSERT_TRUE(venv.ok()) << venv.status().ToString();
  EXPECT_EQ(venv->rfind(options.cache_dir + "/", 0), 0u) << *venv;
  EXPECT_TRUE(Exists(*venv + "/lib/python3.11/site-packages/dfwdeptest/__init__.py")) << *venv;
  // The venv is a --python_env, and its python imports the package.
  Result<std::string> exe = python::ResolveEnvironment(*venv);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ(std::system((*exe + " -c 'import dfwdeptest, sys; sys.exit(dfwdeptest.VALUE != 7)'").c_str()), 0);
  // The same list is the same venv, not installed again: with the wheel gone it
  // still resolves.
  ASSERT_EQ(std::remove((dir / "dfwdeptest-1.0-py3-none-any.whl").c_str()), 0);
  Result<std::string> again = python::InstallDependencies({"dfwdeptest==1.0"}, options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *venv);
}

TEST(PythonDependencies, APackageNoIndexHasIsNamedWithTheCommandsThatInstallIt) {
  TempDir dir("dfw-pydeps");
  python::DependencyOptions options;
  options.cache_dir = dir / "cache";
  options.pip_args = {"--no-index", "--find-links", dir.path()};
  Result<std::string> venv = python::InstallDependencies({"dfwnosuchpackage==2.0"}, options);
  ASSERT_FALSE(venv.ok());
  EXPECT_EQ(venv.status().code(), StatusCode::kUnavailable);
  const std::string& m = venv.status().message();
  EXPECT_NE(m.find("these packages: dfwnosuchpackage==2.0"), std::string::npos) << m;
  EXPECT_NE(m.find("DIR/bin/pip install dfwnosuchpackage==2.0, then run with --python_env=DIR"), std::string::npos) << m;
  // The failed venv is removed: nothing but the lock is left in the cache.
  EXPECT_EQ(std::system(("test \"$(ls " + options.cache_dir + " | grep -v '\\.lock$' | wc -l)\" = 0").c_str()), 0);
}

// Through the real binary: a transform's `config: dependencies:` is installed before the load (the
// callable imports the package at module level) and reaches the SDK processes; a package pip cannot
// find stops the run with exit 2 naming it, before any process starts.
TEST(PythonDependencies, APipelinesDependenciesAreInstalledAndReachItsCallables) {
  TempDir dir("dfw-pydeps");
  ASSERT_TRUE(WriteWheel(dir));
  auto pipeline = [](const std::string& requirement) {
    return "pipeline:\n  type: chain\n  transforms:\n    - type: Create\n      config: {elements: [{a: 1}, {a: 2}]}\n"
           "    - type: MapToFields\n      config:\n        language: python\n        dependencies: ['" + requirement + "']\n"
           "        fields:\n          b:\n            callable: |\n              import dfwdeptest\n"
           "              def f(row):\n                return row.a * dfwdeptest.VALUE\n"
           "    - type: WriteToJson\n      config: {path: out/rows, file_name_suffix: .jsonl}\n";
  };
  const std::string good = dir.Write("good.yaml", pipeline("dfwdeptest==1.0"));
  const std::string env = "DFW_CACHE_DIR=none DFW_PYTHON_VENV_CACHE=" + (dir / "cache") +
                          " PIP_NO_INDEX=1 PIP_FIND_LINKS=" + dir.path();
  auto run = dfw::testing::RunDfworker({"run", good, "--job_dir", dir / "job", "--machine_type=n1-standard-2"}, dir.path(), env);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  std::string rows;
  for (const char* shard : {"out/rows-00000-of-00002.jsonl", "out/rows-00001-of-00002.jsonl", "out/rows-00000-of-00001.jsonl"}) {
    if (Exists(dir / shard)) rows += dfw::testing::ReadFile(dir / shard);
  }
  EXPECT_NE(rows.find("\"b\":7"), std::string::npos) << rows;
  EXPECT_NE(rows.find("\"b\":14"), std::string::npos) << rows;
  const std::string bad = dir.Write("bad.yaml", pipeline("dfwnosuchpackage==2.0"));
  auto refused = dfw::testing::RunDfworker({"run", bad, "--job_dir", dir / "job2"}, dir.path(), env);
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.out.find("dfwnosuchpackage==2.0"), std::string::npos) << refused.out;
  EXPECT_FALSE(Exists(dir / "job2/manifest.jsonl")) << refused.out;
}

TEST(PythonDependencies, WhatIsNotARequirementIsRefused) {
  EXPECT_EQ(python::InstallDependencies({}).status().code(), StatusCode::kInvalidArgument);
  Result<std::string> option = python::InstallDependencies({"--index-url=http://x"});
  EXPECT_EQ(option.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(option.status().message().find("'--index-url=http://x' is not a package requirement"), std::string::npos);
}

}  // namespace dfw::python_dependencies_test
