"""How long the command line and ``load_player`` take to start, each in a fresh Python process.

* ``version`` and ``help``: ``python -m sparring --version`` / ``--help`` (target: under 0.5 s); neither
  imports torch;
* ``load_player``: ``import sparring; sparring.load_player(RUN)`` of a small tic-tac-toe league trained
  first in a temporary folder (target: under 2 s); building an optimiser would import torch's compiler,
  so a policy loaded to act builds none.

Each figure is the median wall time of ``--repeats`` processes (the first, which warms the file cache,
is not counted). The record goes to ``benchmarks/results/startup.json``, stamped (commit, date, CPU model,
load and command) with the load average at the start beside it; ``--smoke`` runs each once on a shorter
training and records in a temporary folder.

    flock /tmp/bench.lock .venv/bin/python benchmarks/startup.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import List

from results_file import add_smoke, apply_smoke, merge_results

TARGETS = dict(version=0.5, help=0.5, load_player=2.0)  # seconds


def small_run(exp_dir: str, env_steps: int) -> None:
    """A small tic-tac-toe league trained into ``exp_dir`` in its own process, quietly."""
    config = dict(
        exp_name=exp_dir, seed=0,
        env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4),
        policy=dict(type='ppo', model=dict(hidden_sizes=[32]), collect=dict(n_steps=8),
                    learn=dict(epochs=1, num_minibatches=1)),
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=4))),
        train=dict(max_env_steps=env_steps, eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False,
                   tensorboard=False))
    code = f'from sparring.framework import serial_pipeline; serial_pipeline({config!r})'
    subprocess.run([sys.executable, '-c', code], check=True, stdout=subprocess.DEVNULL)


def timed(argv: List[str], repeats: int) -> float:
    """The median wall seconds of ``repeats`` runs of ``argv`` after one uncounted run."""
    seconds = []
    for i in range(repeats + 1):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        if i:
            seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=5, help='processes timed per figure (default 5)')
    add_smoke(parser)
    args = apply_smoke(parser.parse_args(), repeats=1)
    load_at_start = [round(x, 2) for x in os.getloadavg()]  # the stamp has the load at the end
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, 'run')
        small_run(run, 64 if args.smoke else 256)
        figures = dict(
            version=timed([python, '-m', 'sparring', '--version'], args.repeats),
            help=timed([python, '-m', 'sparring', '--help'], args.repeats),
            load_player=timed([python, '-c', f'import sparring; sparring.load_player({run!r})'], args.repeats))
    for name, seconds in figures.items():
        verdict = 'ok' if seconds < TARGETS[name] else 'over target'
        print(f'{name:12s} {seconds:6.3f} s  (target < {TARGETS[name]} s: {verdict})')
    merge_results('startup', dict(startup=dict(seconds={k: round(v, 3) for k, v in figures.items()}, targets=TARGETS,
                                               repeats=args.repeats, load_average_at_start=load_at_start)))


if __name__ == '__main__':
    main()
