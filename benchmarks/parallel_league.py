"""Parallel against serial league training on connect four: strength after the same env-step budget, and throughput.

Both modes run the ready config ``dizoo/board_games/config/connect_four_league.py`` with the same
seed and env-step budget; the parallel run has a commander, 2 collectors, 1 learner per active
player and 1 evaluator. Periodic evaluation is off in both (it would cost the two modes
differently); the final evaluation plays 400 games against each bot with sampled actions, which
measures strength more finely than greedy play against a near-deterministic bot. Reported: win /
draw / loss against the heuristic and random bots, wall seconds and env steps per second (start-up
and the final evaluation included), and the parallel run's data-quality figures. Prints a table and
writes ``benchmarks/results/parallel_league.json``.

    .venv/bin/python benchmarks/parallel_league.py [--env-steps 600000] [--seeds 0 1 2] [--only serial|parallel]

Runs of earlier invocations (other seeds) stay in the JSON, and the summary averages over all of them.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import tempfile
import time

import torch

from results_file import RESULTS_DIR, add_smoke, apply_smoke, merge_results
from sparring.dizoo.board_games.config.connect_four_league import config as league_config
from sparring.framework import parallel_pipeline, serial_pipeline

RESULT = os.path.join(RESULTS_DIR, 'parallel_league.json')


def bench_config(env_steps: int) -> dict:
    config = copy.deepcopy(league_config)
    config['env'] = dict(config['env'], n_evaluator_episodes=400)
    config['battle'] = dict(config['battle'], eval_deterministic=False)
    config['train'] = dict(config['train'], max_env_steps=env_steps, max_wall_seconds=0.0, eval_every_iters=0,
                           progress_bar=False, tensorboard=False)
    config['parallel'] = dict(collectors=2, evaluators=1)
    return config


def run(mode: str, seed: int, env_steps: int, workdir: str) -> dict:
    pipeline = parallel_pipeline if mode == 'parallel' else serial_pipeline
    started = time.perf_counter()
    summary = pipeline(bench_config(env_steps), seed=seed, exp_name=os.path.join(workdir, f'{mode}_seed{seed}'))
    seconds = time.perf_counter() - started
    per_player = next(iter(summary['eval'].values()))
    heuristic = next(oid for oid in per_player if 'heuristic' in oid)
    out = dict(env_steps=summary['env_steps'], wall_seconds=round(seconds, 1),
               env_steps_per_second=round(summary['env_steps'] / seconds, 1),
               vs_heuristic=per_player[heuristic], vs_random=per_player['random'], eval=per_player)
    if mode == 'parallel':
        learners = {wid: s for wid, s in summary['worker_stats'].items() if wid.startswith('learner')}
        out.update(train_iterations=summary['train_iterations'], restarts=summary['restarts'],
                   learners={wid: {k: s.get(k) for k in ('chunks_received', 'dropped_stale', 'sample_reuse',
                                                           'staleness', 'wait_seconds')} for wid, s in learners.items()})
    else:
        out.update(rounds=summary['rounds'])
    return out


def summarise(runs: dict) -> dict:
    """Per mode: the seeds run, the win rate against the heuristic bot per seed and its mean, the mean env steps/s."""
    out = {}
    for mode in ('serial', 'parallel'):
        mine = {int(key.rsplit('seed', 1)[1]): r for key, r in runs.items() if key.startswith(mode + '_')}
        if not mine:
            continue
        seeds = sorted(mine)
        wins = [mine[s]['vs_heuristic']['win'] for s in seeds]
        out[mode] = dict(seeds=seeds, win_vs_heuristic=wins, win_vs_heuristic_mean=sum(wins) / len(wins),
                         env_steps_per_second_mean=sum(mine[s]['env_steps_per_second'] for s in seeds) / len(seeds))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--env-steps', type=int, default=600_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument('--only', choices=['serial', 'parallel'], default=None)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, env_steps=2048, seeds=[0])
    torch.set_num_threads(1)
    modes = [args.only] if args.only else ['serial', 'parallel']
    results = dict(machine=dict(cpus=os.cpu_count(), python=platform.python_version(), torch=torch.__version__,
                                load_average_at_start=os.getloadavg()),
                   started=time.strftime('%Y-%m-%d %H:%M:%S'), env_steps=args.env_steps, runs={})
    with tempfile.TemporaryDirectory() as workdir:
        for seed in args.seeds:
            for mode in modes:
                r = run(mode, seed, args.env_steps, workdir)
                results['runs'][f'{mode}_seed{seed}'] = r
                h = r['vs_heuristic']
                print(f'{mode:8s} seed {seed}: {r["env_steps"]} env steps in {r["wall_seconds"]:.0f} s '
                      f'({r["env_steps_per_second"]:.0f}/s); vs heuristic win {h["win"]:.1%} draw {h["draw"]:.1%} '
                      f'loss {h["loss"]:.1%}; vs random win {r["vs_random"]["win"]:.1%}', flush=True)
    results['load_average_at_end'] = os.getloadavg()
    previous = {}
    if os.path.exists(RESULT):
        with open(RESULT) as f:
            previous = json.load(f)
    # Runs of other seeds or modes from earlier invocations are kept; the summary covers them all.
    results['runs'] = dict(previous.get('runs', {}), **results['runs'])
    results['summary'] = summarise(results['runs'])
    for mode, s in results['summary'].items():
        print(f'{mode:8s} over seeds {s["seeds"]}: vs heuristic win {s["win_vs_heuristic_mean"]:.1%} '
              f'(per seed {", ".join(f"{w:.1%}" for w in s["win_vs_heuristic"])}), '
              f'{s["env_steps_per_second_mean"]:.0f} env steps/s')
    merge_results('parallel_league', results)


if __name__ == '__main__':
    main()
