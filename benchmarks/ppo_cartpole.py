"""PPO learning-speed benchmark on CartPole-v1 and Pendulum-v1, three seeds each.

CartPole-v1: env steps and wall seconds until the evaluation mean reaches 475, and collection
env steps per second. Pendulum-v1: the final evaluation return after 200k env steps.
Prints a table and writes ``benchmarks/results/ppo_cartpole.json``.

    .venv/bin/python benchmarks/ppo_cartpole.py [--seeds 0 1 2] [--only cartpole|pendulum]
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import tempfile
import time

import torch

from sparring.dizoo.classic_control.config.cartpole_ppo import config as cartpole_config
from sparring.dizoo.classic_control.config.pendulum_ppo import config as pendulum_config
from sparring.framework import serial_pipeline

from results_file import add_smoke, apply_smoke, merge_results, smoke_config



SMOKE = False  # --smoke: every run cut to a few hundred env steps


def run(config: dict, seed: int, workdir: str, full_budget: bool = False) -> dict:
    config = smoke_config(config) if SMOKE else copy.deepcopy(config)
    if full_budget:  # report the return after the whole budget, not the first one over stop_value
        config['env']['stop_value'] = None
    config['train'] = dict(config.get('train', {}), progress_bar=False, tensorboard=False)
    name = os.path.join(workdir, f'{config["env"]["type"]}_seed{seed}')
    summary = serial_pipeline(config, seed=seed, exp_name=name)
    return {k: summary[k] for k in ('env_steps', 'wall_seconds', 'eval_mean', 'eval_std', 'reached_stop_value',
                                    'stop_env_steps', 'stop_seconds', 'collect_steps_per_second')}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--only', choices=['cartpole', 'pendulum'], default=None)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, seeds=[0])
    global SMOKE
    SMOKE = args.smoke
    results = dict(machine=dict(cpus=os.cpu_count(), python=platform.python_version(), torch=torch.__version__),
                   started=time.strftime('%Y-%m-%d %H:%M:%S'))
    with tempfile.TemporaryDirectory() as workdir:
        if args.only in (None, 'cartpole'):
            runs = {seed: run(cartpole_config, seed, workdir) for seed in args.seeds}
            solved = [r for r in runs.values() if r['reached_stop_value']]
            results['cartpole'] = dict(
                per_seed=runs, solved_seeds=len(solved),
                median_seconds_to_475=statistics.median(r['stop_seconds'] for r in solved) if solved else None,
                median_env_steps_to_475=statistics.median(r['stop_env_steps'] for r in solved) if solved else None,
                median_collect_steps_per_second=statistics.median(r['collect_steps_per_second']
                                                                  for r in runs.values()))
            for seed, r in runs.items():
                print(f'CartPole-v1 seed {seed}: reached 475={r["reached_stop_value"]} '
                      f'steps={r["stop_env_steps"]} seconds={r["stop_seconds"] and round(r["stop_seconds"], 1)} '
                      f'collect sps={r["collect_steps_per_second"]:.0f}')
            print(f'CartPole-v1 median wall seconds to 475: {results["cartpole"]["median_seconds_to_475"]}')
        if args.only in (None, 'pendulum'):
            runs = {seed: run(pendulum_config, seed, workdir, full_budget=True) for seed in args.seeds}
            results['pendulum'] = dict(per_seed=runs,
                                       seeds_at_least_minus_250=sum(r['eval_mean'] >= -250 for r in runs.values()))
            for seed, r in runs.items():
                print(f'Pendulum-v1 seed {seed}: final eval {r["eval_mean"]:.1f} +- {r["eval_std"]:.1f} after '
                      f'{r["env_steps"]} steps, {r["wall_seconds"]:.0f} s')
    merge_results('ppo_cartpole', results)  # --only keeps the other env's last figures


if __name__ == '__main__':
    main()
