"""dfworker test vs Beam's yaml_testing on the same pipeline files (see beam-tests-compare.sh).

Beam's side calls apache_beam.yaml.yaml_testing.run_test once per test (what `main.py --test`
does through unittest), so each test gets its own verdict and time; --fix_tests is compared by
running both sides' --fix_tests on copies and reading back each expectation's elements.
"""
import argparse
import copy
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml
from apache_beam.yaml import yaml_testing
from apache_beam.yaml import yaml_transform


def beam_verdicts(path):
  """[(name, line, verdict, seconds, detail)] from Beam's run_test per test."""
  with open(path) as f:
    text = f.read()
  spec = yaml.load(text, Loader=yaml_transform.SafeLineLoader)
  out = []
  for test in spec.get('tests', []):
    name = test.get('name', 'unknown') if isinstance(test, dict) else 'unknown'
    line = yaml_transform.SafeLineLoader.get_line(test) if isinstance(test, dict) else 0
    started = time.perf_counter()
    try:
      yaml_testing.run_test(copy.deepcopy(spec), test)
      verdict, detail = 'pass', ''
    except AssertionError as e:  # equal_to's mismatch ("Failed assert: ...")
      verdict, detail = 'fail', str(e).splitlines()[0][:160]
    except Exception as e:  # an invalid spec, a non-mocked source, a failed run
      msg = str(e)
      verdict = 'fail' if 'Failed assert' in msg else 'invalid'
      detail = msg.splitlines()[0][:160] if msg else type(e).__name__
    out.append((name, line, verdict, time.perf_counter() - started, detail))
  return out


LINE = re.compile(r'^(PASS|FAIL|INVALID)\s+(.*) \(line (\d+)\)(?:\s+([0-9.]+) s)?$')


def dfworker_verdicts(dfw, path):
  run = subprocess.run([dfw, 'test', path], capture_output=True, text=True)
  out = []
  for line in run.stdout.splitlines():
    m = LINE.match(line)
    if m:
      verdict = {'PASS': 'pass', 'FAIL': 'fail', 'INVALID': 'invalid'}[m.group(1)]
      out.append((m.group(2), int(m.group(3)), verdict, float(m.group(4) or 0), ''))
  if not out:
    out.append(('(whole file)', 0, 'invalid', 0.0, (run.stdout + run.stderr).strip().splitlines()[-1:]))
  return out, run.returncode


def expectations(path):
  with open(path) as f:
    spec = yaml.safe_load(f) or {}
  got = {}
  for k, test in enumerate(spec.get('tests') or []):
    if not isinstance(test, dict):
      continue
    for kind in ('expected_outputs', 'expected_inputs'):
      for e in test.get(kind) or []:
        if isinstance(e, dict):
          got[(k, kind, e.get('name'))] = e.get('elements')
  return got


def canon(rows):
  """Rows as Beam's fix sorts them, with Python's == made textual (1 == 1.0)."""
  def norm(v):
    if isinstance(v, bool):
      return int(v)
    if isinstance(v, float) and v.is_integer():
      return int(v)
    if isinstance(v, dict):
      return {k: norm(x) for k, x in sorted(v.items())}
    if isinstance(v, list):
      return [norm(x) for x in v]
    return v
  return [json.dumps(norm(r), sort_keys=True) for r in (rows or [])]


def compare_fixes(dfw, path, work):
  base = os.path.basename(path)
  d_copy = os.path.join(work, 'dfw-' + base)
  b_copy = os.path.join(work, 'beam-' + base)
  # Beam fixes a file in place only when its text is what it read: leading comment lines (which its
  # Jinja step strips) make it refuse ("templated pipelines"), so both copies go without them.
  with open(path) as f:
    lines = f.read().splitlines(keepends=True)
  while lines and lines[0].lstrip().startswith('#'):
    lines.pop(0)
  for copy_path in (d_copy, b_copy):
    with open(copy_path, 'w') as f:
      f.write(''.join(lines))
  subprocess.run([dfw, 'test', d_copy, '--fix_tests'], capture_output=True, text=True)
  subprocess.run([sys.executable, '-m', 'apache_beam.yaml.main', '--yaml_pipeline_file=' + b_copy, '--test', '--fix_tests'],
                 capture_output=True, text=True, cwd=os.getcwd())
  before, d_after, b_after = expectations(path), expectations(d_copy), expectations(b_copy)
  changed = {k for k in before if d_after.get(k) != before[k] or b_after.get(k) != before[k]}
  diffs = []
  for k in sorted(changed, key=str):
    if sorted(canon(d_after.get(k))) != sorted(canon(b_after.get(k))):
      diffs.append((k, d_after.get(k), b_after.get(k)))
  return len(changed), diffs


def main():
  logging.getLogger().setLevel(logging.CRITICAL)  # Beam logs each failed assert with its traceback
  logging.getLogger('apache_beam').setLevel(logging.CRITICAL)
  ap = argparse.ArgumentParser()
  ap.add_argument('--dfworker', required=True)
  ap.add_argument('files', nargs='+')
  args = ap.parse_args()
  work = tempfile.mkdtemp(prefix='beam-tests-compare.')
  agree = total = 0
  d_time = b_time = 0.0
  fix_total = fix_diff = 0
  for path in args.files:
    beam = beam_verdicts(path)
    dfw, rc = dfworker_verdicts(args.dfworker, path)
    print(f'{path} (dfworker exit {rc})')
    by_line = {line: (v, s, det) for (_, line, v, s, det) in dfw}
    for name, line, verdict, seconds, detail in beam:
      d = by_line.get(line, ('missing', 0.0, ''))
      same = d[0] == verdict
      total += 1
      agree += same
      d_time += d[1]
      b_time += seconds
      print(f'  {"same" if same else "DIFF"}  {name} (line {line}): dfworker {d[0]} {d[1]:.3f} s, '
            f'Beam {verdict} {seconds:.3f} s' + ('' if same else f'\n        Beam: {detail}'))
    if any(v == 'fail' for (_, _, v, _, _) in beam):
      n, diffs = compare_fixes(args.dfworker, path, work)
      fix_total += n
      fix_diff += len(diffs)
      print(f'  --fix_tests: {n} expectation(s) rewritten, {len(diffs)} differ')
      for k, d_rows, b_rows in diffs:
        print(f'    {k}: dfworker {d_rows} / Beam {b_rows}')
  print(f'verdicts: {agree} of {total} the same; fixed expectations: {fix_total - fix_diff} of {fix_total} the same; '
        f'test time dfworker {d_time:.2f} s, Beam {b_time:.2f} s')
  shutil.rmtree(work, ignore_errors=True)
  return 0 if agree == total and fix_diff == 0 else 1


if __name__ == '__main__':
  sys.exit(main())
