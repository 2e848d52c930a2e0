"""Env steps per wall-second of the serial connect-four league with its ready config, whole runs.

Variants (each a fresh process, the ready config ``dizoo/board_games/config/connect_four_league.py``
with only the named settings changed and a wall-time budget of ``--seconds``):

* ``ready``: the ready config as it is (evaluation beside training, ``train.eval_in_background``);
* ``inline``: the periodic evaluation played in the training process (the earlier default);
* ``no_eval``: no periodic evaluation at all (the ceiling evaluation can reach).

The figure is the run's env steps over its wall time (collection, updates, league bookkeeping and
evaluation included; the final evaluation after the budget is not counted). Writes
``benchmarks/results/league_speed.json`` with the load average at the start and end of each run.

``--against TREE`` checks a change for a slowdown instead: runs of one variant alternate between this checkout
and another one (e.g. ``git worktree add`` of the commit before; its ``.typecheck/sparring`` imports it),
``--repeats`` of each, and the record (entry ``against``) holds every run, the two medians and their ratio, per
wall-second and per CPU-second of the run's process (the figure other users' load on a shared machine moves least).

    .venv/bin/python benchmarks/league_speed.py [--seconds 90] [--only ready inline no_eval]
    .venv/bin/python benchmarks/league_speed.py --against ../before --only no_eval --seconds 30 --repeats 5
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from results_file import add_smoke, apply_smoke, merge_results

VARIANTS = dict(ready={}, inline=dict(eval_in_background=False), no_eval=dict(eval_every_iters=0))


def one_run(variant: str, seconds: float, workdir: str) -> dict:
    """Train the ready config for ``seconds`` with the variant's settings; the run's figures."""
    from sparring.dizoo.board_games.config.connect_four_league import config as ready
    from sparring.framework import serial_pipeline
    config = copy.deepcopy(ready)
    config['exp_name'] = os.path.join(workdir, variant)
    config['train'] = dict(config['train'], max_wall_seconds=seconds, progress_bar=False, tensorboard=False,
                           checkpoint_every_iters=0, **VARIANTS[variant])
    load_start = os.getloadavg()
    cpu_start = time.process_time()
    summary = serial_pipeline(config, seed=0)
    cpu_seconds = time.process_time() - cpu_start
    return dict(variant=variant, env_steps=summary['env_steps'], wall_seconds=round(summary['wall_seconds'], 2),
                env_steps_per_second=round(summary['env_steps'] / summary['wall_seconds'], 1),
                cpu_seconds=round(cpu_seconds, 2), env_steps_per_cpu_second=round(summary['env_steps'] / cpu_seconds, 1),
                rounds=summary['rounds'], evaluations=len(summary['history']), load_start=load_start,
                load_end=os.getloadavg())


HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_run(root: str, variant: str, seconds: float, workdir: str) -> dict:
    """One run of ``variant`` in a fresh process importing the checkout at ``root`` (measured by this script, so
    both sides of a comparison are measured alike)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(root, '.typecheck'))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), '--child', variant, str(seconds), workdir],
                         env=env, cwd=root, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def against(tree: str, variant: str, seconds: float, repeats: int) -> dict:
    """Runs alternating between this checkout and ``tree``; each one's env steps per wall-second and per CPU-second
    of the run's process (which other users' load on a shared machine barely moves), medians and their ratios."""
    roots = dict(this=HERE, against=os.path.abspath(tree))
    runs: dict = {name: [] for name in roots}
    cpu_runs: dict = {name: [] for name in roots}
    for i in range(repeats):
        for name, root in roots.items():
            with tempfile.TemporaryDirectory() as workdir:
                run = child_run(root, variant, seconds, workdir)
            runs[name].append(run['env_steps_per_second'])
            cpu_runs[name].append(run['env_steps_per_cpu_second'])
            print(f'{i} {name:8s} {run["env_steps_per_second"]:8.0f} env steps/s, {run["env_steps_per_cpu_second"]:8.0f} '
                  f'per CPU-second  (load {run["load_end"][0]:.2f})')
    medians = {name: statistics.median(values) for name, values in runs.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu_runs.items()}
    ratio = medians['this'] / medians['against']
    cpu_ratio = cpu_medians['this'] / cpu_medians['against']
    print(f'medians: this {medians["this"]:.0f}, against {medians["against"]:.0f} env steps/s: ratio {ratio:.3f}; '
          f'per CPU-second this {cpu_medians["this"]:.0f}, against {cpu_medians["against"]:.0f}: ratio {cpu_ratio:.3f}')
    return dict(variant=variant, seconds=seconds, repeats=repeats, against=tree, env_steps_per_second=runs,
                median=medians, ratio=round(ratio, 4), env_steps_per_cpu_second=cpu_runs, cpu_median=cpu_medians,
                cpu_ratio=round(cpu_ratio, 4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seconds', type=float, default=90.0)
    parser.add_argument('--only', nargs='+', choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument('--against', metavar='TREE', help='another checkout: alternate runs with it (see above)')
    parser.add_argument('--repeats', type=int, default=5, help='--against: runs of each checkout')
    parser.add_argument('--child', nargs=3, metavar=('VARIANT', 'SECONDS', 'WORKDIR'), help=argparse.SUPPRESS)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, seconds=3.0, only=['ready'])
    if args.child:
        variant, seconds, workdir = args.child
        print(json.dumps(one_run(variant, float(seconds), workdir)))
        return
    if args.against:
        merge_results('league_speed', dict(against=against(args.against, args.only[0], args.seconds, args.repeats)))
        return
    results = dict(machine=platform.machine(), cpus=os.cpu_count(), seconds=args.seconds,
                   load_at_start=os.getloadavg(), runs={})
    print(f'load average at start: {results["load_at_start"]}')
    with tempfile.TemporaryDirectory() as workdir:
        for variant in args.only:
            out = subprocess.run([sys.executable, __file__, '--child', variant, str(args.seconds), workdir],
                                 check=True, capture_output=True, text=True).stdout
            run = json.loads(out.strip().splitlines()[-1])
            results['runs'][variant] = run
            print(f'{variant:8s} {run["env_steps_per_second"]:8.0f} env steps/s  ({run["env_steps"]} steps, '
                  f'{run["rounds"]} rounds, {run["evaluations"]} periodic evaluations, load {run["load_end"][0]:.2f})')
    ready = results['runs'].get('ready')
    if ready:
        results['target_5k_met'] = ready['env_steps_per_second'] >= 5000
    merge_results('league_speed', results)


if __name__ == '__main__':
    main()
