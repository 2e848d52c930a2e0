"""Shared by the benchmark scripts: merge a run's figures into ``benchmarks/results/<name>.json``."""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'results')


def cpu_model() -> str:
    """The CPU's model name as /proc/cpuinfo gives it (what a figure was measured on), else what Python knows."""
    try:
        with open('/proc/cpuinfo') as f:
            return next(line.split(':', 1)[1].strip() for line in f if line.startswith('model name'))
    except (OSError, StopIteration):
        return platform.processor() or 'unknown'


def stamp() -> dict:
    """What a record says about where and when its figures were measured: the commit of the checkout, the UTC
    date, the CPU model, the load average at the time and the command that ran."""
    try:
        commit = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=os.path.dirname(os.path.abspath(__file__)),
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return dict(commit=commit, date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
                cpu_model=cpu_model(), load_average=list(os.getloadavg()),
                command=' '.join([os.path.relpath(sys.argv[0])] + sys.argv[1:]))


def merge_results(name: str, results: dict) -> str:
    """Write ``results`` over the file's previous top-level entries (a partial run keeps the others' figures)."""
    path = os.path.join(RESULTS_DIR, f'{name}.json')
    os.makedirs(RESULTS_DIR, exist_ok=True)
    previous = {}
    if os.path.exists(path):
        with open(path) as f:
            previous = json.load(f)
    previous.update(results)
    with open(path, 'w') as f:
        json.dump(previous, f, indent=2)
    print(f'wrote {path}')
    return path


def print_exploitability_curve(curve: list, points: int) -> None:
    """About ``points`` evenly spaced entries of an exact-exploitability curve (seconds, env steps, meta, player)."""
    for c in curve[::max(1, len(curve) // points)]:
        print(f'    {c["seconds"]:7.1f} s {c["env_steps"]:>11,} steps  meta {c["meta_exploitability"]:.4f}  '
              f'player {c["player_exploitability"]:.4f}')
