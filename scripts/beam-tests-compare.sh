#!/usr/bin/env bash
# The pipeline's own tests (tests: lists) on dfworker and on Apache Beam 2.77's yaml_testing, side by
# side: the verdict of each test (pass / fail / invalid-or-error), the time per test on each side,
# and, with --fix_tests on a copy, whether both rewrite each failing expectation to the same rows.
#
#   bash scripts/beam-tests-compare.sh                      # testdata/pipeline_tests/*.yaml + pipelines/orders_by_size.yaml
#   bash scripts/beam-tests-compare.sh FILE.yaml ...        # other pipeline files with tests:
#
# Not part of CI: it needs apache-beam[yaml] from PyPI in $BEAM_VENV (default
# ~/.cache/dfworker/beam-venv; installed there when missing). DFWORKER=build/src/cli/dfworker.
# Exit 0 when every verdict and every fixed expectation agree.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VENV="${BEAM_VENV:-$HOME/.cache/dfworker/beam-venv}"
DFW="${DFWORKER:-$ROOT/build/src/cli/dfworker}"
[ -x "$DFW" ] || { echo "beam-tests-compare: $DFW not built (ninja -C build dfworker)" >&2; exit 2; }
if [ ! -x "$VENV/bin/python" ]; then python3 -m venv "$VENV"; fi
"$VENV/bin/python" -c 'import apache_beam.yaml' 2>/dev/null || "$VENV/bin/pip" install -q 'apache-beam[yaml]'
FILES=("$@")
[ ${#FILES[@]} -eq 0 ] && FILES=(testdata/pipeline_tests/*.yaml pipelines/orders_by_size.yaml)
exec "$VENV/bin/python" "$ROOT/scripts/beam_tests_compare.py" --dfworker "$DFW" "${FILES[@]}"
