#!/usr/bin/env bash
# Combine next to DuckDB (issue 22): sum + count + mean of ROWS JSON Lines records over 1,000 keys.
#   dfworker: `dfworker run` with its default flags on this machine (one SDK process per core),
#             ReadFromJson -> Combine (group_by key) -> WriteToJson: the read stage folds each bundle
#             into partial accumulators and writes a shuffle, the reduce stage merges it.
#   DuckDB:   SELECT key, sum(v), count(v), avg(v) FROM read_json(...) GROUP BY key, COPY'd to a
#             file, with as many threads as cores (DuckDB from PyPI in a venv this script makes).
# Both read the same file; ROUNDS rounds in alternating order, the best wall time of each; the
# outputs are compared key by key (counts exact, sums and means within 1e-9 relative).
#   scripts/bench_combine.sh [BUILD_DIR=build] [ROWS=10000000] [ROUNDS=3]
# Env: DFW_BENCH_VENV (default ~/.cache/dfworker/bench-venv) holds duckdb.
set -euo pipefail
BUILD=${1:-build}
ROWS=${2:-10000000}
ROUNDS=${3:-3}
BIN="$(cd "$BUILD" 2>/dev/null && pwd)/src/cli/dfworker"
[[ -x "$BIN" ]] || { echo "bench_combine: $BIN not built (cmake --build $BUILD --target dfworker)" >&2; exit 2; }
VENV=${DFW_BENCH_VENV:-$HOME/.cache/dfworker/bench-venv}
if ! "$VENV/bin/python" -c "import duckdb" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet duckdb
fi
WORK=$(mktemp -d /tmp/dfw-bench-combine-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
awk -v n="$ROWS" 'BEGIN { for (i = 0; i < n; i++) printf "{\"id\":%d,\"key\":%d,\"v\":%.2f}\n", i, (i * 7919) % 1000, (i % 997) / 10.0 }' > in.jsonl
echo "input: $ROWS rows, $(( $(stat -c %s in.jsonl) / 1048576 )) MiB, 1000 keys; $(nproc) cores; duckdb $("$VENV/bin/python" -c 'import duckdb; print(duckdb.__version__)')"
cat > p.yaml <<'YAML'
pipeline:
  type: chain
  transforms:
    - type: ReadFromJson
      config: {path: in.jsonl}
    - type: Combine
      config:
        group_by: key
        combine:
          total: {value: v, fn: sum}
          n: {value: v, fn: count}
          avg: {value: v, fn: mean}
    - type: WriteToJson
      config: {path: out/dfw/agg, file_name_suffix: .jsonl}
YAML
cat > duck.py <<'PY'
import duckdb, os, sys
con = duckdb.connect()
con.execute(f"SET threads TO {os.cpu_count()}")
con.execute("COPY (SELECT key, sum(v) AS total, count(v) AS n, avg(v) AS avg "
            "FROM read_json('in.jsonl', format='newline_delimited', columns={'id': 'BIGINT', 'key': 'BIGINT', 'v': 'DOUBLE'}) "
            "GROUP BY key) TO 'out/duck.csv' (HEADER)")
PY
now() { date +%s.%N; }
best_dfw=999999; best_duck=999999
for r in $(seq 1 "$ROUNDS"); do
  for who in dfw duck; do
    rm -rf out jd && mkdir -p out
    t0=$(now)
    if [[ $who == dfw ]]; then
      "$BIN" run p.yaml --job_dir jd > dfw.log 2>&1 || { cat dfw.log >&2; exit 1; }
    else
      "$VENV/bin/python" duck.py
    fi
    t=$(echo "$(now) - $t0" | bc -l)
    printf "round %d %-8s %7.2f s\n" "$r" "$who" "$t"
    if [[ $who == dfw ]]; then best_dfw=$(echo "if ($t < $best_dfw) $t else $best_dfw" | bc -l); rm -rf dfw-out; cp -r out/dfw dfw-out; else best_duck=$(echo "if ($t < $best_duck) $t else $best_duck" | bc -l); cp out/duck.csv duck.csv; fi
  done
done
python3 - <<'PY'
import csv, glob, json
dfw = {}
for f in glob.glob("dfw-out/*"):
    for line in open(f):
        r = json.loads(line)
        assert r["key"] not in dfw, f"key {r['key']} twice"
        dfw[r["key"]] = r
duck = {int(r["key"]): r for r in csv.DictReader(open("duck.csv"))}
assert set(dfw) == set(duck), f"keys differ: {len(dfw)} vs {len(duck)}"
for k, d in duck.items():
    x = dfw[k]
    assert x["n"] == int(d["n"]), (k, x, d)
    for f in ("total", "avg"):
        a, b = float(x[f]), float(d[f])
        assert abs(a - b) <= 1e-9 * max(1.0, abs(b)), (k, f, a, b)
print(f"outputs agree: {len(dfw)} keys, counts exact, sums and means within 1e-9")
PY
dfw_rps=$(echo "$ROWS / $best_dfw" | bc -l); duck_rps=$(echo "$ROWS / $best_duck" | bc -l)
printf "best: dfworker %.2f s (%.0f records/s), DuckDB %.2f s (%.0f records/s); dfworker/DuckDB = %.2f (goal >= 0.5)\n" \
  "$best_dfw" "$dfw_rps" "$best_duck" "$duck_rps" "$(echo "$dfw_rps / $duck_rps" | bc -l)"
