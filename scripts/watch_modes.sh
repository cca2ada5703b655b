#!/usr/bin/env bash
# Runs `dfworker run` under umask 000 on N records (default 600,000) while a watcher lists the job
# dir and the output folder every 50 ms, and reports every entry it ever saw that another user
# could write (mode & 0022) — there must be none — and the output's modes at the end.
#   scripts/watch_modes.sh [BUILD_DIR=build] [RECORDS=600000] [PROCESSES=4]
set -euo pipefail
BUILD=${1:-build}
N=${2:-600000}
PROCS=${3:-4}
BIN="$(cd "$BUILD" 2>/dev/null && pwd)/src/cli/dfworker"
[[ -x "$BIN" ]] || { echo "watch_modes: $BIN not built" >&2; exit 2; }
WORK=$(mktemp -d /tmp/dfw-modes-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
mkdir in
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "{\"id\": %d, \"x\": %d}\n", i, i % 97 }' > in/rows.jsonl
cat > p.yaml <<'YAML'
pipeline:
  type: chain
  source: {type: ReadFromJson, config: {path: in/rows.jsonl}}
  transforms:
    - type: MapToFields
      config: {language: python, fields: {id: id, y: "x * 2 + id"}}
  sink: {type: WriteToJson, config: {path: out/rows, file_name_suffix: .jsonl}}
YAML
(umask 000 && exec "$BIN" run p.yaml --machine_type=n1-standard-$PROCS --job_dir "$WORK/job") > run.log 2>&1 &
run=$!
samples=0
while kill -0 "$run" 2>/dev/null; do
  find "$WORK/job" "$WORK/out" ! -type l -perm /022 2>/dev/null >> open.txt || true
  samples=$((samples + 1))
  sleep 0.05
done
wait "$run" || { echo "watch_modes: the run failed" >&2; cat run.log >&2; exit 1; }
lines=$(cat out/rows-*.jsonl | wc -l)
open=$(sort -u open.txt | wc -l)
echo "watch_modes: $samples samples of the job dir during the run, $lines rows out of $N; entries open to others: $open"
sort -u open.txt | head -5
stat -c '%a %n' out out/rows-00000-of-* | head -2
(( open == 0 && lines == N ))
