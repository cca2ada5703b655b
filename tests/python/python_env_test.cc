// --python_env (python.h ResolveEnvironment / UseEnvironment): which folders are a Python 3.11
// environment, what the refusal of the others says, and, through the real binary, that a venv's
// packages reach the callables of the SDK processes a run starts, from the flag or the options: block.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "cli/cli_test_util.h"
#include "dfw/python/python.h"
#include "test_util.h"

namespace dfw::python_env_test {

using dfw::testing::RunDfworker;
using dfw::testing::TempDir;

std::string WriteExecutable(TempDir& dir, const std::string& name) {
  const std::string path = dir.Write(name, "#!/bin/sh\n");
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST(PythonEnv, AVenvOfPython311IsItsPython) {
  TempDir dir("dfw-pyenv");
  dir.Write("v/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n");
  const std::string exe = WriteExecutable(dir, "v/bin/python");
  Result<std::string> got = python::ResolveEnvironment(dir / "v");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, exe);
}

TEST(PythonEnv, APrefixOfPython311IsItsPython311) {
  TempDir dir("dfw-pyenv");
  const std::string exe = WriteExecutable(dir, "p/bin/python3.11");
  dir.Write("p/lib/python3.11/os.py", "");
  Result<std::string> got = python::ResolveEnvironment(dir / "p/");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, exe);
  EXPECT_EQ(*python::ResolveEnvironment(""), "");  // the system's python3.11
}

TEST(PythonEnv, AnotherPythonVersionIsRefusedNamingIt) {
  TempDir dir("dfw-pyenv");
  dir.Write("v/pyvenv.cfg", "home = /opt/py/bin\nversion = 3.12.1\n");
  WriteExecutable(dir, "v/bin/python");
  Result<std::string> venv = python::ResolveEnvironment(dir / "v");
  ASSERT_FALSE(venv.ok());
  EXPECT_EQ(venv.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(venv.status().message().find("is a venv of Python 3.12.1 (home = /opt/py/bin)"), std::string::npos)
      << venv.status().message();
  WriteExecutable(dir, "p/bin/python3.12");
  dir.Write("p/lib/python3.12/os.py", "");
  Result<std::string> prefix = python::ResolveEnvironment(dir / "p");
  ASSERT_FALSE(prefix.ok());
  EXPECT_NE(prefix.status().message().find("found bin/: python3.12, lib/: python3.12"), std::string::npos)
      << prefix.status().message();
}

TEST(PythonEnv, WhatIsNotAnEnvironmentIsRefused) {
  TempDir dir("dfw-pyenv");
  const std::string file = dir.Write("f", "");
  EXPECT_NE(python::ResolveEnvironment(dir / "missing").status().message().find("does not exist"), std::string::npos);
  EXPECT_NE(python::ResolveEnvironment(file).status().message().find("is a file, not a folder"), std::string::npos);
  EXPECT_NE(python::ResolveEnvironment(dir.path()).status().message().find("found no bin/python*, no lib/python*"),
            std::string::npos);
  dir.Write("v/pyvenv.cfg", "version = 3.11.2\n");
  EXPECT_NE(python::ResolveEnvironment(dir / "v").status().message().find("but no bin/python3.11"), std::string::npos);
}

// Create → MapToFields (a callable importing the venv's module) → AssertEqual, run for real: the
// callable runs in the SDK process, which must see the venv the launcher was given.
std::string ProbePipeline(const std::string& options_block) {
  return options_block +
         "pipeline:\n"
         "  type: chain\n"
         "  transforms:\n"
         "    - type: Create\n"
         "      config: {elements: [{a: 1}]}\n"
         "    - type: MapToFields\n"
         "      config:\n"
         "        language: python\n"
         "        fields:\n"
         "          b:\n"
         "            callable: |\n"
         "              import dfw_env_probe\n"
         "              def f(row):\n"
         "                  return dfw_env_probe.VALUE + row.a\n"
         "    - type: AssertEqual\n"
         "      config: {elements: [{b: 43}]}\n";
}

TEST(PythonEnv, AVenvsPackagesReachTheSdkProcesses) {
  TempDir dir("dfw-pyenv");
  const std::string venv = dir / "venv";
  ASSERT_EQ(std::system(("/usr/bin/python3.11 -m venv --without-pip " + venv + " > /dev/null 2>&1").c_str()), 0);
  dir.Write("venv/lib/python3.11/site-packages/dfw_env_probe.py", "VALUE = 42\n");
  const std::string flag = dir.Write("flag.yaml", ProbePipeline(""));
  const std::string block = dir.Write("block.yaml", ProbePipeline("options:\n  python_env: " + venv + "\n"));
  auto run = [&](const std::string& p, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", p, "--job_dir", dir / ("job-" + std::to_string(extra.size()) + p.substr(p.size() - 9)),
                                     "--log_level", "error"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunDfworker(args, dir.path(), "DFW_CACHE_DIR=none");
  };
  auto with_flag = run(flag, {"--python_env=" + venv});
  EXPECT_EQ(with_flag.exit_code, 0) << with_flag.out;
  auto with_block = run(block, {});
  EXPECT_EQ(with_block.exit_code, 0) << with_block.out;
  auto without = run(flag, {"--experiments=x"});
  EXPECT_NE(without.exit_code, 0) << without.out;
  EXPECT_NE(without.out.find("dfw_env_probe"), std::string::npos) << without.out;
  auto tested = RunDfworker({"run", flag, "--dry_run", "--python_env=" + (dir / "nowhere")}, dir.path());
  EXPECT_EQ(tested.exit_code, 2) << tested.out;
  EXPECT_NE(tested.out.find("--python_env '" + (dir / "nowhere") + "' does not exist"), std::string::npos) << tested.out;
  // `plan` loads the callables too, in the same Python: it checks the flag as `run` does.
  auto planned = RunDfworker({"plan", flag, "--python_env=" + (dir / "nowhere")}, dir.path());
  EXPECT_EQ(planned.exit_code, 2) << planned.out;
  EXPECT_NE(planned.out.find("--python_env '" + (dir / "nowhere") + "' does not exist"), std::string::npos) << planned.out;
  auto planned_in_venv = RunDfworker({"plan", block}, dir.path(), "DFW_CACHE_DIR=none");
  EXPECT_EQ(planned_in_venv.exit_code, 0) << planned_in_venv.out;
}

}  // namespace dfw::python_env_test
