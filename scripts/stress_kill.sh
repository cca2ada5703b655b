#!/usr/bin/env bash
# Stress test of exactly-once under SIGKILL (issue 5): runs the fake job ITERATIONS times (>= 20),
# each time SIGKILLing a random SDK process after a random number of commits; every 5th iteration
# SIGKILLs the launcher instead, checks that no process is left and finishes with --resume.
# Every run must exit 0 and produce every input record exactly once, in order.
#   scripts/stress_kill.sh [BUILD_DIR=build] [ITERATIONS=20] [PROCESSES=4]
set -euo pipefail
BUILD=${1:-build}
ITER=${2:-20}
PROCS=${3:-4}
BIN="$BUILD/tests/integration/dfw_fake_job"
[[ -x "$BIN" ]] || { echo "stress_kill: $BIN not built (cmake --build $BUILD --target dfw_fake_job)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/dfw-stress-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
seq -f "record-%g" 0 799 > "$WORK/in.txt"
commits() { [[ -f "$1/manifest.jsonl" ]] && wc -l < "$1/manifest.jsonl" || echo 0; }
fail=0
killed=0
for i in $(seq 1 "$ITER"); do
  jd="$WORK/job-$i"; out="$WORK/out-$i.txt"; log="$WORK/log-$i.txt"
  DFW_TEST_RECORD_DELAY_US=2000 "$BIN" run --input "$WORK/in.txt" --output "$out" --processes "$PROCS" \
    --lines_per_bundle 10 --job_dir "$jd" > "$log" 2>&1 &
  launcher=$!
  target=$(( (RANDOM % 40) + 1 ))
  while (( $(commits "$jd") < target )) && kill -0 "$launcher" 2>/dev/null; do sleep 0.01; done
  mode=sdk
  if (( i % 5 == 0 )); then
    mode=launcher
    kill -9 "$launcher" 2>/dev/null || true
    wait "$launcher" || true
    for _ in $(seq 1 500); do pgrep -f -- "$jd" > /dev/null || break; sleep 0.01; done
    if pgrep -f -- "$jd" > /dev/null; then echo "iteration $i: processes left after launcher SIGKILL" >&2; fail=1; fi
    "$BIN" run --resume "$jd" --output "$out" --processes "$PROCS" >> "$log" 2>&1 || { echo "iteration $i: resume failed" >&2; fail=1; }
  else
    victim=$(pgrep -P "$launcher" | shuf -n 1 || true)
    [[ -n "$victim" ]] && kill -9 "$victim" 2>/dev/null || true
    wait "$launcher" || { echo "iteration $i: launcher exited $?" >&2; fail=1; }
  fi
  grep -q "killed by signal 9" "$log" && killed=$((killed + 1))
  [[ $mode == launcher ]] && killed=$((killed + 1))
  n=$(commits "$jd")
  if cmp -s "$WORK/in.txt" "$out" && (( n == 80 )); then
    echo "iteration $i ($mode kill after >= $target commits): ok"
  else
    echo "iteration $i ($mode kill): WRONG OUTPUT (manifest $n lines); log:" >&2; cat "$log" >&2; fail=1
  fi
done
(( fail == 0 )) && echo "stress_kill: $ITER iterations ($killed landed mid-run), every record exactly once" || { echo "stress_kill: FAILED" >&2; exit 1; }
