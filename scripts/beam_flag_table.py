#!/usr/bin/env python3
"""Prints the Python flags of every PipelineOptions subclass of the installed apache-beam, as the
C++ rows of src/options/beam_flags.cc (kind only: dfworker reads a few of them itself, the rest are
accepted and ignored). Run with the venv of scripts/options-vs-beam.sh:

    build/beam-venv/bin/python scripts/beam_flag_table.py > /tmp/rows.inc

apache_beam.yaml.options needs jinja2, docstring_parser and pandas in the venv (pip install them);
dask_runner.py defines its options before it fails to import without dask, so they are found anyway.
"""
import argparse
import importlib
import sys

import apache_beam
from apache_beam.options import pipeline_options as po

# Modules outside pipeline_options.py that define PipelineOptions subclasses (found with
# `grep -rl "def _add_argparse_args" apache_beam`, tests and examples left out); one that does not
# import (an optional dependency missing) is named on stderr and skipped.
EXTRA_MODULES = ['apache_beam.yaml.options', 'apache_beam.runners.render', 'apache_beam.runners.dask.dask_runner']


def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


def main():
    for module in EXTRA_MODULES:
        try:
            importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 - an optional dependency missing or broken
            print('not imported %s: %s' % (module, e), file=sys.stderr)
    parser = po._BeamArgumentParser(allow_abbrev=False)
    seen = set()
    for cls in subclasses(po.PipelineOptions):
        if cls in seen or '_add_argparse_args' not in cls.__dict__:
            continue
        seen.add(cls)
        try:
            cls._add_argparse_args(parser)
        except argparse.ArgumentError as e:  # a subclass re-adding a flag
            print('skipped %s: %s' % (cls.__name__, e), file=sys.stderr)
    print('// Generated from apache-beam %s by scripts/beam_flag_table.py.' % apache_beam.__version__)
    for action in parser._actions:
        for flag in action.option_strings:
            if not flag.startswith('--') or flag == '--help':
                continue
            kind = 'K::kIgnoredBool' if action.nargs == 0 else 'K::kIgnored'
            print('    {"%s", D::kOther, %s},' % (flag[2:], kind))


if __name__ == '__main__':
    main()
