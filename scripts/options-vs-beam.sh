#!/usr/bin/env bash
# Differential check of dfworker's option parsing against Apache Beam's own parser (issue 16).
# Makes a venv with apache-beam from PyPI (so: never in CI), generates random launch lines and
# compares what PipelineOptions reads with `dfworker run FILE --dry_run --format=json`'s `options`.
# Prints every disagreement that is not a documented, deliberate difference (docs/options.md,
# "Differences from Beam Python") and exits 1 if there is any; the last line is the summary.
#
# Usage: scripts/options-vs-beam.sh [DFWORKER] [-- options_vs_beam.py flags: --lines N --seed S --verbose
#                                    --beam-append]
# Env:   BEAM_VERSION (default 2.77.0), BEAM_VENV (default build/beam-venv)
set -euo pipefail
cd "$(dirname "$0")/.."
dfworker=build/src/cli/dfworker
if [ $# -gt 0 ] && [ "$1" != "--" ]; then dfworker=$1; shift; fi
[ "${1:-}" = "--" ] && shift
[ -x "$dfworker" ] || { echo "options-vs-beam: no dfworker at '$dfworker' (build it first)" >&2; exit 2; }
version=${BEAM_VERSION:-2.77.0}
venv=${BEAM_VENV:-build/beam-venv}
if ! "$venv/bin/python" -c "import apache_beam, sys; sys.exit(apache_beam.__version__ != '$version')" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "apache-beam==$version"
fi
exec "$venv/bin/python" scripts/options_vs_beam.py "$dfworker" --lines 400 "$@"
