#!/usr/bin/env python3
"""Runs a folder of Apache Beam's YAML integration test files with dfworker, as Beam's
apache_beam/yaml/integration_tests.py runs them, and prints one verdict per pipeline:

  PASS file#N | FAIL file#N: first error line | SKIP file#N: reason | XFAIL file#N: reason | XPASS file#N

- Each file's `fixtures:` are made once per file: `tempfile.TemporaryDirectory` (and Beam's
  `gcs_temp_dir`, whose role here is a scratch folder) is a fresh temp folder; any other fixture is a
  service or a Python test fixture: a pipeline that refers to it is SKIP naming it.
- Every string of a pipeline (and its `options:`) has `{NAME}` replaced by the fixture's value as
  Beam's replace_recursive does (str.format, strings holding '{' but no '{\\n').
- A file's pipelines run in order in one folder, so later pipelines read what earlier ones wrote.
- A pipeline passes when `dfworker run` exits 0; its checks are its AssertEqual transforms.
- scope.tsv (FILE#N<TAB>reason): pipelines that need something outside the machine: SKIP.
- --python-env PATH (default: $DFW_BEAM_SUITE_PYTHON_ENV): the worker's Python environment, passed
  to dfworker as --python_env. Pipelines with a Parquet transform need pyarrow there: SKIP when that
  Python cannot import it, else they must PASS.
- --known-failures FILE (FILE#N<TAB>reason): pipelines expected to fail while a feature is being
  built: a failure prints XFAIL and does not fail the run; a pass prints XPASS and fails it, so the
  list only shrinks.
Exit status: 0 when nothing FAILs or XPASSes, 1 otherwise, 2 on bad usage, 77 when DIR is absent.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

try:
    import yaml
except ImportError:  # python3-yaml (scripts/setup.sh)
    print("beam-suite: needs PyYAML (apt-get install python3-yaml)", file=sys.stderr)
    sys.exit(2)

SCRATCH_FIXTURES = ("tempfile.TemporaryDirectory", "apache_beam.yaml.integration_tests.gcs_temp_dir")


def read_table(path):
    """FILE#N<TAB>reason lines; '#' comments and blank lines skipped."""
    table = {}
    if not path:
        return table
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            key, sep, reason = line.partition("\t")
            if not sep or not re.fullmatch(r"[^#\s]+#\d+", key):
                raise SystemExit(f"beam-suite: {path}:{number}: expected FILE#N<TAB>reason, got {line!r}")
            table[key] = reason.strip()
    return table


def replace_recursive(spec, values):
    """Beam's integration_tests.replace_recursive."""
    if isinstance(spec, dict):
        return {k: replace_recursive(v, values) for k, v in spec.items()}
    if isinstance(spec, list):
        return [replace_recursive(v, values) for v in spec]
    if isinstance(spec, str) and "{" in spec and "{\n" not in spec:
        return spec.format(**values)
    return spec


def mentions(spec, names):
    """The fixture names `{NAME}` that appear in any string of spec."""
    found = set()
    if isinstance(spec, dict):
        for v in spec.values():
            found |= mentions(v, names)
    elif isinstance(spec, list):
        for v in spec:
            found |= mentions(v, names)
    elif isinstance(spec, str):
        found |= {n for n in names if "{" + n + "}" in spec or "{" + n + "[" in spec or "{" + n + "." in spec}
    return found


PYARROW_TRANSFORMS = ("ReadFromParquet", "WriteToParquet")


def transform_types(spec):
    """Every `type:` value of a pipeline spec."""
    found = set()
    if isinstance(spec, dict):
        if isinstance(spec.get("type"), str):
            found.add(spec["type"])
        for v in spec.values():
            found |= transform_types(v)
    elif isinstance(spec, list):
        for v in spec:
            found |= transform_types(v)
    return found


def pyarrow_missing(python_env):
    """"" when the worker's Python can import pyarrow; else why not (asked once per run)."""
    python = "/usr/bin/python3.11"
    where = "the system's python3.11"
    if python_env:
        where = python_env
        for name in ("python3.11", "python3", "python"):
            if os.access(os.path.join(python_env, "bin", name), os.X_OK):
                python = os.path.join(python_env, "bin", name)
                break
    try:
        probe = subprocess.run([python, "-c", "import pyarrow"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=60)
        if probe.returncode == 0:
            return ""
    except (OSError, subprocess.TimeoutExpired):
        pass
    return (f"pyarrow not in the worker's Python ({where}): set DFW_BEAM_SUITE_PYTHON_ENV (or --python-env) to a "
            "Python 3.11 venv with pyarrow==26.0.1, as scripts/test.sh makes build/pyarrow-venv")


def first_error(output):
    """The line that says what went wrong, with the first missing/unexpected row of an assertion."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if "error" in line.lower() or "assertion failed" in line:
            detail = line.strip()
            if "assertion failed" in line:
                rest = [l.strip() for l in lines[i + 1:i + 4] if l.strip()]
                detail += " | " + " ".join(rest[:2])
            return detail
    tail = [l for l in lines if l.strip()]
    return tail[-1].strip() if tail else "no output"


def run_file(path, args, scope, known, out):
    name = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    pipelines = doc.get("pipelines") or []
    fixtures = doc.get("fixtures") or []
    with tempfile.TemporaryDirectory(prefix="beam-suite-") as work:
        values, services = {}, {}
        for fx in fixtures:
            if fx.get("type") in SCRATCH_FIXTURES:
                values[fx["name"]] = tempfile.mkdtemp(prefix=fx["name"].lower() + "-", dir=work)
            else:
                services[fx["name"]] = fx.get("type")
        for n, spec in enumerate(pipelines, 1):
            key = f"{name}#{n}"
            if args.only and not re.search(args.only, key):
                continue
            if key in scope:
                out(key, "SKIP", scope[key])
                continue
            needed = mentions(spec, list(services))
            if needed:
                out(key, "SKIP", "needs " + ", ".join(f"{k} ({services[k]})" for k in sorted(needed)))
                continue
            if transform_types(spec) & set(PYARROW_TRANSFORMS):
                if args.pyarrow_missing is None:
                    args.pyarrow_missing = pyarrow_missing(args.python_env)
                if args.pyarrow_missing:
                    out(key, "SKIP", args.pyarrow_missing)
                    continue
            try:
                spec = replace_recursive(spec, values)
            except (KeyError, IndexError, ValueError) as exn:
                verdict(key, False, f"fixture substitution: {exn!r}", known, out)
                continue
            pipeline_file = os.path.join(work, f"{os.path.splitext(name)[0]}-{n}.yaml")
            with open(pipeline_file, "w", encoding="utf-8") as f:
                yaml.safe_dump(spec, f, sort_keys=False, allow_unicode=True, default_flow_style=False)
            cmd = [args.dfworker, "run", pipeline_file, "--job_dir", os.path.join(work, f"job-{n}"),
                   "--experiments=no_use_multiple_sdk_containers", "--log_level", "error"]
            if args.python_env:
                cmd.append("--python_env=" + args.python_env)
            proc = None
            try:
                proc = subprocess.run(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      timeout=args.timeout, text=True, errors="replace")
                ok, detail = proc.returncode == 0, f"exit {proc.returncode}: " + first_error(proc.stdout).replace(work + "/", "")
            except subprocess.TimeoutExpired:
                ok, detail = False, f"timed out after {args.timeout} s"
            except OSError as exn:
                ok, detail = False, f"cannot run {args.dfworker}: {exn.strerror}"
            if args.verbose and not ok and proc is not None:
                sys.stdout.write(proc.stdout)
            verdict(key, ok, detail, known, out)


def verdict(key, ok, detail, known, out):
    if key in known:
        out(key, "XPASS" if ok else "XFAIL", known[key] if not ok else "listed in the known failures: remove it")
    else:
        out(key, "PASS" if ok else "FAIL", "" if ok else detail)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="folder of Beam YAML test files (*.yaml)")
    p.add_argument("--dfworker", default=os.path.join(os.path.dirname(__file__), "..", "build", "src", "cli", "dfworker"))
    p.add_argument("--scope", default=os.path.join(os.path.dirname(__file__), "..", "tests", "beam_suite", "scope.tsv"))
    p.add_argument("--known-failures", default="", help="FILE#N<TAB>reason per pipeline expected to fail")
    p.add_argument("--only", default="", help="run only the pipelines whose FILE#N matches this regex")
    p.add_argument("--timeout", type=int, default=60, help="seconds per pipeline")
    p.add_argument("--verbose", action="store_true", help="print the whole output of each failing run")
    p.add_argument("--python-env", default=os.environ.get("DFW_BEAM_SUITE_PYTHON_ENV", ""),
                   help="the worker's Python environment (dfworker --python_env; default $DFW_BEAM_SUITE_PYTHON_ENV)")
    args = p.parse_args()
    args.pyarrow_missing = None  # probed on the first pipeline that needs pyarrow
    if args.python_env:
        args.python_env = os.path.abspath(args.python_env)
    if not os.path.isdir(args.dir):
        print(f"beam-suite: SKIP: no folder {args.dir} (Beam's YAML tests are not on this machine)")
        return 77
    if not os.access(args.dfworker, os.X_OK):
        print(f"beam-suite: {args.dfworker} is not an executable dfworker (build it first)", file=sys.stderr)
        return 2
    args.dfworker = os.path.abspath(args.dfworker)
    scope = read_table(args.scope)
    known = read_table(args.known_failures)
    counts = {}

    def out(key, status, detail):
        counts[status] = counts.get(status, 0) + 1
        print(f"{status} {key}" + (f": {detail}" if detail else ""), flush=True)

    start = time.monotonic()
    files = sorted(f for f in os.listdir(args.dir) if f.endswith(".yaml"))
    for f in files:
        run_file(os.path.join(args.dir, f), args, scope, known, out)
    total = sum(counts.values())
    parts = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("PASS", "FAIL", "XFAIL", "XPASS", "SKIP"))
    print(f"beam-suite: {total} pipelines in {len(files)} files: {parts} ({time.monotonic() - start:.0f} s)")
    return 1 if counts.get("FAIL", 0) or counts.get("XPASS", 0) else 0


if __name__ == "__main__":
    sys.exit(main())
