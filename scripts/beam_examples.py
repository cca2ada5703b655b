#!/usr/bin/env python3
"""Runs Beam's YAML example pipelines with dfworker and compares what LogForTesting printed with the
file's `# Expected:` block, the way Beam's examples_test.py judges them (multisets of rows).

Standard library only (no venv). Called by scripts/beam-examples.sh; see `--help`.

Per file: PASS, FAIL (rows differ: a diff; or only the field order differs, reported as such) or
REFUSED (dfworker exit 2, with its first error line). Exit status: 0 when every file passed.
"""
import argparse
import ast
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# `[dfworker sdk-3] info: {"a":1}`: LogForTesting's rows in the job dir's logs/sdk-N.log (a pipeline
# with a Combine runs as fused stages, each a job dir <job>/stage-K with its own logs/).
ROW_LINE = re.compile(r'^\[dfworker sdk-\d+\] info: (\{.*\})\s*$')
EXPECTED_HEADER = re.compile(r'^#+\s*Expected:\s*$')


def parse_expected_line(text):
    """One row of an Expected block as a tuple of (field, value) pairs in the order written.

    Two forms occur: `Row(produce='🥕', biggest=[3, 2])`, and a quoted dict string
    (`"{'a': 1, 'b': 'x'}"`, also a bare dict). Returns None for a line that is neither."""
    text = text.strip()
    if not text:
        return None
    try:
        node = ast.parse(text, mode='eval').body
    except SyntaxError:
        return None
    if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'Row' and not node.args:
        return tuple((kw.arg, ast.literal_eval(kw.value)) for kw in node.keywords)
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    if isinstance(value, str):
        return parse_expected_line(value)
    if isinstance(value, dict):
        return tuple(value.items())
    return None


def expected_rows(path):
    """The rows of the file's Expected block, or None when it has none."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if EXPECTED_HEADER.match(line):
            rows = []
            for body in lines[i + 1:]:
                if not body.startswith('#'):
                    break
                row = parse_expected_line(body.lstrip('#'))
                if row is None:
                    if body.lstrip('#').strip():
                        continue  # prose inside the block
                    if rows:
                        break
                    continue
                rows.append(row)
            return rows
    return None


def logged_rows(job_dir):
    rows = []
    logs = glob.glob(os.path.join(job_dir, 'logs', 'sdk-*.log')) + glob.glob(os.path.join(job_dir, 'stage-*', 'logs', 'sdk-*.log'))
    for log in sorted(logs):
        with open(log, encoding='utf-8', errors='replace') as f:
            for line in f:
                m = ROW_LINE.match(line.rstrip('\n'))
                if not m:
                    continue
                try:
                    pairs = json.loads(m.group(1), object_pairs_hook=lambda p: p)
                except ValueError:
                    continue
                rows.append(tuple((k, v) for k, v in pairs))
    return rows


def canonical(value):
    """A hashable form that keeps Python's types apart (1 is not 1.0, as in Beam's Row repr)."""
    if isinstance(value, (list, tuple)):
        return ('list', tuple(canonical(v) for v in value))
    if isinstance(value, dict):
        return ('dict', tuple((k, canonical(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def row_key(row, ordered=True):
    items = tuple((k, canonical(v)) for k, v in row)
    return items if ordered else tuple(sorted(items))


def show(row):
    return 'Row(' + ', '.join('%s=%r' % (k, v) for k, v in row) + ')'


def compare(expected, got):
    """(status, detail lines)."""
    want = collections.Counter(row_key(r) for r in expected)
    have = collections.Counter(row_key(r) for r in got)
    if want == have:
        return 'PASS', []
    by_key = {row_key(r): r for r in list(expected) + list(got)}
    unordered_want = collections.Counter(row_key(r, False) for r in expected)
    unordered_have = collections.Counter(row_key(r, False) for r in got)
    detail = []
    if unordered_want == unordered_have:
        detail.append('same rows, but the field order differs (Beam keeps the order of its Row fields):')
        detail.append('  expected fields: ' + ', '.join(k for k, _ in expected[0]) if expected else '  (no rows)')
        detail.append('  got fields:      ' + ', '.join(k for k, _ in got[0]) if got else '  (no rows)')
        return 'FAIL', detail
    for key, n in sorted((want - have).items(), key=lambda kv: show(by_key[kv[0]])):
        detail.extend(['  - ' + show(by_key[key])] * n)
    for key, n in sorted((have - want).items(), key=lambda kv: show(by_key[kv[0]])):
        detail.extend(['  + ' + show(by_key[key])] * n)
    detail.insert(0, 'rows differ (- expected, not printed; + printed, not expected): %d expected, %d printed'
                  % (len(expected), len(got)))
    return 'FAIL', detail


def first_error_line(text):
    for line in text.splitlines():
        if line.startswith('run stopped:') or 'error' in line.lower():
            return line.strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0].strip() if lines else '(no output)'


def run_one(dfworker, path, timeout):
    expected = expected_rows(path)
    if expected is None:
        return 'FAIL', ['no "# Expected:" block in the file']
    cwd = tempfile.mkdtemp(prefix='dfw-beam-example-')
    try:
        job_dir = os.path.join(cwd, 'job')
        try:
            proc = subprocess.run([dfworker, 'run', os.path.abspath(path), '--job_dir', job_dir], cwd=cwd,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            return 'FAIL', ['dfworker did not finish within %d s' % timeout]
        out = proc.stdout.decode('utf-8', 'replace') + proc.stderr.decode('utf-8', 'replace')
        if proc.returncode == 2:
            return 'REFUSED', [first_error_line(out)]
        if proc.returncode != 0:
            tail = [l for l in out.splitlines() if l.strip()][-3:]
            return 'FAIL', ['dfworker exit %d' % proc.returncode] + ['  ' + l for l in tail]
        return compare(expected, logged_rows(job_dir))
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('dir', help="folder of Beam YAML examples (e.g. Beam's "
                                "sdks/python/apache_beam/yaml/examples/transforms); every *.yaml below it is run")
    ap.add_argument('--dfworker', required=True, help='the dfworker binary')
    ap.add_argument('--timeout', type=int, default=120, help='seconds per pipeline (default 120)')
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.dir, '**', '*.yaml'), recursive=True))
    if not files:
        print('beam-examples: no *.yaml under %s' % args.dir, file=sys.stderr)
        return 2
    counts = collections.Counter()
    order_only = 0
    width = max(len(os.path.relpath(f, args.dir)) for f in files)
    for path in files:
        status, detail = run_one(args.dfworker, path, args.timeout)
        counts[status] += 1
        order_only += status == 'FAIL' and bool(detail) and detail[0].startswith('same rows')
        name = os.path.relpath(path, args.dir)
        print('%-7s %-*s %s' % (status, width, name, detail[0] if status == 'REFUSED' else ''))
        if status == 'FAIL':
            for line in detail:
                print('          ' + line)
        sys.stdout.flush()
    print('\n%d files: %d PASS, %d FAIL (%d of them only the field order), %d REFUSED'
          % (len(files), counts['PASS'], counts['FAIL'], order_only, counts['REFUSED']))
    return 0 if counts['PASS'] == len(files) else 1


if __name__ == '__main__':
    sys.exit(main())
