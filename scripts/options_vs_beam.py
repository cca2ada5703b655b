#!/usr/bin/env python3
"""Differential check of dfworker's option parsing against Apache Beam's own parser.

Generates random launch lines (Python and Java spellings, repeated flags, '=' and space forms,
commas inside and outside key=value values, whitespace and quotes inside values, YAML options:
blocks, unknown and abbreviated flags), parses each with apache_beam's PipelineOptions and with
`dfworker run FILE --dry_run --format=json`, and compares experiments, dataflow_service_options,
machine_type, number_of_worker_harness_threads, sdk_worker_parallelism, resource_hints, streaming,
sdk_container_image and the unknown flags. A disagreement is either one of the deliberate
differences documented in docs/options.md ("Differences from Beam Python", labels below) or a bug:
the script prints every undocumented one and exits 1 if there is any.

Usage: options_vs_beam.py DFWORKER [--lines N] [--seed S] [--verbose]
"""
import argparse
import json
import logging
import os
import random
import subprocess
import sys
import tempfile

logging.basicConfig(level=logging.ERROR)  # Beam warns on every unknown argument: that is the point here
from apache_beam.options import pipeline_options as po  # noqa: E402

FIELDS = ['experiments', 'dataflow_service_options', 'machine_type', 'number_of_worker_harness_threads',
          'sdk_worker_parallelism', 'resource_hints', 'streaming', 'sdk_container_image']

# Python spellings -> field; Java spellings -> field (Beam Python does not know the Java ones).
PYTHON = {
    'experiments': 'experiments', 'experiment': 'experiments',
    'dataflow_service_options': 'dataflow_service_options', 'dataflow_service_option': 'dataflow_service_options',
    'machine_type': 'machine_type', 'worker_machine_type': 'machine_type',
    'number_of_worker_harness_threads': 'number_of_worker_harness_threads',
    'sdk_worker_parallelism': 'sdk_worker_parallelism',
    'resource_hints': 'resource_hints', 'resource_hint': 'resource_hints',
    'sdk_container_image': 'sdk_container_image', 'worker_harness_container_image': 'sdk_container_image',
}
JAVA = {
    'dataflowServiceOptions': 'dataflow_service_options', 'workerMachineType': 'machine_type',
    'numberOfWorkerHarnessThreads': 'number_of_worker_harness_threads', 'sdkContainerImage': 'sdk_container_image',
    'resourceHints': 'resource_hints',
}

EXPERIMENTS = ['use_runner_v2', 'no_use_multiple_sdk_containers', 'enable_streaming_rightfitting',
               'max_num_accelerators=2', 'use_runner_v2,no_use_multiple_sdk_containers', 'a=b,c', 'a=b=c,d',
               ' use_runner_v2 , beam_fn_api', 'x,,y', 'k1=v1,k2=v2', 'master_key=k1=v1,k2=v2,z',
               'worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver,use_runner_v2', '=,a', ',',
               'a\u00a0,\u3000b', "'use_runner_v2", 'y="1,2",z', '\x1cq\x1f,r']
SERVICE = ['enable_prime', 'worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps',
           'enable_prime,worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps',
           'worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver:version=latest,enable_prime',
           'enable_hot_key_logging, max_workflow_runtime_walltime_seconds=3600',
           '"worker_accelerator=type:nvidia-l4;count:1"', "['worker_accelerator=type:nvidia-l4;count:1']",
           'whizz=bang', 'a,b', ' \tenable_prime\t', 'x=1=2,y=3', 'enable_prime"', 'k=v\u2003, enable_prime ,']
MACHINES = ['g2-standard-8', 'n1-standard-4', 'custom-1-13312-ext', 'a2-highgpu-1g', 'n2-custom-8-32768']
HINTS = ['min_ram=16GB', 'accelerator=type:nvidia-l4;count:1;install-nvidia-driver', 'min_ram=4GB,cpu_count=2']
IMAGES = ['gcr.io/p/img:1', 'us-docker.pkg.dev/p/r/img@sha256:abc']
UNKNOWN = [('my_arg', '1'), ('project_id', 'my-project'), ('input', 'gs://b/in.json'), ('output_table', 'p:d.t'),
           ('dataflow_service_opt', 'enable_prime'), ('experim', 'use_runner_v2'), ('no_use_public_ip', None),
           ('machine', 'g2-standard-8'), ('number_of_worker_harness_thread', '3'), ('streamin', None)]
KNOWN_OTHER = [('sdk_location', 'container'), ('job_name', 'j'), ('save_main_session', None),
               ('requirements_file', 'r.txt'), ('no_use_public_ips', None), ('num_workers', '2')]

MINIMAL_PIPELINE = ('pipeline:\n  type: chain\n  transforms:\n'
                    '    - {type: Create, config: {elements: [{a: 1}]}}\n    - {type: LogForTesting}\n')


def beam_parser():
    parser = po._BeamArgumentParser(allow_abbrev=False)
    seen = set()

    def walk(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from walk(sub)

    for cls in walk(po.PipelineOptions):
        if cls not in seen and '_add_argparse_args' in cls.__dict__:
            seen.add(cls)
            try:
                cls._add_argparse_args(parser)
            except argparse.ArgumentError:
                pass
    return parser


PARSER = beam_parser()


def beam_read(args, yaml_options):
    """What Beam reads: PipelineOptions(args, **options:) as apache_beam.yaml.main does."""
    opts = po.PipelineOptions(args, **yaml_options).get_all_options()
    _, unknown = PARSER.parse_known_args(args)
    out = {f: opts.get(f) for f in FIELDS}
    for f in ('experiments', 'dataflow_service_options', 'resource_hints'):
        out[f] = list(out[f] or [])
    out['streaming'] = bool(out['streaming'])
    out['worker_harness_container_image'] = opts.get('worker_harness_container_image')
    out['unknown_flags'] = [a[2:].split('=', 1)[0] for a in unknown if a.startswith('--')]
    return out


def flag(name, value, rng):
    if value is None:
        return ['--' + name]
    if rng.random() < 0.5 or value.startswith('-') or value == '':
        return ['--%s=%s' % (name, value)]
    return ['--' + name, value]


def generate(rng):
    """One launch line: (args, yaml options dict, yaml text, labels of what it contains)."""
    args, yaml_opts = [], {}
    java = rng.random() < 0.2
    for _ in range(rng.randint(1, 7)):
        kind = rng.random()
        if kind < 0.25:
            args += flag(rng.choice(['experiments', 'experiment']), rng.choice(EXPERIMENTS), rng)
        elif kind < 0.5:
            name = 'dataflowServiceOptions' if java and rng.random() < 0.5 else rng.choice(
                ['dataflow_service_options', 'dataflow_service_option'])
            args += flag(name, rng.choice(SERVICE), rng)
        elif kind < 0.6:
            name = 'workerMachineType' if java and rng.random() < 0.5 else rng.choice(['machine_type', 'worker_machine_type'])
            args += flag(name, rng.choice(MACHINES), rng)
        elif kind < 0.67:
            name = 'numberOfWorkerHarnessThreads' if java and rng.random() < 0.5 else 'number_of_worker_harness_threads'
            args += flag(name, str(rng.randint(1, 8)), rng)
        elif kind < 0.72:
            args += flag('sdk_worker_parallelism', str(rng.randint(0, 8)), rng)
        elif kind < 0.78:
            args += flag(rng.choice(['resource_hints', 'resource_hint']), rng.choice(HINTS), rng)
        elif kind < 0.82:
            args += ['--streaming']
        elif kind < 0.86:
            name = 'sdkContainerImage' if java and rng.random() < 0.5 else rng.choice(
                ['sdk_container_image'] * 3 + ['worker_harness_container_image'])
            args += flag(name, rng.choice(IMAGES), rng)
        elif kind < 0.94:
            args += flag(*rng.choice(UNKNOWN), rng)
        else:
            args += flag(*rng.choice(KNOWN_OTHER), rng)
    if rng.random() < 0.2:  # an options: block, as Beam YAML passes it: keyword arguments
        choices = [('experiments', [rng.choice(['use_runner_v2', 'a,b', 'x=1=2,y'])]),
                   ('dataflow_service_options', [rng.choice(SERVICE)]),
                   ('machine_type', rng.choice(MACHINES)),
                   ('number_of_worker_harness_threads', rng.randint(1, 4))]
        for key, value in rng.sample(choices, rng.randint(1, 3)):
            yaml_opts[key] = value
    return args, yaml_opts


def yaml_text(yaml_opts):
    if not yaml_opts:
        return MINIMAL_PIPELINE
    lines = ['options:']
    for key, value in yaml_opts.items():
        lines.append('  %s: %s' % (key, json.dumps(value)))  # JSON is YAML: quoting stays exact
    return '\n'.join(lines) + '\n' + MINIMAL_PIPELINE


def dfworker_read(binary, args, yaml_opts, tmp):
    path = os.path.join(tmp, 'p.yaml')
    with open(path, 'w') as f:
        f.write(yaml_text(yaml_opts))
    run = subprocess.run([binary, 'run', path, '--dry_run', '--format=json'] + args, capture_output=True, text=True)
    report = json.loads(run.stdout)
    return report['options'], report


SMART_SPLIT = po._CommaSeparatedListAction(option_strings=[], dest='x')._smart_split
LISTS = ('experiments', 'dataflow_service_options', 'resource_hints')


def documented_reading(args, yaml_opts):
    """The fields as docs/options.md says dfworker reads them where it deliberately differs from Beam
    Python: Java spellings read as Beam Java does (every comma splits; plain --experiments too once a
    Java spelling is on the line), and the options: block first, flags overriding scalars and
    appending to lists. Python spellings are split with Beam's own _smart_split."""
    names = [a[2:].split('=', 1)[0] for a in args if a.startswith('--')]
    java_line = any(n in JAVA for n in names)
    out = {f: [] for f in LISTS}
    for key, value in yaml_opts.items():
        out[key] = list(value) if isinstance(value, list) else value
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg[2:].partition('=')
        field = PYTHON.get(name) or JAVA.get(name)
        if name == 'worker_harness_container_image':
            field = 'harness_image'  # dfworker: the last of it and sdk_container_image wins
        if field and not eq and i + 1 < len(args) and not args[i + 1].startswith('--'):
            value = args[i + 1]
            i += 1
        i += 1
        if not field:
            continue
        if field in LISTS:
            if field == 'resource_hints' and name not in JAVA:
                items = [value]
            elif name in JAVA or (java_line and name == 'experiments'):
                items = [v for v in value.split(',') if v]
            else:
                items = SMART_SPLIT(value)
            out[field] = out[field] + items
        elif field in ('number_of_worker_harness_threads', 'sdk_worker_parallelism'):
            out[field] = int(value)
        else:
            out[field] = value
        if field in ('harness_image', 'sdk_container_image'):
            out['harness_image'] = value
    return out


def compare(args, yaml_opts, beam, dfw):
    """[(field, beam value, dfworker value, label or None)] for every field that differs."""
    names = [a[2:].split('=', 1)[0] for a in args if a.startswith('--')]
    java_fields = {JAVA[n] for n in names if n in JAVA}
    java_line = bool(java_fields)
    cli_fields = {PYTHON.get(n) or JAVA.get(n) for n in names} | ({'streaming'} if 'streaming' in names else set())
    documented = documented_reading(args, yaml_opts)
    out = []
    for f in FIELDS:
        b, d = beam[f], dfw[f]
        if b == d:
            continue
        label = None
        as_documented = f in documented and documented[f] == d  # dfworker does what the docs say
        if as_documented and (f in java_fields or (f == 'experiments' and java_line)):
            label = 'java-spelling'
        elif as_documented and f in yaml_opts and f in cli_fields:
            label = 'yaml-precedence'
        elif f == 'sdk_container_image' and d == documented.get('harness_image'):
            label = 'harness-image-alias'
        elif f == 'sdk_worker_parallelism' and dfw['sources'][f] == 'default' and b == 1:
            label = 'sdk-worker-parallelism-default'
        elif f == 'sdk_worker_parallelism' and isinstance(b, str) and d is not None and b == str(d):
            label = 'sdk-worker-parallelism-string'  # Beam declares no type=int for it
        out.append((f, b, d, label))
    b_unknown = [n for n in beam['unknown_flags'] if n not in JAVA]
    d_unknown = list(dfw['unknown_flags'])
    if b_unknown != d_unknown:
        out.append(('unknown_flags', beam['unknown_flags'], dfw['unknown_flags'], None))
    elif beam['unknown_flags'] != dfw['unknown_flags']:
        out.append(('unknown_flags', beam['unknown_flags'], dfw['unknown_flags'], 'java-spelling'))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('dfworker')
    ap.add_argument('--lines', type=int, default=400)
    ap.add_argument('--seed', type=int, default=16)
    ap.add_argument('--verbose', action='store_true')
    ap.add_argument('--beam-append', action='store_true',
                    help='self-check: make Beam read lists as Beam <= 2.66 did (plain append); the script must '
                         'then report undocumented differences')
    opts = ap.parse_args()
    if opts.beam_append:
        def append(self, parser, namespace, values, option_string=None):
            if getattr(namespace, self.dest, None) is None:
                setattr(namespace, self.dest, [])
            getattr(namespace, self.dest).append(values)
        po._CommaSeparatedListAction.__call__ = append
    rng = random.Random(opts.seed)
    counts = {'lines': 0, 'agree': 0, 'documented': {}, 'undocumented': 0, 'java': 0, 'yaml': 0, 'split': 0}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(opts.lines):
            args, yaml_opts = generate(rng)
            beam = beam_read(args, yaml_opts)
            dfw, report = dfworker_read(opts.dfworker, args, yaml_opts, tmp)
            counts['lines'] += 1
            counts['java'] += any(a[2:].split('=', 1)[0] in JAVA for a in args if a.startswith('--'))
            counts['yaml'] += bool(yaml_opts)
            counts['split'] += any(d['code'] == 'beam-version-split' for d in report['diagnostics'])
            diffs = compare(args, yaml_opts, beam, dfw)
            if not any(label is None for *_, label in diffs):
                counts['agree'] += 1
            counts['exact'] = counts.get('exact', 0) + (not diffs)
            for field, b, d, label in diffs:
                if label:
                    counts['documented'][label] = counts['documented'].get(label, 0) + 1
                else:
                    counts['undocumented'] += 1
                if not label or opts.verbose:
                    print('line %d %s: %s\n  options: %s\n  beam:     %r\n  dfworker: %r  [%s]' %
                          (i, field, args, yaml_opts, b, d, label or 'UNDOCUMENTED'))
    documented = ', '.join('%s %d' % kv for kv in sorted(counts['documented'].items())) or 'none'
    print('options-vs-beam: %d lines (%d with Java spellings, %d with an options: block, %d split differently '
          'by Beam <= 2.66); %d agree on every field but documented differences (%d on every field outright); '
          'documented differences: %s; undocumented: %d' %
          (counts['lines'], counts['java'], counts['yaml'], counts['split'], counts['agree'], counts.get('exact', 0),
           documented, counts['undocumented']))
    return 1 if counts['undocumented'] else 0


if __name__ == '__main__':
    sys.exit(main())
