#!/usr/bin/env python3
"""Renders pipeline templates with jinja2 the way Beam 2.77's loader does and with
`dfworker run --dry_run --render`, and compares the two texts (never in CI: needs jinja2).

Usage: scripts/jinja_compare.py [--dfworker BIN] [--cwd DIR] --jinja_variables JSON FILE...

Beam's side, restated from its documented behaviour (docs/beam.md "Jinja templates"):
StrictUndefined, leading comment lines dropped from every loaded file, includes searched as given,
then in the pipeline file's folder, then ".". Two differences are by design and normalised before
comparing: dfworker keeps the main file's leading comment lines as empty lines and its trailing
newline. Prints SAME or DIFF (with a unified diff) per file; exits 1 if any differ.
"""
import argparse
import difflib
import json
import os
import subprocess
import sys

import jinja2


def strip_leading(text):
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("#")):
        i += 1
    return "".join(lines[i:])


class Loader(jinja2.BaseLoader):
    def __init__(self, paths):
        self.paths = paths

    def get_source(self, environment, path):
        candidates = [path] + ([] if os.path.isabs(path) else [os.path.join(p, path) for p in self.paths])
        for c in candidates:
            if os.path.isfile(c):
                with open(c) as f:
                    return strip_leading(f.read()), c, lambda: True
        raise jinja2.TemplateNotFound(path)


def beam_render(path, variables):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined,
                             loader=Loader([os.path.dirname(path) or ".", "."]))
    with open(path) as f:
        return env.from_string(strip_leading(f.read())).render(**variables)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dfworker", default=os.path.join(os.path.dirname(__file__), "..", "build", "src", "cli", "dfworker"))
    ap.add_argument("--cwd", default=".")
    ap.add_argument("--jinja_variables", default="{}")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    os.chdir(args.cwd)
    variables = json.loads(args.jinja_variables)
    bad = 0
    for path in args.files:
        try:
            want = beam_render(path, variables)
        except jinja2.TemplateError as e:
            want = "ERROR " + type(e).__name__
        run = subprocess.run([os.path.abspath(args.dfworker) if os.path.exists(args.dfworker) else args.dfworker, "run", path,
                              "--dry_run", "--render", "--jinja_variables=" + args.jinja_variables],
                             capture_output=True, text=True)
        got = run.stdout if run.returncode != 2 or run.stdout else "ERROR (exit 2) " + run.stderr.strip().splitlines()[-1]
        if not got.startswith("ERROR"):
            got = strip_leading(got).rstrip("\n")
            want = strip_leading(want).rstrip("\n")
        same = got == want or (got.startswith("ERROR") and want.startswith("ERROR"))
        print(("SAME " if same else "DIFF ") + path + ("" if not got.startswith("ERROR") else "  [" + got + " / " + want + "]"))
        if not same:
            bad += 1
            sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "jinja2", "dfworker"))
            print()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
