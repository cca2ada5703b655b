#!/usr/bin/env bash
# Beam's YAML examples as a yardstick: runs every *.yaml under DIR with `dfworker run FILE --job_dir
# <tmp>` from a temp working directory and compares the rows LogForTesting printed (the job dir's
# logs/sdk-*.log) with the file's `# Expected:` block, as multisets of rows (Beam's
# examples_test.py does the same); a field-order difference is reported as such.
#
#   bash scripts/beam-examples.sh DIR        # DIR: e.g. a Beam checkout's
#                                            #   sdks/python/apache_beam/yaml/examples/transforms
#
# Prints PASS / FAIL (with a diff) / REFUSED (dfworker exit 2, with its first error line) per file
# and the counts. Exit 0 when every file passes. Standard-library python3 only (no venv). Env:
#   DFWORKER=build/src/cli/dfworker   TIMEOUT=120 (seconds per pipeline)
# The examples are Beam's files: fetch them, do not copy them into this repository.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 DIR   (a folder of Beam YAML examples)" >&2
  exit 2
fi
DFW="${DFWORKER:-$ROOT/build/src/cli/dfworker}"
if [ ! -x "$DFW" ]; then
  echo "beam-examples: no dfworker binary at $DFW (build it: ninja -C build dfworker, or set DFWORKER)" >&2
  exit 2
fi
exec python3 "$ROOT/scripts/beam_examples.py" "$1" --dfworker "$DFW" --timeout "${TIMEOUT:-120}"
