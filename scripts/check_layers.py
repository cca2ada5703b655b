#!/usr/bin/env python3
"""The house rules that a grep can check (design.md "Modules", issue 13), run by ctest as `layering`:

1. A module includes only the public headers (dfw/<module>/...) of modules it links to, directly
   or through them (its DEPS in src/<module>/CMakeLists.txt): no module reaches above itself.
2. The module graph has no cycle.
3. fork/exec and wait live in one place (src/common/process.cc, the process seam).
4. No setenv/putenv/unsetenv in src/: a child's environment is stated when it is spawned
   (dfw/common/child_env.h), never by changing this process's.
5. getenv outside the cli and common entry points only in the files of GETENV_ALLOWED, the
   environment contracts the "Environment variables" table of docs/environment.md lists; a variable read there
   must be in that table too.

Prints each violation with file:line and exits 1 when there is any; exits 0 silently otherwise.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")

# file -> the contract its getenv calls belong to (docs/environment.md "Environment variables").
GETENV_ALLOWED = {
    "src/catalog/catalog.cc": "DFW_CATALOG_DIR",
    "src/backend/registry.cc": "DFW_CUDA_BACKEND_PATH, DFW_CUDA_UNAVAILABLE",
    "src/python/runtime.cc": "DFW_PYTHON_LIBRARY",
    "src/python/environment.cc": "DFW_PYTHON_ENV (the launcher -> SDK process contract, or a user's export)",
    "src/python/dependencies.cc": "DFW_PYTHON_VENV_CACHE, XDG_CACHE_HOME, HOME (where dependencies' venvs are kept)",
    "src/backend/cpu/kernels.cc": "DFW_CPU_KERNELS (the one choice of instruction set, skinny_kernels.cc's too)",
    "src/inference/runtime/device_memory.cc": "the launcher's child contract (ModelProcessContextFromEnv)",
    "src/device/mps_client.cc": "CUDA_MPS_PIPE_DIRECTORY, DFW_TENANT",
    "src/device/mps_env.cc": "NVIDIA MPS's client variables",
    "src/device/subprocess.cc": "PATH",
    "src/inference/weights/hf_model_dir.cc": "HF_HUB_CACHE, HF_HOME, HOME (the Hugging Face cache)",
}


def module_deps():
    """{module: set of dfw modules it links to}, from the CMake files under src/."""
    deps = {}
    for mod in sorted(os.listdir(SRC)):
        cml = os.path.join(SRC, mod, "CMakeLists.txt")
        if not os.path.isfile(cml):
            continue
        text = open(cml).read()
        # A module's name may hold an underscore (tenant_runs); names that are no module folder
        # (dfw_backend_cuda, dfw_cli_srcs) are dropped below.
        found = set(re.findall(r"\bdfw_([a-z_]+)\b", text))
        found.discard(mod)
        found.discard("module")  # the dfw_module() helper itself
        found.discard("tests")
        deps[mod] = {d for d in found if os.path.isdir(os.path.join(SRC, d))}
    deps.setdefault("cli", set())
    return deps


def closure(deps, mod, seen=None):
    seen = set() if seen is None else seen
    for d in deps.get(mod, ()):
        if d not in seen:
            seen.add(d)
            closure(deps, d, seen)
    return seen


def sources(folder):
    for dirpath, _, files in os.walk(folder):
        for f in files:
            if f.endswith((".cc", ".h", ".cu")):
                yield os.path.join(dirpath, f)


def main():
    problems = []
    deps = module_deps()
    for mod in deps:
        if mod in closure(deps, mod):
            problems.append(f"src/{mod}: the module graph has a cycle through {mod}")
    include_re = re.compile(r'^\s*#\s*include\s+"dfw/([a-z_]+)/')
    for mod in deps:
        allowed = closure(deps, mod) | {mod}
        folders = [os.path.join(SRC, mod), os.path.join(ROOT, "include", "dfw", mod)]
        for folder in folders:
            for path in sources(folder):
                rel = os.path.relpath(path, ROOT)
                for n, line in enumerate(open(path, errors="replace"), 1):
                    m = include_re.match(line)
                    if m and m.group(1) not in allowed:
                        problems.append(f"{rel}:{n}: module '{mod}' includes dfw/{m.group(1)}/ but does not link "
                                        f"dfw_{m.group(1)} (its DEPS: {', '.join(sorted(deps[mod])) or 'none'})")
    seam = os.path.join("src", "common", "process.cc")
    call_re = re.compile(r"\b(fork|vfork|execv|execve|execvp|execl|execlp|waitpid|wait4|posix_spawn)\s*\(")
    env_re = re.compile(r"(?<![\w.])(setenv|putenv|unsetenv|clearenv)\s*\(")
    getenv_re = re.compile(r"(?<![\w.])(getenv|secure_getenv)\s*\(")
    literal_re = re.compile(r'getenv\("([A-Z_]+)"\)')
    env_doc = open(os.path.join(ROOT, "docs", "environment.md"), errors="replace").read()
    env_table = env_doc.split("## Environment variables", 1)[1].split("\n## ", 1)[0] if "## Environment variables" in env_doc else ""
    for path in sources(SRC):
        rel = os.path.relpath(path, ROOT)
        for n, line in enumerate(open(path, errors="replace"), 1):
            code = line.split("//", 1)[0]
            if rel != seam and call_re.search(code):
                problems.append(f"{rel}:{n}: process calls belong to the one seam ({seam}): {line.strip()}")
            if env_re.search(code):
                problems.append(f"{rel}:{n}: this process's environment is not changed; state the child's "
                                f"(dfw/common/child_env.h): {line.strip()}")
            top = rel.split(os.sep)[1] if rel.count(os.sep) >= 2 else ""
            if getenv_re.search(code) and top not in ("cli", "common") and rel not in GETENV_ALLOWED:
                problems.append(f"{rel}:{n}: getenv outside the entry points; pass the value down (options, "
                                f"RunnerOptions, StageConfig::run) or document the contract (docs/environment.md, "
                                f"GETENV_ALLOWED): {line.strip()}")
            for var in literal_re.findall(code):
                if f"`{var}`" not in env_table and top not in ("common",):
                    problems.append(f"{rel}:{n}: {var} is read but not in docs/environment.md's \"Environment variables\" table")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
