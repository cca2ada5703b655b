#!/usr/bin/env python3
"""Start-up of `dfworker run`, two binaries side by side: the time from exec to the first commit in
the job's manifest (the launcher's launch check, plan and job dir, the run's services, the SDK
processes' start and model loads, one bundle) and to the end of the run.

Alternating rounds (A, B, A, B, ...) so that drift on the machine falls on both; prints each
round, the medians and the ratio B/A.

  python3 scripts/bench_startup.py --a OLD/dfworker --b build/src/cli/dfworker [--rounds 9] \
      [-- extra run flags]

Run from the repository root (the default pipeline's paths are relative to it). The default
pipeline and flags are those of scripts/run-default.sh: pipelines/default.yaml, an NVIDIA L4 with
MPS on a g2-standard-8 (emulated without a GPU).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT_FLAGS = [
    "--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps",
    "--machine_type=g2-standard-8",
]


def one_run(binary, pipeline, flags, root):
    job = os.path.join(root, "job")
    shutil.rmtree(job, ignore_errors=True)
    out = os.path.join("out", "default")
    shutil.rmtree(out, ignore_errors=True)
    manifest = os.path.join(job, "manifest.jsonl")
    start = time.perf_counter()
    proc = subprocess.Popen([binary, "run", pipeline, "--job_dir", job] + flags,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = None
    while proc.poll() is None:
        if first is None:
            try:
                if os.path.getsize(manifest) > 0:
                    first = time.perf_counter() - start
            except OSError:
                pass
        time.sleep(0.002)
    total = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"{binary} exited {proc.returncode}:\n{err}")
    if first is None:  # committed and finished between two polls
        first = total
    return first, total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="baseline dfworker binary")
    ap.add_argument("--b", required=True, help="dfworker binary to compare")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--pipeline", default="pipelines/default.yaml")
    ap.add_argument("flags", nargs="*", help="run flags (default: L4 + MPS on g2-standard-8)")
    args = ap.parse_args()
    flags = args.flags or DEFAULT_FLAGS
    root = tempfile.mkdtemp(prefix="dfw-startup-")
    try:
        one_run(args.a, args.pipeline, flags, root)  # warm the page cache for both
        one_run(args.b, args.pipeline, flags, root)
        results = {"a": [], "b": []}
        for r in range(args.rounds):
            for name, binary in (("a", args.a), ("b", args.b)) if r % 2 == 0 else (("b", args.b), ("a", args.a)):
                first, total = one_run(binary, args.pipeline, flags, root)
                results[name].append((first, total))
                print(f"round {r + 1} {name}: first commit {first * 1000:7.1f} ms, run {total * 1000:7.1f} ms", flush=True)
        med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in results.items()}
        print(f"median a ({args.a}): first commit {med['a'][0] * 1000:.1f} ms, run {med['a'][1] * 1000:.1f} ms")
        print(f"median b ({args.b}): first commit {med['b'][0] * 1000:.1f} ms, run {med['b'][1] * 1000:.1f} ms")
        print(f"b/a: first commit {med['b'][0] / med['a'][0]:.3f}, run {med['b'][1] / med['a'][1]:.3f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
