#!/usr/bin/env bash
# Python callables, CPython against the compiled fast path: a MapToFields field and a Filter over
# N rows (default 1,000,000), the same arithmetic written once as expressions the fast path
# compiles and once as `def` callables, which run in the embedded CPython (docs/beam.md "Python
# callables"), and the `def` pipeline on Beam 2.77's DirectRunner when its venv is there
# ($DFW_BENCH_BEAM_VENV). Alternating rounds (ROUNDS, default 3), best whole-process wall time per
# variant, outputs compared as rows. Run it on an otherwise idle machine.
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
# Beam 2.77's DirectRunner on the same file and the same `def` callables, when a venv with
# apache-beam[yaml]==2.77.0 is at $DFW_BENCH_BEAM_VENV (never installed in CI:
# python3 -m venv V && V/bin/pip install 'apache-beam[yaml]==2.77.0'). Beam's WriteToJson takes no
# file_name_suffix, so its sink names the file instead.
beam_venv=${DFW_BENCH_BEAM_VENV:-$HOME/.cache/dfworker/beam-venv}
variants=(fast cpython)
if "$beam_venv/bin/python" -c 'import apache_beam, sys; sys.exit(apache_beam.__version__ != "2.77.0")' 2>/dev/null; then
  sed -e 's|config: {path: "\(.*\)/out-cpython", file_name_suffix: .jsonl}|config: {path: "\1/out-beam.jsonl"}|' \
    "$work/cpython.yaml" > "$work/beam.yaml"
  variants+=(beam)
else
  echo "(no Beam 2.77.0 venv at $beam_venv: the Beam DirectRunner leg is skipped)"
fi
rounds=${ROUNDS:-3}
flags=$(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_bf16|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "input: $rows rows; $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags $flags); $rounds rounds, order rotating"
declare -A best
for r in $(seq 1 "$rounds"); do
  for k in "${!variants[@]}"; do
    variant=${variants[$(( (k + r) % ${#variants[@]} ))]}
    rm -rf "$work"/out-"$variant"* "$work/job-$variant"
    start=$(date +%s.%N)
    if [ "$variant" = beam ]; then
      "$beam_venv/bin/python" -m apache_beam.yaml.main --yaml_pipeline_file="$work/beam.yaml" --runner=DirectRunner \
        > "$work/$variant.log" 2>&1 || { tail -20 "$work/$variant.log"; exit 1; }
    else
      "$bin" run "$work/$variant.yaml" --job_dir="$work/job-$variant" > "$work/$variant.log" 2>&1 || { cat "$work/$variant.log"; exit 1; }
    fi
    end=$(date +%s.%N)
    t=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$end")
    if [ -z "${best[$variant]:-}" ] || python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$t" "${best[$variant]}"; then
      best[$variant]=$t
    fi
  done
done
# The outputs must be the same rows (compared as parsed JSON, sorted).
python3 - "$work" "${variants[@]}" <<'PY'
import glob, json, sys
work, variants = sys.argv[1], sys.argv[2:]
rows = {}
for v in variants:
    rows[v] = sorted(json.dumps(json.loads(l), sort_keys=True) for f in glob.glob(f'{work}/out-{v}*') for l in open(f))
for v in variants[1:]:
    if rows[v] != rows[variants[0]]:
        sys.exit(f'bench_python: {v} wrote {len(rows[v])} rows, {variants[0]} {len(rows[variants[0]])}: the outputs differ')
print(f'outputs equal: {len(rows[variants[0]])} rows out in every variant')
PY
for variant in "${variants[@]}"; do
  python3 -c "import sys; s=float(sys.argv[2]); print(f'{sys.argv[1]:8s} {s:7.2f} s  {int(sys.argv[3])/s:12,.0f} rows/s in (best of the rounds, whole process)')" \
    "$variant" "${best[$variant]}" "$rows"
done
python3 -c "
import sys
b = dict(zip(sys.argv[1::2], map(float, sys.argv[2::2])))
print(f\"cpython / fast: {b['cpython'] / b['fast']:.2f}x the time\")
if 'beam' in b: print(f\"beam / cpython: dfworker's CPython path {b['beam'] / b['cpython']:.1f}x faster than Beam's DirectRunner\")
" $(for v in "${variants[@]}"; do echo "$v ${best[$v]}"; done)
