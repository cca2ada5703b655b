#!/usr/bin/env bash
# dfworker vs Apache Beam's local runner on the same input, the Beam side being what
# `dfworker export --to beam` writes: records compared one by one, wall times and records/s.
#
#   bash scripts/beam-compare.sh            # all: json (1M records), mlp, embed (MLTransform), embed_native
#   bash scripts/beam-compare.sh json mlp   # some of them
#
# Not part of CI: it installs apache-beam[yaml] (and sentence-transformers for the embedding case)
# from PyPI into its own venv, $BEAM_VENV (default ~/.cache/dfworker/beam-venv). Env knobs:
#   DFWORKER=build/src/cli/dfworker  N_JSON=1000000  MLP_REPEAT=20  EMBED_REPEAT=60  WORK=<tmp dir>
#   BEAM_RUNNER=DirectRunner (Prism needs a binary download that this machine cannot make)
# Beam runs in one process (DirectRunner's default); dfworker runs its plan (one SDK process per
# core here). Each case runs once per side; times include each side's start-up.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VENV="${BEAM_VENV:-$HOME/.cache/dfworker/beam-venv}"
DFW="${DFWORKER:-$ROOT/build/src/cli/dfworker}"
N_JSON="${N_JSON:-1000000}"
MLP_REPEAT="${MLP_REPEAT:-20}"
EMBED_REPEAT="${EMBED_REPEAT:-60}"
RUNNER="${BEAM_RUNNER:-DirectRunner}"
WORK="${WORK:-$(mktemp -d /tmp/beam-compare.XXXXXX)}"
CASES=("$@")
[ ${#CASES[@]} -eq 0 ] && CASES=(json mlp embed embed_native)
HELP="$ROOT/scripts/beam_compare.py"

[ -x "$DFW" ] || { echo "beam-compare: $DFW not built (ninja -C build dfworker)" >&2; exit 2; }
if [ ! -x "$VENV/bin/python" ]; then python3 -m venv "$VENV"; fi
PY="$VENV/bin/python"
"$PY" -c 'import apache_beam.yaml' 2>/dev/null || "$VENV/bin/pip" install -q 'apache-beam[yaml]'
"$VENV/bin/pip" install -q --no-deps "$ROOT/python"   # the companion package, as Dataflow would get it
HAVE_ST=1
if [[ " ${CASES[*]} " == *" embed"* ]] && ! "$PY" -c 'import sentence_transformers' 2>/dev/null; then
  # torch comes with it (PyPI's Linux wheel with its CUDA libraries: several GB).
  "$VENV/bin/pip" install -q sentence-transformers || HAVE_ST=0
fi
echo "beam-compare: apache-beam $("$PY" -c 'import apache_beam; print(apache_beam.__version__)'), runner $RUNNER; $("$DFW" --version); work dir $WORK"

now() { date +%s.%N; }
FAILED=0
SUMMARY=()

# run_case NAME KIND PIPELINE RECORDS DFW_OUT_GLOB BEAM_OUT_GLOB
run_case() {
  local name=$1 kind=$2 pipe=$3 n=$4 dfw_glob=$5 beam_glob=$6 dir="$WORK/$1"
  echo "== $name: $n records ($pipe)"
  rm -rf "$dir/dfw-out" "$dir/beam" "$dir/job"
  local t0 t1 t2 t3
  t0=$(now)
  "$DFW" run "$pipe" --job_dir "$dir/job" > "$dir/dfworker.log" 2>&1 || { echo "  dfworker failed:"; tail -5 "$dir/dfworker.log"; FAILED=1; return; }
  t1=$(now)
  mkdir -p "$dir/dfw-out" && mv "$dir"/out/* "$dir/dfw-out/"
  "$DFW" export "$pipe" --to beam --out "$dir/beam" > "$dir/export.log" 2>&1 || { cat "$dir/export.log"; FAILED=1; return; }
  sed 's/^/  export /' "$dir/export.log"
  t2=$(now)
  (cd "$ROOT" && "$PY" -m apache_beam.yaml.main --yaml_pipeline_file="$dir/beam/pipeline.yaml" --runner="$RUNNER" \
       > "$dir/beam.log" 2>&1) || { echo "  Beam failed:"; grep -v '^INFO' "$dir/beam.log" | tail -5; FAILED=1; return; }
  t3=$(now)
  "$PY" "$HELP" compare "$kind" "$dir/dfw-out/$dfw_glob" "$dir/out/$beam_glob" || FAILED=1
  local line
  line=$(awk -v n="$n" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v name="$name" 'BEGIN {
    d = t1 - t0; b = t3 - t2; printf "%-12s dfworker %7.2f s %10.0f rec/s | Beam %7.2f s %10.0f rec/s | dfworker/Beam %6.1fx", name, d, n / d, b, n / b, b / d }')
  echo "  $line"
  SUMMARY+=("$line")
}

for c in "${CASES[@]}"; do
  d="$WORK/$c"
  mkdir -p "$d"
  case "$c" in
  json)
    [ -f "$d/in.jsonl" ] || "$PY" "$HELP" json-input "$d/in.jsonl" "$N_JSON"
    cat > "$d/pipeline.yaml" <<YAML
pipeline:
  type: chain
  source: {type: ReadFromJson, config: {path: $d/in.jsonl}}
  transforms:
    - type: MapToFields
      name: Features
      config:
        language: python
        append: true
        fields:
          total: "price * qty"
          note: "raw_note.strip().lower()"
    - type: Filter
      config: {keep: "total > 0"}
  sink: {type: WriteToJson, config: {path: $d/out/clean, file_name_suffix: .jsonl}}
YAML
    run_case json json "$d/pipeline.yaml" "$N_JSON" 'clean-*' 'clean-*' ;;
  mlp)
    "$PY" "$HELP" repeat pipelines/data/breast_cancer_demo.jsonl "$d/in.jsonl" "$MLP_REPEAT"
    sed -e "s|pipelines/data/breast_cancer_demo.jsonl|$d/in.jsonl|" -e "s|out/default/|$d/out/|" pipelines/default.yaml > "$d/pipeline.yaml"
    run_case mlp mlp "$d/pipeline.yaml" "$(wc -l < "$d/in.jsonl")" 'predictions-*' 'predictions-*' ;;
  embed)
    if [ "$HAVE_ST" = 0 ]; then echo "== embed: skipped (sentence-transformers did not install from PyPI)"; FAILED=1; continue; fi
    "$PY" "$HELP" sentences testdata/tiny_bert/sentences.jsonl "$d/in.jsonl" "$EMBED_REPEAT"
    # Beam's own spelling (pipelines/beam_ml_embeddings.yaml) without the error output, which
    # Beam's MLTransform does not have: the same file runs on both.
    sed -e "s|testdata/tiny_bert/sentences.jsonl|$d/in.jsonl|" -e "s|out/beam_ml_embeddings/|$d/out/|" \
        -e '/error_handling/d' pipelines/beam_ml_embeddings.yaml | sed '/extra_transforms:/,$d' > "$d/pipeline.yaml"
    run_case embed embed "$d/pipeline.yaml" "$(wc -l < "$d/in.jsonl")" 'embeddings-*' 'embeddings-*' ;;
  embed_native)
    if [ "$HAVE_ST" = 0 ]; then echo "== embed_native: skipped (sentence-transformers did not install from PyPI)"; FAILED=1; continue; fi
    "$PY" "$HELP" sentences testdata/tiny_bert/sentences.jsonl "$d/in.jsonl" "$EMBED_REPEAT"
    # dfworker's own spelling (RunInference + SentenceEmbeddingHandler, normalize: true): exported
    # as DfworkerSentenceEmbedding, since sentence-transformers would not normalise this directory.
    sed -e "s|testdata/tiny_bert/sentences.jsonl|$d/in.jsonl|" -e "s|out/embed_sentences/|$d/out/|" \
        pipelines/embed_sentences.yaml > "$d/pipeline.yaml"
    run_case embed_native embed "$d/pipeline.yaml" "$(wc -l < "$d/in.jsonl")" 'embeddings-*' 'embeddings-*' ;;
  *) echo "beam-compare: unknown case '$c' (json, mlp, embed, embed_native)" >&2; exit 2 ;;
  esac
done
echo "== summary (one run each, this machine: $(nproc) cores)"
for s in "${SUMMARY[@]}"; do echo "  $s"; done
exit $FAILED
