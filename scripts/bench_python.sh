#!/usr/bin/env bash
# Python callables, CPython against the compiled fast path: a MapToFields field and a Filter over
# N rows (default 1,000,000), the same arithmetic written once as expressions the fast path
# compiles and once as `def` callables, which run in the embedded CPython (docs/beam.md "Python
# callables"). Prints wall seconds and rows/s per variant. Run it on an otherwise idle machine.
#   scripts/bench_python.sh [ROWS] [BUILD_DIR]
set -euo pipefail
rows=${1:-1000000}
build=${2:-build}
bin="$build/src/cli/dfworker"
[ -x "$bin" ] || { echo "bench_python: $bin not built (dfw-build dfworker)" >&2; exit 2; }
work=$(mktemp -d /tmp/dfw-bench-python-XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$rows" "$work/in.jsonl" <<'PY'
import json, sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, 'w') as f:
    for i in range(n):
        f.write(json.dumps({'x': i, 'name': 'row%d' % i}) + '\n')
PY
write_pipeline() {  # $1 = name, $2 = the y field, $3 = the keep predicate
  cat > "$work/$1.yaml" <<YAML
pipeline:
  type: chain
  source:
    type: ReadFromJson
    config: {path: "$work/in.jsonl"}
  transforms:
    - type: MapToFields
      config:
        language: python
        append: true
        fields:
          y: $2
    - type: Filter
      config:
        language: python
        keep: $3
  sink:
    type: WriteToJson
    config: {path: "$work/out-$1", file_name_suffix: .jsonl}
YAML
}
write_pipeline fast "'x * 2 + 1'" "'x % 3 == 0'"
write_pipeline cpython '{callable: "def f(row):\n  return row.x * 2 + 1\n"}' '{callable: "def keep(row):\n  return row.x % 3 == 0\n"}'
for variant in fast cpython; do
  start=$(date +%s.%N)
  "$bin" run "$work/$variant.yaml" --job_dir="$work/job-$variant" > "$work/$variant.log" 2>&1 || { cat "$work/$variant.log"; exit 1; }
  end=$(date +%s.%N)
  out=$(cat "$work"/out-"$variant"* | wc -l)
  python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); print(f'{sys.argv[3]:8s} {s:7.2f} s  {int(sys.argv[4])/s:12,.0f} rows/s in  ({sys.argv[5]} rows out)')" \
    "$start" "$end" "$variant" "$rows" "$out"
done
