#!/usr/bin/env bash
# The JSON job next to DuckDB and Polars: read JSON Lines (RECORDS records in FILES files) -> map
# (total = price * qty, label = name.upper(), appended) -> filter (total > 10) -> write JSON Lines.
#   dfworker: `dfworker run` with its default flags on this machine (one SDK process per core),
#             ReadFromJson -> MapToFields -> Filter -> WriteToJson; timed as the whole process.
#   DuckDB:   SELECT *, price * qty AS total, upper(name) AS label ... WHERE total > 10, COPY'd to
#             newline-delimited JSON; Polars: scan_ndjson -> with_columns -> filter -> sink_ndjson.
#             Both with as many threads as cores, timed as engine time (from the query to the
#             written file; the interpreter's start and imports are not counted). DuckDB and Polars
#             from PyPI in a venv this script makes; never in CI.
# ROUNDS rounds, the order rotating each round, the best and the median time of each; the three outputs are
# compared row for row as multisets (ints and strings exactly, floats by value).
#   scripts/bench_json_job.sh [BUILD_DIR=build] [RECORDS=1000000] [FILES=8] [ROUNDS=3]
# Env: DFW_BENCH_VENV (default ~/.cache/dfworker/bench-venv) holds duckdb and polars;
#      DFW_BENCH_BASELINE=/path/to/an/older/dfworker adds that binary to the rotation (a change's
#      before and after, side by side in one run; its output is compared too).
set -euo pipefail
BUILD=${1:-build}
RECORDS=${2:-1000000}
FILES=${3:-8}
ROUNDS=${4:-3}
BIN="$(cd "$BUILD" 2>/dev/null && pwd)/src/cli/dfworker"
[[ -x "$BIN" ]] || { echo "bench_json_job: $BIN not built (cmake --build $BUILD --target dfworker)" >&2; exit 2; }
VENV=${DFW_BENCH_VENV:-$HOME/.cache/dfworker/bench-venv}
if ! "$VENV/bin/python" -c "import duckdb, polars" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet duckdb polars
fi
WORK=$(mktemp -d /tmp/dfw-bench-json-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
mkdir in
# Record i goes to file i % FILES: {"id": i, "name": "item-i", "price": (i%97).(i%100), "qty": i%13, "tag": ...}
awk -v n="$RECORDS" -v f="$FILES" 'BEGIN { for (i = 0; i < n; i++)
  printf "{\"id\": %d, \"name\": \"item-%d\", \"price\": %d.%02d, \"qty\": %d, \"tag\": \"%s\"}\n", i, i, i % 97, i % 100, i % 13, (i % 3) ? "normal" : "sale" > sprintf("in/part-%02d.jsonl", i % f) }'
threads=$(nproc)
flags=$(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_bf16|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "input: $RECORDS records in $FILES files, $(( $(cat in/*.jsonl | wc -c) / 1048576 )) MiB; $threads cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags $flags); $("$VENV/bin/python" -c 'import duckdb, polars; print("duckdb", duckdb.__version__, "polars", polars.__version__)')"
cat > p.yaml <<'YAML'
pipeline:
  transforms:
    - {type: ReadFromJson, name: Read, config: {path: "in/*.jsonl"}}
    - type: MapToFields
      name: Map
      input: Read
      config:
        language: python
        append: true
        fields: {total: "price * qty", label: "name.upper()"}
    - {type: Filter, name: Keep, input: Map, config: {keep: "total > 10"}}
    - {type: WriteToJson, name: Write, input: Keep, config: {path: out/dfw/result, file_name_suffix: .jsonl}}
YAML
cat > duck.py <<'PY'
import duckdb, os, time
t0 = time.perf_counter()
con = duckdb.connect()
con.execute(f"SET threads TO {os.cpu_count()}")
con.execute("COPY (SELECT *, price * qty AS total, upper(name) AS label FROM read_json('in/*.jsonl', "
            "format='newline_delimited', columns={'id': 'BIGINT', 'name': 'VARCHAR', 'price': 'DOUBLE', "
            "'qty': 'BIGINT', 'tag': 'VARCHAR'}) WHERE price * qty > 10) TO 'out/duck.jsonl' (FORMAT JSON)")
print(f"{time.perf_counter() - t0:.4f}")
PY
cat > polars_job.py <<'PY'
import os, time
import polars as pl
t0 = time.perf_counter()
schema = {"id": pl.Int64, "name": pl.Utf8, "price": pl.Float64, "qty": pl.Int64, "tag": pl.Utf8}
(pl.scan_ndjson("in/*.jsonl", schema=schema)
   .with_columns((pl.col("price") * pl.col("qty")).alias("total"), pl.col("name").str.to_uppercase().alias("label"))
   .filter(pl.col("total") > 10)
   .sink_ndjson("out/polars.jsonl"))
print(f"{time.perf_counter() - t0:.4f}")
PY
now() { date +%s.%N; }
declare -A best=([dfw]=999999 [duck]=999999 [polars]=999999 [base]=999999)
declare -A times=()
median() { printf '%s\n' $1 | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
engines=(dfw duck polars)
BASELINE=${DFW_BENCH_BASELINE:-}
[[ -z "$BASELINE" ]] || { [[ -x "$BASELINE" ]] || { echo "bench_json_job: DFW_BENCH_BASELINE=$BASELINE is not executable" >&2; exit 2; }; engines+=(base); }
n=${#engines[@]}
for r in $(seq 1 "$ROUNDS"); do
  for k in $(seq 0 $((n - 1))); do
    who=${engines[$(( (k + r - 1) % n ))]}
    rm -rf out jd && mkdir -p out
    case $who in
      dfw)
        t0=$(now)
        "$BIN" run p.yaml --job_dir jd > dfw.log 2>&1 || { cat dfw.log >&2; exit 1; }
        t=$(echo "$(now) - $t0" | bc -l)
        rm -rf dfw-out && cp -r out/dfw dfw-out ;;
      base)
        t0=$(now)
        "$BASELINE" run p.yaml --job_dir jd > base.log 2>&1 || { cat base.log >&2; exit 1; }
        t=$(echo "$(now) - $t0" | bc -l)
        rm -rf base-out && cp -r out/dfw base-out ;;
      duck) t=$("$VENV/bin/python" duck.py); cp out/duck.jsonl duck.jsonl ;;
      polars) t=$(POLARS_MAX_THREADS=$threads "$VENV/bin/python" polars_job.py); cp out/polars.jsonl polars.jsonl ;;
    esac
    printf "round %d %-7s %7.3f s\n" "$r" "$who" "$t"
    best[$who]=$(echo "if ($t < ${best[$who]}) $t else ${best[$who]}" | bc -l)
    times[$who]+=" $t"
  done
done
python3 - <<'PY'
import collections, glob, json
KEYS = ("id", "name", "price", "qty", "tag", "total", "label")
def rows(paths):
    c = collections.Counter()
    for p in paths:
        for line in open(p):
            r = json.loads(line)
            c[tuple(float(r[k]) if k in ("price", "total") else r[k] for k in KEYS)] += 1
    return c
dfw = rows(glob.glob("dfw-out/*"))
others = [("DuckDB", rows(["duck.jsonl"])), ("Polars", rows(["polars.jsonl"]))]
if glob.glob("base-out/*"):
    others.append(("the baseline dfworker", rows(glob.glob("base-out/*"))))
for name, other in others:
    if dfw != other:
        a, b = dfw - other, other - dfw
        raise SystemExit(f"outputs differ from {name}: {sum(a.values())} rows only in dfworker (e.g. {list(a)[:2]}), "
                         f"{sum(b.values())} only in {name} (e.g. {list(b)[:2]})")
print(f"outputs agree: {sum(dfw.values())} rows in all {len(others) + 1}")
PY
printf "best: dfworker %.3f s (whole process), DuckDB %.3f s, Polars %.3f s (engine time)\n" "${best[dfw]}" "${best[duck]}" "${best[polars]}"
printf "dfworker speed / DuckDB = %.2f, dfworker speed / Polars = %.2f (above 1: dfworker faster)\n" \
  "$(echo "${best[duck]} / ${best[dfw]}" | bc -l)" "$(echo "${best[polars]} / ${best[dfw]}" | bc -l)"
if [[ -n "$BASELINE" ]]; then
  printf "baseline dfworker %.3f s: this build's speed / the baseline's = %.2f\n" "${best[base]}" "$(echo "${best[base]} / ${best[dfw]}" | bc -l)"
fi
m_dfw=$(median "${times[dfw]}"); m_duck=$(median "${times[duck]}"); m_polars=$(median "${times[polars]}")
printf "median of %d rounds: dfworker %.3f s, DuckDB %.3f s, Polars %.3f s; dfworker speed / DuckDB = %.2f, / Polars = %.2f\n" \
  "$ROUNDS" "$m_dfw" "$m_duck" "$m_polars" "$(echo "$m_duck / $m_dfw" | bc -l)" "$(echo "$m_polars / $m_dfw" | bc -l)"
if [[ -n "$BASELINE" ]]; then
  m_base=$(median "${times[base]}")
  printf "median baseline dfworker %.3f s: this build's speed / the baseline's = %.2f\n" "$m_base" "$(echo "$m_base / $m_dfw" | bc -l)"
fi
