"""Helpers of scripts/beam-compare.sh: make inputs, compare dfworker's and Beam's outputs.

  beam_compare.py json-input PATH N          1M-record JSON Lines for the filter/map pipeline
  beam_compare.py repeat SRC DST TIMES       SRC's lines TIMES over with distinct ids (MLP input)
  beam_compare.py sentences SRC DST TIMES    the string-text rows of SRC, TIMES over (embedding input)
  beam_compare.py compare KIND DFW_GLOB BEAM_GLOB   record by record, keyed by id

Tolerances (compare): json 1e-9 relative + 1e-9 absolute (Beam writes floats through pandas'
to_json with 10 decimals, and its ReadFromJson parses them with pandas' own float parser, which can
miss the correctly rounded double by an ulp); mlp 1e-5 absolute (both compute in float32 from
inputs up to ~4,000 whose parses can differ by an ulp, through 3 layers and a softmax: 1.1e-6 seen); embed 1e-4 absolute (float32 BERT, different GEMM orders).
"""
import ast
import glob
import json
import math
import random
import sys

TOL = {"json": (1e-9, 1e-9), "mlp": (0.0, 1e-5), "embed": (0.0, 1e-4)}


def json_input(path, n):
  rng = random.Random(42)
  words = ["fast", "Slow", " blue ", "RED", "gift", "return", "express", "  bulk"]
  with open(path, "w") as f:
    for i in range(n):
      price = round(rng.uniform(-20, 100), 2)
      row = {"id": i, "price": price, "qty": rng.randint(0, 9),
             "raw_note": " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))}
      f.write(json.dumps(row) + "\n")


def repeat(src, dst, times):
  rows = [json.loads(line) for line in open(src) if line.strip()]
  with open(dst, "w") as f:
    for t in range(times):
      for r in rows:
        r = dict(r)
        r["id"] = f"{r.get('id')}-x{t}"
        f.write(json.dumps(r) + "\n")


def sentences(src, dst, times):
  rows = []
  for line in open(src):
    try:
      r = json.loads(line)
    except ValueError:
      continue
    if isinstance(r.get("text"), str):
      rows.append(r)
  with open(dst, "w") as f:
    for t in range(times):
      for r in rows:
        f.write(json.dumps({"id": f"{r['id']}-x{t}", "text": r["text"]}) + "\n")


def load(pattern):
  out = {}
  files = sorted(glob.glob(pattern))
  if not files:
    raise SystemExit(f"compare: no files match {pattern}")
  for path in files:
    for line in open(path):
      if line.strip():
        r = json.loads(line)
        out[str(r["id"])] = r
  return out


def close(a, b, rel, abs_):
  return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def same(a, b, rel, abs_, path, diffs):
  # Beam's ReadFromJson hands list columns on as the text of the list.
  if isinstance(a, list) and isinstance(b, str):
    try:
      b = ast.literal_eval(b)
    except (ValueError, SyntaxError):
      pass
  if isinstance(a, bool) or isinstance(b, bool):
    ok = a == b
  elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
    ok = close(float(a), float(b), rel, abs_)
    if ok and diffs is not None:
      diffs.append(abs(float(a) - float(b)))
  elif isinstance(a, list) and isinstance(b, list):
    if len(a) != len(b):
      return f"{path}: {len(a)} vs {len(b)} items"
    for i, (x, y) in enumerate(zip(a, b)):
      err = same(x, y, rel, abs_, f"{path}[{i}]", diffs)
      if err:
        return err
    return None
  elif isinstance(a, dict) and isinstance(b, dict):
    if set(a) != set(b):
      return f"{path}: keys {sorted(a)} vs {sorted(b)}"
    for k in a:
      err = same(a[k], b[k], rel, abs_, f"{path}.{k}", diffs)
      if err:
        return err
    return None
  else:
    ok = a == b
  return None if ok else f"{path}: dfworker {a!r} vs Beam {b!r}"


def compare(kind, dfw_glob, beam_glob):
  rel, abs_ = TOL[kind]
  d, b = load(dfw_glob), load(beam_glob)
  missing = sorted(set(d) - set(b))[:3]
  extra = sorted(set(b) - set(d))[:3]
  if missing or extra or len(d) != len(b):
    print(f"  MISMATCH: dfworker {len(d)} records, Beam {len(b)}; only in dfworker {missing}, only in Beam {extra}")
    return 1
  diffs = []
  for k in d:
    err = same(d[k], b[k], rel, abs_, f"id {k}", diffs)
    if err:
      print(f"  MISMATCH: {err}")
      return 1
  worst = max(diffs) if diffs else 0.0
  print(f"  outputs agree: {len(d)} records, every field equal (numbers within rel {rel:g} / abs {abs_:g}; "
        f"largest difference {worst:.3g})")
  return 0


if __name__ == "__main__":
  cmd = sys.argv[1]
  if cmd == "json-input":
    json_input(sys.argv[2], int(sys.argv[3]))
  elif cmd == "repeat":
    repeat(sys.argv[2], sys.argv[3], int(sys.argv[4]))
  elif cmd == "sentences":
    sentences(sys.argv[2], sys.argv[3], int(sys.argv[4]))
  elif cmd == "compare":
    sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4]))
  else:
    raise SystemExit(f"unknown command {cmd}")
