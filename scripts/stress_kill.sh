#!/usr/bin/env bash
# Stress test of exactly-once under SIGKILL (issue 5), through the product: `dfworker run` on a
# ReadFromJson → MapToFields → WriteToJson pipeline over 80 input files (80 bundles, 2000 records).
# Each iteration SIGKILLs a random SDK process at a random moment (a random number of commits,
# possibly none); every 5th iteration SIGKILLs the launcher instead, checks that no process of the
# job is left and finishes the job with --resume; every 3rd iteration (not a 5th) kills the launcher
# during finalize instead, at a random one of its 80 renames or just before FINISHED (an exact kill
# point: DFW_TEST_KILL_AT, needs a -DDFW_TEST_HOOKS=ON build), and resumes. Every run must exit 0
# and the sharded output must hold every record exactly once (ids 0..1999, each with its computed field).
#   scripts/stress_kill.sh [BUILD_DIR=build] [ITERATIONS=20] [PROCESSES=4]
# DFW_TEST_BUNDLE_DELAY_MS (default 20) slows each bundle so kills land mid-run.
# DFW_STRESS_MODE=finalize makes every iteration a kill during finalize.
# DFW_STRESS_MODE=join: a two-stage Join job (rows x keys through the shuffle), a random SDK process
# or the launcher SIGKILLed after a random 0-0.6 s; the output must be every joined row once.
# DFW_STRESS_MODE=generation: a text-generation job (the tiny Llama of testdata/hf/decoders, seeded
# sampling, 64 prompts in 16 files), killed the same way; the output must equal an unkilled run's.
# DFW_STRESS_MODE=rebalance: one input file of 20,000 records that is ONE bundle (test hook
# DFW_TEST_BUNDLE_BYTES) read slowly (DFW_TEST_SOURCE_BATCH_DELAY_MS, default 60), so the work
# reaches the other processes only by dynamic work rebalancing (splits of the running bundle).
# Each iteration SIGKILLs, after a random number of manifest lines (splits and commits), a random
# SDK process (3 in 4) or the launcher (then --resume); the output must be every record once.
# DFW_STRESS_MODE=rename: each iteration SIGKILLs the launcher at its Nth rename system call, N
# drawn from 1 to the number a whole run makes (counted first, under strace), so the kill lands
# anywhere from the first rename (job.json) through every commit to the last finalize move; then
# --resume must finish the job with every record exactly once. Needs strace (no test hooks).
set -euo pipefail
BUILD=${1:-build}
ITER=${2:-20}
PROCS=${3:-4}
BIN="$(cd "$BUILD" 2>/dev/null && pwd)/src/cli/dfworker"
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ -x "$BIN" ]] || { echo "stress_kill: $BIN not built (cmake --build $BUILD --target dfworker)" >&2; exit 2; }
export DFW_TEST_BUNDLE_DELAY_MS=${DFW_TEST_BUNDLE_DELAY_MS:-20}
FILES=80
PER_FILE=25
WORK=$(mktemp -d /tmp/dfw-stress-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/in"
for f in $(seq 0 $((FILES - 1))); do
  awk -v f="$f" -v n="$PER_FILE" 'BEGIN { for (i = 0; i < n; i++) printf "{\"id\": %d, \"x\": %d}\n", f * n + i, i }' \
    > "$WORK/in/part-$((1000 + f)).jsonl"
done
cat > "$WORK/p.yaml" <<'EOF'
pipeline:
  type: chain
  source: {type: ReadFromJson, config: {path: in/*.jsonl}}
  transforms:
    - type: MapToFields
      config: {language: python, fields: {id: id, y: "x * 2 + id"}}
  sink: {type: WriteToJson, config: {path: out/rows, file_name_suffix: .jsonl}}
EOF
# The expected output set: one line per record, sorted.
for f in $(seq 0 $((FILES - 1))); do
  awk -v f="$f" -v n="$PER_FILE" 'BEGIN { for (i = 0; i < n; i++) printf "{\"id\":%d,\"y\":%d}\n", f * n + i, 2 * i + f * n + i }'
done | sort > "$WORK/expected.txt"
FLAGS=(--number_of_worker_harness_threads=1 "--machine_type=n1-standard-$PROCS")
commits() { [[ -f "$1/manifest.jsonl" ]] && wc -l < "$1/manifest.jsonl" || echo 0; }
cd "$WORK"
fail=0
killed=0
if [[ ${DFW_STRESS_MODE:-} == rebalance ]]; then
  export DFW_TEST_BUNDLE_DELAY_MS=0 DFW_TEST_BUNDLE_BYTES=1000000000
  export DFW_TEST_SOURCE_BATCH_DELAY_MS=${DFW_TEST_SOURCE_BATCH_DELAY_MS:-60}
  rm -f in/*.jsonl
  awk 'BEGIN { for (i = 0; i < 20000; i++) printf "{\"id\": %d, \"x\": %d}\n", i, i % 25 }' > in/one.jsonl
  awk 'BEGIN { for (i = 0; i < 20000; i++) printf "{\"id\":%d,\"y\":%d}\n", i, 2 * (i % 25) + i }' | sort > expected.txt
  lines() { [[ -f "$1/manifest.jsonl" ]] && wc -l < "$1/manifest.jsonl" || echo 0; }
  splits_total=0
  for i in $(seq 1 "$ITER"); do
    jd="$WORK/job-$i"; log="$WORK/log-$i.txt"
    rm -rf out
    "$BIN" run p.yaml "${FLAGS[@]}" --job_dir "$jd" > "$log" 2>&1 &
    launcher=$!
    target=$((RANDOM % 12))
    while (( $(lines "$jd") < target )) && kill -0 "$launcher" 2>/dev/null; do sleep 0.002; done
    if (( RANDOM % 4 == 0 )); then
      mode=launcher
      kill -9 "$launcher" 2>/dev/null || true
      { wait "$launcher"; } 2>/dev/null || true
      for _ in $(seq 1 500); do pgrep -f -- "$jd" > /dev/null || break; sleep 0.01; done
      if pgrep -f -- "$jd" > /dev/null; then echo "iteration $i: processes left after launcher SIGKILL" >&2; fail=1; fi
      if [[ -e $jd/job.json ]]; then
        "$BIN" run p.yaml "${FLAGS[@]}" --resume "$jd" >> "$log" 2>&1 || { echo "iteration $i: resume failed" >&2; fail=1; }
      else  # killed before the job existed: nothing to resume, run it again
        rm -rf "$jd"
        "$BIN" run p.yaml "${FLAGS[@]}" --job_dir "$jd" >> "$log" 2>&1 || { echo "iteration $i: rerun failed" >&2; fail=1; }
      fi
    else
      mode=sdk
      victim=$(pgrep -P "$launcher" | shuf -n 1 || true)
      [[ -n "$victim" ]] && kill -9 "$victim" 2>/dev/null || true
      wait "$launcher" || { echo "iteration $i: launcher exited $?" >&2; fail=1; }
    fi
    landed=no
    if [[ $mode == launcher ]] && (( $(grep -c "already committed" "$log") == 2 )); then landed=yes; fi
    if [[ $mode == sdk ]] && grep -q "killed by signal 9" "$log"; then landed=yes; fi
    [[ $landed == yes ]] && killed=$((killed + 1))
    n_splits=$(grep -c '"split":' "$jd/manifest.jsonl" || true)
    splits_total=$((splits_total + n_splits))
    if cat out/rows-*.jsonl 2>/dev/null | sort | cmp -s - expected.txt; then
      echo "iteration $i ($mode kill after >= $target manifest lines, landed: $landed, $n_splits splits): ok"
    else
      echo "iteration $i ($mode kill): WRONG OUTPUT; log:" >&2; cat "$log" >&2; fail=1
      cat out/rows-*.jsonl 2>/dev/null | sort | uniq -d | head -3 >&2 || true
    fi
    rm -rf "$jd"
  done
  if (( fail == 0 )); then
    echo "stress_kill (rebalance): $ITER iterations, $killed kills landed mid-run, $splits_total splits, every record exactly once"
    exit 0
  fi
  echo "stress_kill (rebalance): FAILED" >&2
  exit 1
fi
# Runs p.yaml ITER times, each SIGKILLing after a random 0-0.6 s a random SDK process (4 in 5) or the
# launcher (then --resume); every run's sorted output must equal expected.txt. Sets fail and killed.
random_kill_loop() {
  for i in $(seq 1 "$ITER"); do
    jd="$WORK/job-$i"; log="$WORK/log-$i.txt"
    rm -rf out
    "$BIN" run p.yaml "${FLAGS[@]}" --job_dir "$jd" > "$log" 2>&1 &
    launcher=$!
    sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", (r % 60) / 100 }')"
    if (( RANDOM % 5 == 0 )); then
      mode=launcher
      kill -9 "$launcher" 2>/dev/null || true
      { wait "$launcher"; } 2>/dev/null || true
      for _ in $(seq 1 500); do pgrep -f -- "$jd" > /dev/null || break; sleep 0.01; done
      if pgrep -f -- "$jd" > /dev/null; then echo "iteration $i: processes left after launcher SIGKILL" >&2; fail=1; fi
      if [[ -e $jd/stages.json || -e $jd/job.json ]]; then
        [[ -e $jd/FINISHED || -e $jd/stage-1/FINISHED ]] || echo "killed before the end" >> "$log"
        "$BIN" run p.yaml "${FLAGS[@]}" --resume "$jd" >> "$log" 2>&1 || { echo "iteration $i: resume failed" >&2; fail=1; }
      else  # killed before the job existed: run it again
        rm -rf "$jd"
        "$BIN" run p.yaml "${FLAGS[@]}" --job_dir "$jd" >> "$log" 2>&1 || { echo "iteration $i: rerun failed" >&2; fail=1; }
      fi
    else
      mode=sdk
      victim=$(pgrep -P "$launcher" | shuf -n 1 || true)
      [[ -n "$victim" ]] && kill -9 "$victim" 2>/dev/null || true
      wait "$launcher" || { echo "iteration $i: launcher exited $?" >&2; fail=1; }
    fi
    landed=no
    if [[ $mode == launcher ]] && grep -q "killed before the end" "$log"; then landed=yes; fi
    if [[ $mode == sdk ]] && grep -q "killed by signal 9" "$log"; then landed=yes; fi
    [[ $landed == yes ]] && killed=$((killed + 1))
    if cat out/rows-*.jsonl 2>/dev/null | sort | cmp -s - expected.txt; then
      echo "iteration $i ($mode kill, landed mid-run: $landed): ok"
    else
      echo "iteration $i ($mode kill): WRONG OUTPUT; log:" >&2; cat "$log" >&2; fail=1
      cat out/rows-*.jsonl 2>/dev/null | sort | uniq -d | head -3 >&2 || true
    fi
    rm -rf "$jd"
  done
}
if [[ ${DFW_STRESS_MODE:-} == join ]]; then
  # A two-stage job: 40 files of rows joined (Join, inner, through the shuffle) with 25 keys. Each
  # iteration SIGKILLs, after a random 0-0.6 s, a random SDK process (4 in 5) or the launcher (then
  # --resume); the output must be every joined row exactly once.
  rm -f in/*.jsonl
  for f in $(seq 0 39); do
    awk -v f="$f" 'BEGIN { for (i = 0; i < 25; i++) printf "{\"id\": %d, \"x\": %d}\n", f * 25 + i, i }' > "in/part-$((1000 + f)).jsonl"
  done
  awk 'BEGIN { for (k = 0; k < 25; k++) printf "{\"k\": %d, \"name\": \"n%d\"}\n", k, k }' > keys.jsonl
  awk 'BEGIN { for (id = 0; id < 1000; id++) printf "{\"id\":%d,\"x\":%d,\"name\":\"n%d\"}\n", id, id % 25, id % 25 }' | sort > expected.txt
  cat > p.yaml <<'EOF2'
pipeline:
  transforms:
    - {type: ReadFromJson, name: Rows, config: {path: in/*.jsonl}}
    - {type: ReadFromJson, name: Keys, config: {path: keys.jsonl}}
    - type: Join
      input: {r: Rows, k: Keys}
      config: {type: inner, equalities: [{r: x, k: k}], fields: {r: [id, x], k: [name]}}
    - {type: WriteToJson, input: Join, config: {path: out/rows, file_name_suffix: .jsonl}}
EOF2
  random_kill_loop
  if (( fail == 0 )); then
    echo "stress_kill (join): $ITER iterations, $killed kills landed mid-run, every joined row exactly once"
    exit 0
  fi
  echo "stress_kill (join): FAILED" >&2
  exit 1
fi
if [[ ${DFW_STRESS_MODE:-} == generation ]]; then
  # Seeded sampling gives each prompt the same text on any process, batch or attempt, so a killed and
  # resumed job must write exactly what an unkilled one wrote.
  rm -f in/*.jsonl
  for f in $(seq 0 15); do
    awk -v f="$f" 'BEGIN { for (i = 0; i < 4; i++) printf "{\"id\": %d, \"prompt\": \"story %d begins\"}\n", f * 4 + i, f * 4 + i }' \
      > "in/part-$((1000 + f)).jsonl"
  done
  cat > p.yaml <<EOF2
options:
  yaml_experimental_features: [ML]
pipeline:
  type: chain
  source: {type: ReadFromJson, config: {path: in/*.jsonl}}
  transforms:
    - type: RunInference
      name: Generate
      config:
        inference_args: {max_new_tokens: 24, do_sample: true, temperature: 0.9}
        model_handler:
          type: HuggingFacePipelineModelHandler
          config:
            task: text-generation
            model: $SRC/testdata/hf/decoders/llama
            device: CPU
            load_pipeline_args: {seed: 7}
            preprocess: {callable: 'lambda row: row.prompt'}
  sink: {type: WriteToJson, config: {path: out/rows, file_name_suffix: .jsonl}}
EOF2
  rm -rf out
  "$BIN" run p.yaml "${FLAGS[@]}" --job_dir "$WORK/reference" > reference.log 2>&1 || { cat reference.log >&2; exit 1; }
  cat out/rows-*.jsonl | sort > expected.txt
  (( $(wc -l < expected.txt) == 64 )) || { echo "stress_kill (generation): the unkilled run wrote $(wc -l < expected.txt) rows, not 64" >&2; exit 1; }
  random_kill_loop
  if (( fail == 0 )); then
    echo "stress_kill (generation): $ITER iterations, $killed kills landed mid-run, every output equal to the unkilled run's"
    exit 0
  fi
  echo "stress_kill (generation): FAILED" >&2
  exit 1
fi
if [[ ${DFW_STRESS_MODE:-} == rename ]]; then
  command -v strace > /dev/null || { echo "stress_kill: DFW_STRESS_MODE=rename needs strace" >&2; exit 2; }
  renames='rename,renameat,renameat2'
  # How many renames the launcher itself makes in a whole run (not its children: no -f).
  strace -qq -o "$WORK/count.txt" -e trace=$renames "$BIN" run p.yaml "${FLAGS[@]}" --job_dir "$WORK/count-job" \
    > "$WORK/count.log" 2>&1 || { echo "stress_kill: the counting run failed" >&2; cat "$WORK/count.log" >&2; exit 1; }
  # strace counts each system call of an inject set on its own: N is drawn over all of them and
  # then named as the Kth call of its own kind, so every draw lands.
  declare -A per_call=()
  calls=()
  for c in rename renameat renameat2; do
    k=$(grep -c "^$c(" "$WORK/count.txt" || true)
    (( k > 0 )) && { per_call[$c]=$k; calls+=("$c"); }
  done
  total=0
  for c in "${calls[@]}"; do total=$((total + per_call[$c])); done
  rm -rf "$WORK/count-job" out
  echo "stress_kill (rename): a whole run makes $total renames in the launcher ($(for c in "${calls[@]}"; do printf '%s %s ' "${per_call[$c]}" "$c"; done))"
  for i in $(seq 1 "$ITER"); do
    jd="$WORK/job-$i"; log="$WORK/log-$i.txt"
    rm -rf out
    n=$(( (RANDOM * 32768 + RANDOM) % total + 1 ))
    (( i == 1 )) && n=1  # the first rename (job.json) at least once
    call=; when=$n
    for c in "${calls[@]}"; do
      if (( when <= per_call[$c] )); then call=$c; break; fi
      when=$((when - per_call[$c]))
    done
    code=0
    strace -qq -o /dev/null -e trace=$renames -e inject=$call:signal=SIGKILL:when=$when \
      "$BIN" run p.yaml "${FLAGS[@]}" --job_dir "$jd" > "$log" 2>&1 || code=$?
    for _ in $(seq 1 500); do pgrep -f -- "$jd" > /dev/null || break; sleep 0.01; done
    if pgrep -f -- "$jd" > /dev/null; then echo "iteration $i: processes left after the kill" >&2; fail=1; fi
    [[ $code != 0 ]] && killed=$((killed + 1))
    "$BIN" run p.yaml "${FLAGS[@]}" --resume "$jd" >> "$log" 2>&1 || { echo "iteration $i: resume after rename $n failed" >&2; cat "$log" >&2; fail=1; }
    if cat out/rows-*-of-000$FILES.jsonl 2>/dev/null | sort | cmp -s - "$WORK/expected.txt" && [[ -e $jd/FINISHED ]]; then
      echo "iteration $i (launcher killed at $call #$when, rename $n of $total, exit $code): ok"
    else
      echo "iteration $i (kill at rename $n): WRONG OUTPUT; log:" >&2; cat "$log" >&2; fail=1
    fi
    rm -rf "$jd"
  done
  if (( fail == 0 )); then
    echo "stress_kill (rename): $ITER of $ITER exact ($killed runs killed at a rename), every record exactly once"
    exit 0
  fi
  echo "stress_kill (rename): FAILED" >&2
  exit 1
fi
for i in $(seq 1 "$ITER"); do
  jd="$WORK/job-$i"; log="$WORK/log-$i.txt"
  rm -rf out
  if [[ ${DFW_STRESS_MODE:-} == finalize ]] || (( i % 3 == 0 && i % 5 != 0 )); then
    mode=finalize
    point=finalize-move-$((RANDOM % FILES))
    (( RANDOM % 10 == 0 )) && point=before-finished
    code=0
    { DFW_TEST_KILL_AT=$point "$BIN" run p.yaml "${FLAGS[@]}" --job_dir "$jd" > "$log" 2>&1; } 2>/dev/null || code=$?
    landed=no
    [[ $code == 137 && ! -e $jd/FINISHED ]] && landed=yes && killed=$((killed + 1))
    [[ $landed == yes ]] || { echo "iteration $i: the kill at $point did not land (exit $code)" >&2; fail=1; }
    "$BIN" run p.yaml "${FLAGS[@]}" --resume "$jd" >> "$log" 2>&1 || { echo "iteration $i: resume failed" >&2; fail=1; }
    n=$(commits "$jd")
    if cat out/rows-*-of-000$FILES.jsonl 2>/dev/null | sort | cmp -s - "$WORK/expected.txt" && (( n == FILES )) && [[ -e $jd/FINISHED ]]; then
      echo "iteration $i (launcher killed during finalize at $point, landed: $landed): ok"
    else
      echo "iteration $i (finalize kill at $point): WRONG OUTPUT (manifest $n lines); log:" >&2; cat "$log" >&2; fail=1
    fi
    rm -rf "$jd"
    continue
  fi
  "$BIN" run p.yaml "${FLAGS[@]}" --job_dir "$jd" > "$log" 2>&1 &
  launcher=$!
  target=$((RANDOM % 30))
  while (( $(commits "$jd") < target )) && kill -0 "$launcher" 2>/dev/null; do sleep 0.005; done
  mode=sdk
  if (( i % 5 == 0 )); then
    mode=launcher
    kill -9 "$launcher" 2>/dev/null || true
    { wait "$launcher"; } 2>/dev/null || true
    for _ in $(seq 1 500); do pgrep -f -- "$jd" > /dev/null || break; sleep 0.01; done
    if pgrep -f -- "$jd" > /dev/null; then echo "iteration $i: processes left after launcher SIGKILL" >&2; fail=1; fi
    "$BIN" run p.yaml "${FLAGS[@]}" --resume "$jd" >> "$log" 2>&1 || { echo "iteration $i: resume failed" >&2; fail=1; }
  else
    victim=
    while [[ -z $victim ]] && kill -0 "$launcher" 2>/dev/null; do  # target 0: the SDK processes may not exist yet
      victim=$(pgrep -P "$launcher" | shuf -n 1 || true)
      [[ -n $victim ]] || sleep 0.002
    done
    [[ -n "$victim" ]] && kill -9 "$victim" 2>/dev/null || true
    wait "$launcher" || { echo "iteration $i: launcher exited $?" >&2; fail=1; }
  fi
  landed=no
  # The resumed launcher's header line is the second "N already committed" in the log.
  if [[ $mode == launcher ]] && (( $(grep -c "already committed" "$log") == 2 )); then landed=yes; fi
  if [[ $mode == sdk ]] && grep -q "killed by signal 9" "$log"; then landed=yes; fi
  [[ $landed == yes ]] && killed=$((killed + 1))
  n=$(commits "$jd")
  if cat out/rows-*-of-000$FILES.jsonl 2>/dev/null | sort | cmp -s - "$WORK/expected.txt" && (( n == FILES )); then
    echo "iteration $i ($mode kill after >= $target commits, landed mid-run: $landed): ok"
  else
    echo "iteration $i ($mode kill): WRONG OUTPUT (manifest $n lines); log:" >&2; cat "$log" >&2; fail=1
  fi
  rm -rf "$jd"
done
if (( fail == 0 )); then
  echo "stress_kill: $ITER iterations of dfworker run ($killed kills landed mid-run), every record exactly once"
else
  echo "stress_kill: FAILED" >&2
  exit 1
fi
