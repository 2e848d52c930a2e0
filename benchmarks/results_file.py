"""Shared by the benchmark scripts: merge a run's figures into ``benchmarks/results/<name>.json``, stamped.

Every entry a script writes is stamped with what makes the figure checkable later: the commit it was measured
at (and whether the work tree had changes beside it), the date, the CPU model, the load average when it was
written and the command that produced it. The stamps live beside the entries, under ``"_stamps"``
(``{entry: stamp}``), so an entry keeps the shape its script gives it. The results page of the docs is
generated from these files, stamps included.

``SPARRING_RESULTS_DIR`` sends the files elsewhere: the benchmarks' ``--smoke`` runs (which CI makes) write
there, never over the committed records.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from typing import Optional

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'results')
REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPS = '_stamps'
STAMP_FIELDS = ('commit', 'date', 'cpu_model', 'load_average', 'command')
UNKNOWN = 'unknown'


def results_dir() -> str:
    """Where the records go: ``$SPARRING_RESULTS_DIR`` if set (a smoke run), else ``benchmarks/results``."""
    return os.environ.get('SPARRING_RESULTS_DIR') or RESULTS_DIR


def cpu_model() -> str:
    """The CPU's model name as /proc/cpuinfo gives it (what a figure was measured on), else what Python knows."""
    try:
        with open('/proc/cpuinfo') as f:
            return next(line.split(':', 1)[1].strip() for line in f if line.startswith('model name'))
    except (OSError, StopIteration):
        return platform.processor() or UNKNOWN


def current_commit() -> str:
    """The checkout's commit, with ``+changes`` when tracked files differ from it; ``unknown`` outside git."""
    try:
        head = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=REPO_DIR, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=REPO_DIR,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return head + ('+changes' if dirty else '')


def stamp(command: Optional[str] = None) -> dict:
    """The stamp of a figure written now: commit, date (UTC), CPU model, load average, command."""
    if command is None:
        command = ' '.join(shlex.quote(a) for a in [os.path.basename(sys.executable)] + sys.argv)
    return dict(commit=current_commit(),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
                cpu_model=cpu_model(), load_average=[round(x, 2) for x in os.getloadavg()], command=command)


def merge_results(name: str, results: dict, command: Optional[str] = None) -> str:
    """Write ``results`` over the file's previous top-level entries (a partial run keeps the others' figures),
    each entry written stamped (:func:`stamp`)."""
    folder = results_dir()
    path = os.path.join(folder, f'{name}.json')
    os.makedirs(folder, exist_ok=True)
    previous = {}
    if os.path.exists(path):
        with open(path) as f:
            previous = json.load(f)
    now = stamp(command)
    stamps = dict(previous.pop(STAMPS, {}))
    previous.update(results)
    stamps.update({key: now for key in results})
    previous[STAMPS] = stamps
    with open(path, 'w') as f:
        json.dump(previous, f, indent=2)
    print(f'wrote {path}')
    return path


def add_smoke(parser) -> None:
    """The ``--smoke`` option every benchmark script has: a run of seconds that checks the script still works."""
    parser.add_argument('--smoke', action='store_true',
                        help='a run of seconds that checks the script works: tiny budgets, its figures written to '
                             '$SPARRING_RESULTS_DIR or a temporary folder, never over benchmarks/results')


def apply_smoke(args, **small):
    """With ``--smoke``: ``small`` (argument name -> value) over the parsed arguments, and the records sent to a
    temporary folder unless ``$SPARRING_RESULTS_DIR`` names one. Returns ``args``."""
    if getattr(args, 'smoke', False):
        for name, value in small.items():
            if not hasattr(args, name):
                raise AttributeError(f'apply_smoke: the script has no argument {name!r}')
            setattr(args, name, value)
        if not os.environ.get('SPARRING_RESULTS_DIR'):
            import tempfile
            os.environ['SPARRING_RESULTS_DIR'] = tempfile.mkdtemp(prefix='sparring-smoke-')
    return args


def peer_missing(module: str, peer: str, how: str) -> bool:
    """Whether the peer library a side-by-side script compares with (``module``, e.g. ``stable_baselines3``) cannot
    be imported here; if so, one line says that the ``peer``'s side is skipped and ``how`` to install it. A smoke run
    then runs sparring's side alone, so CI (which installs no peer) still runs every script."""
    import importlib.util
    if importlib.util.find_spec(module) is not None:
        return False
    print(f"{peer}'s side skipped: {module} is not installed ({how})", flush=True)
    return True


def smoke_config(config: dict, env_steps: int = 256) -> dict:
    """A copy of a run's config cut to a smoke run: ``env_steps`` of training, two evaluation episodes."""
    import copy
    config = copy.deepcopy(config)
    config['train'] = dict(config.get('train', {}), max_env_steps=env_steps)
    config['env'] = dict(config.get('env', {}), evaluator_env_num=2, n_evaluator_episodes=2)
    return config


def smoke_run(config: dict, env_steps: int = 512) -> str:
    """A run trained for a smoke test of a script that reads one: ``config`` cut by :func:`smoke_config`, in a
    temporary folder; returns the run's directory."""
    import tempfile

    from sparring.framework import serial_pipeline
    config = smoke_config(config, env_steps)
    config['train'].update(progress_bar=False, tensorboard=False, eval_every_iters=0)
    run_dir = os.path.join(tempfile.mkdtemp(prefix='sparring-smoke-run-'), 'run')
    serial_pipeline(config, seed=0, exp_name=run_dir)
    return run_dir


def entries(record: dict) -> dict:
    """A record's entries, without the stamps."""
    return {key: value for key, value in record.items() if key != STAMPS}


def print_exploitability_curve(curve: list, points: int) -> None:
    """About ``points`` evenly spaced entries of an exact-exploitability curve (seconds, env steps, meta, player)."""
    for c in curve[::max(1, len(curve) // points)]:
        print(f'    {c["seconds"]:7.1f} s {c["env_steps"]:>11,} steps  meta {c["meta_exploitability"]:.4f}  '
              f'player {c["player_exploitability"]:.4f}')
