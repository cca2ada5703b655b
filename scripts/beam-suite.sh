#!/usr/bin/env bash
# Runs a folder of Apache Beam's YAML integration test files with dfworker, as Beam's
# integration_tests.py runs them: scripts/beam-suite.sh DIR [--known-failures FILE] [--only REGEX]
# [--dfworker PATH] [--timeout S] [--python-env VENV] [--verbose]. One PASS/FAIL/SKIP/XFAIL/XPASS line per pipeline
# (file#N) and a total line; exit 1 on any FAIL or XPASS, 77 when DIR is absent (details:
# scripts/beam_suite.py).
set -euo pipefail
exec python3 "$(dirname "$0")/beam_suite.py" "$@"
