#!/usr/bin/env bash
# Join next to DuckDB: a FULL OUTER JOIN of ORDERS orders with USERS users (JSON Lines) on the user
# id, with some orders naming no user and some users without orders.
#   dfworker: `dfworker run` with its default flags on this machine (one SDK process per core),
#             ReadFromJson x2 -> Join (type: outer) -> WriteToJson: the read stage writes each input's
#             rows to the shuffle by key, the join stage joins each partition's key groups.
#   DuckDB:   the same query (SELECT u.uid AS user, u.name, o.oid, o.amount FROM u FULL OUTER JOIN o
#             ON u.uid = o.uid) over read_json, COPY'd to a file, with as many threads as cores
#             (DuckDB from PyPI in a venv this script makes; never in CI).
# ROUNDS rounds in alternating order, the best and the median wall time of each; the two outputs are compared as
# multisets of rows (exactly: ints, strings and nulls).
#   scripts/bench_join.sh [BUILD_DIR=build] [ORDERS=2000000] [USERS=200000] [ROUNDS=3]
# Env: DFW_BENCH_VENV (default ~/.cache/dfworker/bench-venv) holds duckdb;
#      DFW_BENCH_BASELINE=/path/to/an/older/dfworker adds that binary to the rotation (a change's
#      before and after in one run; its output must equal this build's).
set -euo pipefail
BUILD=${1:-build}
ORDERS=${2:-2000000}
USERS=${3:-200000}
ROUNDS=${4:-3}
BIN="$(cd "$BUILD" 2>/dev/null && pwd)/src/cli/dfworker"
[[ -x "$BIN" ]] || { echo "bench_join: $BIN not built (cmake --build $BUILD --target dfworker)" >&2; exit 2; }
VENV=${DFW_BENCH_VENV:-$HOME/.cache/dfworker/bench-venv}
if ! "$VENV/bin/python" -c "import duckdb" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet duckdb
fi
WORK=$(mktemp -d /tmp/dfw-bench-join-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
# Users 0 .. USERS-1 (every 10th has no orders); orders name users 0 .. USERS*1.05 (5% name none).
awk -v n="$USERS" 'BEGIN { for (i = 0; i < n; i++) printf "{\"uid\":%d,\"name\":\"user-%d\",\"tier\":%d}\n", i, i, i % 3 }' > users.jsonl
awk -v n="$ORDERS" -v u="$USERS" 'BEGIN {
  span = int(u * 1.05); for (i = 0; i < n; i++) { k = (i * 7919) % span; if (k < u && k % 10 == 9) k = u + (k % (span - u + 1)); printf "{\"oid\":%d,\"uid\":%d,\"amount\":%d}\n", i, k, i % 997 } }' > orders.jsonl
flags=$(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_bf16|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "input: $ORDERS orders + $USERS users, $(( ($(stat -c %s orders.jsonl) + $(stat -c %s users.jsonl)) / 1048576 )) MiB; $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags $flags); duckdb $("$VENV/bin/python" -c 'import duckdb; print(duckdb.__version__)')"
cat > p.yaml <<'YAML'
pipeline:
  transforms:
    - {type: ReadFromJson, name: Users, config: {path: users.jsonl}}
    - {type: ReadFromJson, name: Orders, config: {path: orders.jsonl}}
    - type: Join
      input: {u: Users, o: Orders}
      config:
        type: outer
        equalities: [{u: uid, o: uid}]
        fields: {u: {user: uid, name: name}, o: [oid, amount]}
    - type: WriteToJson
      input: Join
      config: {path: out/dfw/joined, file_name_suffix: .jsonl}
YAML
cat > duck.py <<'PY'
import duckdb, os
con = duckdb.connect()
con.execute(f"SET threads TO {os.cpu_count()}")
con.execute("CREATE VIEW u AS SELECT * FROM read_json('users.jsonl', format='newline_delimited', "
            "columns={'uid': 'BIGINT', 'name': 'VARCHAR', 'tier': 'BIGINT'})")
con.execute("CREATE VIEW o AS SELECT * FROM read_json('orders.jsonl', format='newline_delimited', "
            "columns={'oid': 'BIGINT', 'uid': 'BIGINT', 'amount': 'BIGINT'})")
con.execute("COPY (SELECT u.uid AS user, u.name AS name, o.oid AS oid, o.amount AS amount "
            "FROM u FULL OUTER JOIN o ON u.uid = o.uid) TO 'out/duck.csv' (HEADER)")
PY
now() { date +%s.%N; }
declare -A best=([dfw]=999999 [duck]=999999 [base]=999999)
declare -A times=()
median() { printf '%s\n' $1 | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
engines=(dfw duck)
BASELINE=${DFW_BENCH_BASELINE:-}
[[ -z "$BASELINE" ]] || { [[ -x "$BASELINE" ]] || { echo "bench_join: DFW_BENCH_BASELINE=$BASELINE is not executable" >&2; exit 2; }; engines+=(base); }
n=${#engines[@]}
for r in $(seq 1 "$ROUNDS"); do
  for k in $(seq 0 $((n - 1))); do
    who=${engines[$(( (k + r - 1) % n ))]}
    rm -rf out jd && mkdir -p out
    t0=$(now)
    case $who in
      dfw) "$BIN" run p.yaml --job_dir jd > dfw.log 2>&1 || { cat dfw.log >&2; exit 1; } ;;
      base) "$BASELINE" run p.yaml --job_dir jd > base.log 2>&1 || { cat base.log >&2; exit 1; } ;;
      duck) "$VENV/bin/python" duck.py ;;
    esac
    t=$(echo "$(now) - $t0" | bc -l)
    printf "round %d %-8s %7.2f s\n" "$r" "$who" "$t"
    best[$who]=$(echo "if ($t < ${best[$who]}) $t else ${best[$who]}" | bc -l)
    times[$who]+=" $t"
    case $who in
      dfw) rm -rf dfw-out; cp -r out/dfw dfw-out ;;
      base) rm -rf base-out; cp -r out/dfw base-out ;;
      duck) cp out/duck.csv duck.csv ;;
    esac
  done
done
best_dfw=${best[dfw]}; best_duck=${best[duck]}
python3 - <<'PY'
import collections, csv, glob, json
def norm(v):
    return None if v in (None, "") else str(v)
dfw = collections.Counter()
for f in glob.glob("dfw-out/*"):
    for line in open(f):
        r = json.loads(line)
        assert list(r) == ["user", "name", "oid", "amount"], f"dfworker row fields {list(r)}"
        dfw[tuple(norm(r[k]) for k in ("user", "name", "oid", "amount"))] += 1
duck = collections.Counter(tuple(norm(r[k]) for k in ("user", "name", "oid", "amount")) for r in csv.DictReader(open("duck.csv")))
def rows(paths):
    c = collections.Counter()
    for f in paths:
        for line in open(f):
            r = json.loads(line)
            c[tuple(norm(r[k]) for k in ("user", "name", "oid", "amount"))] += 1
    return c
if glob.glob("base-out/*") and rows(glob.glob("base-out/*")) != dfw:
    raise SystemExit("outputs differ between this build and the baseline dfworker")
if dfw != duck:
    only_dfw, only_duck = dfw - duck, duck - dfw
    raise SystemExit(f"outputs differ: {sum(only_dfw.values())} rows only in dfworker (e.g. {list(only_dfw)[:3]}), "
                     f"{sum(only_duck.values())} only in DuckDB (e.g. {list(only_duck)[:3]})")
unmatched_users = sum(n for k, n in dfw.items() if k[2] is None)
unmatched_orders = sum(n for k, n in dfw.items() if k[0] is None)
print(f"outputs agree: {sum(dfw.values())} rows ({unmatched_users} users without orders, {unmatched_orders} orders without a user)")
PY
rows=$((ORDERS + USERS))
dfw_rps=$(echo "$rows / $best_dfw" | bc -l); duck_rps=$(echo "$rows / $best_duck" | bc -l)
printf "best: dfworker %.2f s (%.0f input records/s), DuckDB %.2f s (%.0f input records/s); dfworker/DuckDB = %.2f\n" \
  "$best_dfw" "$dfw_rps" "$best_duck" "$duck_rps" "$(echo "$dfw_rps / $duck_rps" | bc -l)"
if [[ -n "$BASELINE" ]]; then
  printf "baseline dfworker %.2f s: this build's speed / the baseline's = %.2f\n" "${best[base]}" "$(echo "${best[base]} / $best_dfw" | bc -l)"
fi
m_dfw=$(median "${times[dfw]}"); m_duck=$(median "${times[duck]}")
printf "median of %d rounds: dfworker %.2f s, DuckDB %.2f s; dfworker/DuckDB = %.2f\n" "$ROUNDS" "$m_dfw" "$m_duck" "$(echo "$m_duck / $m_dfw" | bc -l)"
if [[ -n "$BASELINE" ]]; then
  m_base=$(median "${times[base]}")
  printf "median baseline dfworker %.2f s: this build's speed / the baseline's = %.2f\n" "$m_base" "$(echo "$m_base / $m_dfw" | bc -l)"
fi
